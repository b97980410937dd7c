/** Display formats: numbers carry units, times are the browser's and name their zone. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

export const formatCount = (value: number | null | undefined) => (value == null ? '—' : integer.format(value));

export const formatNumber = (value: number | null | undefined) => (value == null ? '—' : decimal.format(value));

export const formatPercent = (ratio: number | null | undefined) => (ratio == null ? '—' : `${decimal.format(ratio * 100)} %`);

/** A duration in milliseconds, in the largest unit that keeps it readable: 840 µs, 12.5 ms, 3.2 s, 4 min. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || Number.isNaN(ms)) return '—';
  if (ms < 1) return `${decimal.format(ms * 1000)} µs`;
  if (ms < 1000) return `${decimal.format(ms)} ms`;
  if (ms < 60_000) return `${decimal.format(ms / 1000)} s`;
  if (ms < 3_600_000) return `${decimal.format(ms / 60_000)} min`;
  return `${decimal.format(ms / 3_600_000)} h`;
}

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes == null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${decimal.format(value)} ${units[unit]}`;
}

/** The browser's time zone, e.g. "Europe/Berlin". */
export const timeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

const dateTime = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** A time in the browser's zone; `withTime` alone when the day is obvious. */
export function formatTime(value: string | number | Date | null | undefined, style: 'full' | 'time' = 'full'): string {
  if (value == null) return '—';
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return '—';
  return (style === 'time' ? timeOnly : dateTime).format(date);
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** "3 minutes ago": for first/last seen, with the exact time in a title beside it. */
export function formatAgo(value: string | number | Date | null | undefined, now = Date.now()): string {
  if (value == null) return '—';
  const seconds = Math.round((new Date(value).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, 'second');
  if (abs < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86_400), 'day');
}
