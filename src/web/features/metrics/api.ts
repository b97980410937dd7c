import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, read, type AnswerOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type MetricName = AnswerOf<'/v1/metrics/names'>['data'][number];
export type MetricSeries = AnswerOf<'/v1/metrics/series'>;
export type Aggregation = NonNullable<QueryOf<'/v1/metrics/series'>['aggregation']>;
export type Anomaly = AnswerOf<'/v1/anomalies'>['data'][number];
export type AnomalyFilters = Pick<QueryOf<'/v1/anomalies'>, 'service' | 'metric' | 'status' | 'cursor'>;

/** The metric names reported in the window (the first 200, alphabetically); asked again while there are none yet. */
export const useMetricNames = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['metrics', 'names', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/metrics/names', { params: { query: { ...windowBounds(window), limit: 200, ...(project && { project }) } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.data.length ? false : 5_000),
  });

export interface SeriesRequest {
  project: string | undefined;
  window: TimeWindow;
  name: string | undefined;
  /** One line per service; none: one line of every service combined. */
  services: string[];
  /** `key:value` filters applied to every line. */
  attributes: string[];
  aggregation: Aggregation | undefined;
  step: number | undefined;
}

/**
 * One series answer per line, all read over the same bounds so that their steps line up on one time axis
 * (a preset window resolved once per fetch, not once per line).
 */
export const useMetricSeries = (request: SeriesRequest) =>
  useQuery({
    queryKey: ['metrics', 'series', request],
    enabled: Boolean(request.name),
    placeholderData: keepPreviousData,
    queryFn: ({ signal }) => {
      const { project, window, name, services, attributes, aggregation, step } = request;
      const shared = { ...windowBounds(window), name: name!, ...(project && { project }), ...(attributes.length && { attribute: attributes }), ...(aggregation && { aggregation }), ...(step && { step }) };
      const lines = services.length ? services : [undefined];
      return Promise.all(
        lines.map(async (service) => ({
          service,
          answer: await read(api().GET('/v1/metrics/series', { params: { query: { ...shared, ...(service && { service }) } }, signal })),
        })),
      );
    },
  });

/** Anomalies overlapping the window, newest first, narrowed by the URL's filters. */
export const useAnomalies = (project: string | undefined, window: TimeWindow, filters: AnomalyFilters) =>
  useQuery({
    queryKey: ['anomalies', project, window, filters],
    queryFn: ({ signal }) => read(api().GET('/v1/anomalies', { params: { query: { ...windowBounds(window), limit: 20, ...(project && { project }), ...filters } }, signal })),
    placeholderData: keepPreviousData,
    // the detector runs once a minute
    refetchInterval: 30_000,
  });

/**
 * Requests and errors per service of one project in 5-minute steps over [from, to): the detector's own
 * windows when `from` is an anomaly's start minus whole windows.
 */
export const useServiceTraffic = (project: string, from: string, to: string) =>
  useQuery({
    queryKey: ['traffic', project, from, to, 300],
    queryFn: ({ signal }) => read(api().GET('/v1/traffic', { params: { query: { project, from, to, step: 300 } }, signal })),
    staleTime: 60_000,
  });
