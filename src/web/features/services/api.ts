import { useCallback } from 'react';
import { useQueries, useQuery, type UseQueryResult } from '@tanstack/react-query';
import { api, read, type AnswerOf } from '../../api/client';
import { trafficQuery, windowBounds, type TimeWindow } from '../../lib/url-state';

export type Service = AnswerOf<'/v1/services'>['data'][number];
export type ServiceMap = AnswerOf<'/v1/services/map'>;
export type MapNode = ServiceMap['nodes'][number];
export type MapEdge = ServiceMap['edges'][number];
export type ServiceStructure = AnswerOf<'/v1/services/structure'>;
export type Dependency = AnswerOf<'/v1/services/dependencies'>['data'][number];
export type Approaching = AnswerOf<'/v1/services/approaching'>['data'][number];

/** Every service that served requests in the window, with its health and the reasons for it. */
export const useServices = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['services', 'list', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/services', { params: { query: { project, ...windowBounds(window) } }, signal })),
  });

export const useServiceMap = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['services', 'map', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/services/map', { params: { query: { project, ...windowBounds(window) } }, signal })),
  });

/** The map's structure (cycles, single points of failure, longest chain), read only when it is shown. */
export const useServiceStructure = (project: string | undefined, window: TimeWindow, enabled: boolean) =>
  useQuery({
    queryKey: ['services', 'structure', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/services/structure', { params: { query: { project, ...windowBounds(window) } }, signal })),
    enabled,
  });

export const useServiceDependencies = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['services', 'dependencies', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/services/dependencies', { params: { query: { project, ...windowBounds(window) } }, signal })),
  });

/**
 * A service's requests and errors over time: the API splits by service only within one project, so a
 * service seen in several projects is read once per project and its steps summed.
 */
export function useServiceTraffic(service: string, projectIds: readonly string[], window: TimeWindow) {
  // a stable combine keeps its answer (and so the chart) the same object until a read finishes
  const combine = useCallback(
    (answers: UseQueryResult<AnswerOf<'/v1/traffic'>>[]) => {
      const error = answers.find((answer) => answer.isError)?.error;
      if (error || !answers.every((answer) => answer.data)) return { error, data: undefined };
      const series = answers.flatMap((answer) => answer.data!.series.filter((entry) => entry.service === service));
      const times = (series[0]?.points ?? []).map((point) => Date.parse(point.t));
      const sum = (pick: 'requests' | 'errors') => times.map((_, index) => series.reduce((total, entry) => total + (entry.points[index]?.[pick] ?? 0), 0));
      return { error, data: { times, stepSeconds: answers[0]?.data?.step ?? 60, requests: sum('requests'), errors: sum('errors') } };
    },
    [service],
  );
  return useQueries({
    queries: projectIds.map((project) => ({
      queryKey: ['traffic', project, window],
      queryFn: ({ signal }: { signal: AbortSignal }) => read(api().GET('/v1/traffic', { params: { query: { project, ...trafficQuery(window) } }, signal })),
    })),
    combine,
  });
}

export const useApproaching = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['services', 'approaching', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/services/approaching', { params: { query: { project, ...windowBounds(window) } }, signal })),
  });

export const useEndpointSurges = (project: string | undefined, service: string, window: TimeWindow) =>
  useQuery({
    queryKey: ['endpoints', 'surges', project, service, window],
    queryFn: ({ signal }) => read(api().GET('/v1/endpoints/surges', { params: { query: { project, service, ...windowBounds(window) } }, signal })),
  });

export const servicePath = (name: string, search = '') => `/services/${encodeURIComponent(name)}${search}`;
