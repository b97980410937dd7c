/**
 * Time as equality buckets. FerretDB hands PostgreSQL equality only, so documents that views
 * narrow by time carry the hour they fall in (`hour`), and a window is read an hour at a time;
 * rollups are kept per minute (`at`, the minute's start).
 */
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The start of the minute a time falls in, in epoch milliseconds. */
export const minuteOf = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** Hours since the epoch. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS);
