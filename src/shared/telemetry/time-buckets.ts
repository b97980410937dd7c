/**
 * Time as equality buckets. FerretDB hands PostgreSQL equality only, so documents that views
 * narrow by time carry the bucket they fall in: raw spans' traces and logs their minute
 * (`minute`), rollups (kept per minute, `at` being the minute's start) their hour (`hour`); a
 * window is read a bucket at a time.
 */
export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;

/** The start of the minute a time falls in, in epoch milliseconds. */
export const minuteOf = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** Minutes since the epoch. */
export const epochMinuteOf = (ms: number) => Math.floor(ms / MINUTE_MS);

/** Hours since the epoch. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS);
