import type { CodeHosts } from '../shared/clients/code-hosts.js';
import type { Mailer } from '../shared/clients/mailer.js';
import type { Outbound } from '../shared/clients/outbound.js';
import type { SecretBox } from '../shared/clients/secret-box.js';
import type { Config } from '../shared/config.js';
import type { RateLimits } from './middleware/rate-limit.js';

/** What route modules may use besides the feature services. */
export interface ApiDeps {
  config: Config;
  limits: RateLimits;
  /** The API refuses forbidden targets at creation with its URL check; it makes requests only for a test alert a person asked for. */
  outbound: Outbound;
  codeHosts: CodeHosts;
  /** Seals credentials kept at rest (code-host tokens, destination URLs and secrets). */
  secrets: SecretBox;
  /** Every mail the API sends (confirmation links, invites, password resets), within each organisation's budget; unset without SMTP_URL. */
  mailer: Mailer | undefined;
}
