import { z } from 'zod';

/**
 * URLs the service answers as links (deployments, feedback, monitors, identity providers) are http(s)
 * only: a `javascript:` or `data:` URL stored by one member would run in another's dashboard.
 */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048);

/** Whether a URL's `hostname` names this machine: localhost, [::1] or any 127.x.y.z. */
export const isLoopbackHost = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/** The value when it is an http(s) URL, else undefined: for URLs that arrive inside telemetry, which is kept, not refused. */
export function httpLinkOrUndefined(value: string | undefined): string | undefined {
  return value !== undefined && httpUrl.safeParse(value).success ? value : undefined;
}
