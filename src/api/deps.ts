import type { Outbound } from '../shared/clients/outbound.js';
import type { Config } from '../shared/config.js';
import type { RateLimits } from './middleware/rate-limit.js';

/** What route modules may use besides the feature services. */
export interface ApiDeps {
  config: Config;
  limits: RateLimits;
  /** Only its URL check: the API refuses forbidden targets at creation; workers make the requests. */
  outbound: Pick<Outbound, 'urlProblem'>;
}
