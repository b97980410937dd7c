import type { Config } from '../shared/config.js';
import type { RateLimits } from './middleware/rate-limit.js';

/** What route modules may use besides the feature services. */
export interface ApiDeps {
  config: Config;
  limits: RateLimits;
}
