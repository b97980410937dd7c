import { z } from 'zod';

/**
 * URLs the service answers as links (deployments, feedback, monitors, identity providers) are http(s)
 * only: a `javascript:` or `data:` URL stored by one member would run in another's dashboard.
 */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048);

/** The value when it is an http(s) URL, else undefined: for URLs that arrive inside telemetry, which is kept, not refused. */
export function httpLinkOrUndefined(value: string | undefined): string | undefined {
  return value !== undefined && httpUrl.safeParse(value).success ? value : undefined;
}
