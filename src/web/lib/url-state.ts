import { useCallback, useMemo } from 'react';
import { useLocation, useSearchParams } from 'react-router';

/**
 * The URL is the state of every view: filters, range, project and selection are query parameters named as
 * the API's own, so a view can be bookmarked and shared and the back button steps through it.
 */
export function useQueryParams() {
  const [params, setParams] = useSearchParams();
  const update = useCallback(
    (patch: Record<string, string | string[] | undefined | null>, options: { replace?: boolean } = {}) => {
      setParams(
        (current) => {
          const next = new URLSearchParams(current);
          for (const [key, value] of Object.entries(patch)) {
            next.delete(key);
            if (Array.isArray(value)) for (const item of value) next.append(key, item);
            else if (value != null && value !== '') next.set(key, value);
          }
          // a changed filter starts paging over
          if (!('cursor' in patch)) next.delete('cursor');
          return next;
        },
        { replace: options.replace ?? false },
      );
    },
    [setParams],
  );
  const get = useCallback((key: string) => params.get(key) ?? undefined, [params]);
  return { params, get, update };
}

export const PRESET_RANGES = [
  { value: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
] as const;

export type TimeWindow = { kind: 'preset'; range: string; ms: number } | { kind: 'custom'; from: string; to: string };

const MINUTE_MS = 60_000;

/**
 * The window's bounds at the moment of a request: a preset ends now and starts on the whole minute (so the
 * API answers a series of whole-minute steps from its minute rollups); a custom window is fixed.
 */
export function windowBounds(window: TimeWindow, now = Date.now()): { from: string; to: string } {
  if (window.kind === 'custom') return { from: window.from, to: window.to };
  return { from: new Date(Math.floor((now - window.ms) / MINUTE_MS) * MINUTE_MS).toISOString(), to: new Date(now).toISOString() };
}

/** `?range=15m|1h|24h|7d` (24 h by default), or `?from=…&to=…` (ISO-8601) for a custom window. */
export function useTimeWindow(): TimeWindow {
  const { get } = useQueryParams();
  const from = get('from');
  const to = get('to');
  const range = get('range');
  return useMemo(() => {
    if (from && to && !Number.isNaN(Date.parse(from)) && !Number.isNaN(Date.parse(to))) return { kind: 'custom', from, to };
    const preset = PRESET_RANGES.find((candidate) => candidate.value === range) ?? PRESET_RANGES[2];
    return { kind: 'preset', range: preset.value, ms: preset.ms };
  }, [from, to, range]);
}

/** The project (`?project=`) and environment (`?environment=`) the views are narrowed to; undefined: all. */
export function useScope() {
  const { get } = useQueryParams();
  return { project: get('project'), environment: get('environment') };
}

/** What stays chosen when a person moves between views: the project, the window and the environment. */
export const SCOPE_PARAMETERS = ['project', 'range', 'from', 'to', 'environment'];

/** The current URL's scope parameters (plus `extra` ones) as a `?…` suffix for links, or '' when none is set. */
export function useCarriedSearch(extra: readonly string[] = []): string {
  const { search } = useLocation();
  const kept = [...SCOPE_PARAMETERS, ...extra];
  const carried = new URLSearchParams([...new URLSearchParams(search)].filter(([key]) => kept.includes(key)));
  return carried.size ? `?${carried}` : '';
}

const HOUR_MS = 3_600_000;

/**
 * A traffic chart's window and step: over half a day or more, one point per hour from the window's first
 * whole hour, so the API answers from its hourly rollups instead of every minute's; shorter windows keep
 * the API's own step.
 */
export function trafficQuery(window: TimeWindow, now = Date.now()): { from: string; to: string; step?: number } {
  const { from, to } = windowBounds(window, now);
  const start = Date.parse(from);
  if (Date.parse(to) - start < 12 * HOUR_MS) return { from, to };
  return { from: new Date(Math.ceil(start / HOUR_MS) * HOUR_MS).toISOString(), to, step: 3600 };
}
