import { z } from 'zod';
import { parseAllowlist } from './clients/outbound.js';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const optionalUrl = z.url().optional().or(z.literal('').transform(() => undefined));
const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL');
const optionalText = z.string().optional().transform((value) => value || undefined);
const flag = z.enum(['true', 'false', '1', '0'], 'must be true, false, 1 or 0').transform((value) => value === 'true' || value === '1');

export const localStoreChoices = ['auto', 'postgresql', 'sqlite'] as const;
export type LocalStoreChoice = (typeof localStoreChoices)[number];

const schema = z.object({
  ROLE: z.enum(['all', 'api', 'ingest', 'workers']).default('all'),
  HOST: z.string().default('0.0.0.0'),
  PORT: port.default(8080),
  INGEST_PORT: port.default(8081),
  /** Unset: the local MongoDB-compatible server is started under DATA_DIR. */
  MONGO_URL: optionalUrl,
  /** Unset: the local Redis is reused or started. */
  REDIS_URL: optionalUrl,
  DATA_DIR: z.string().default('.data'),
  /**
   * Which local store to start when MONGO_URL is unset: `auto` prefers FerretDB on PostgreSQL (the one
   * at LOCAL_POSTGRES_URL when it answers, else a cluster of our own), then a local MongoDB, then
   * FerretDB on SQLite.
   */
  LOCAL_STORE: z.enum(localStoreChoices).default('auto'),
  /**
   * A PostgreSQL role that may create the `sluice` database, for FerretDB's PostgreSQL backend; `own`
   * skips it and runs a cluster of our own under DATA_DIR/postgres even when one answers there.
   */
  LOCAL_POSTGRES_URL: postgresUrl.or(z.literal('own')).default('postgres://postgres@127.0.0.1:5432/postgres'),
  /**
   * When MONGO_URL is a FerretDB on PostgreSQL of your own: the PostgreSQL database it keeps its tables
   * in, so the service gives it the indexes and upkeep it needs (the local store gets them without this).
   */
  FERRETDB_POSTGRES_URL: postgresUrl.optional().or(z.literal('').transform(() => undefined)),
  /** Where replay segments and artifacts live: the local filesystem or an S3-compatible store. */
  BLOB_STORE: z.enum(['fs', 's3']).default('fs'),
  /** Root of the `fs` blob store; defaults to DATA_DIR/blobs. */
  BLOB_DIR: z.string().optional(),
  /** The `s3` blob store: any S3-compatible endpoint (unset: AWS S3 itself). */
  S3_ENDPOINT: optionalUrl,
  S3_REGION: z.string().min(1).default('us-east-1'),
  /** Required when BLOB_STORE=s3; the bucket must exist. */
  S3_BUCKET: optionalText,
  /** Both or neither; neither: the AWS SDK's own credential chain (instance role, AWS_* variables). */
  S3_ACCESS_KEY_ID: optionalText,
  S3_SECRET_ACCESS_KEY: optionalText,
  /** Path-style addressing (`endpoint/bucket/key`), which MinIO and most self-hosted stores need. */
  S3_FORCE_PATH_STYLE: flag.default(false),
  /** The port the API process serves the built dashboard on; 0 turns the built-in dashboard off. */
  WEB_PORT: port.default(3000),
  /** Where the dashboard is opened; unset: http://localhost:<WEB_PORT> (3000 when WEB_PORT is 0). */
  DASHBOARD_ORIGIN: optionalUrl,
  /** Public URL of the API; also switches single sign-on on. */
  API_PUBLIC_URL: optionalUrl,
  /** Host written into DSN strings; defaults to http://localhost:<INGEST_PORT>. */
  INGEST_PUBLIC_URL: optionalUrl,
  /** The session cookie's Secure flag; unset: on when API_PUBLIC_URL is https. */
  COOKIE_SECURE: flag.optional().or(z.literal('').transform(() => undefined)),
  /** How long a session cookie (and the session behind it) lasts after login: 30 days, as CONTRACT.md fixes. */
  SESSION_TTL_HOURS: positiveInt.default(720),
  /** log2 of scrypt's N. 17 is the OWASP recommendation; tests lower it to stay fast. */
  PASSWORD_HASH_COST: z.coerce.number().int().min(10).max(20).default(17),
  /** Express "trust proxy" setting: how many proxy hops to trust for the client IP. */
  TRUST_PROXY_HOPS: z.coerce.number().int().min(0).default(0),
  RATE_LIMIT_LOGIN: positiveInt.default(10),
  RATE_LIMIT_LOGIN_ADDRESS: positiveInt.default(100),
  RATE_LIMIT_LOGIN_WINDOW_SECONDS: positiveInt.default(900),
  RATE_LIMIT_REGISTER: positiveInt.default(20),
  RATE_LIMIT_REGISTER_WINDOW_SECONDS: positiveInt.default(3600),
  /** Password-reset mails one address may be sent per window (no inbox is flooded through the reset form). */
  RATE_LIMIT_PASSWORD_RESET: positiveInt.default(5),
  RATE_LIMIT_PASSWORD_RESET_WINDOW_SECONDS: positiveInt.default(3600),
  RATE_LIMIT_API: positiveInt.default(1200),
  RATE_LIMIT_API_WINDOW_SECONDS: positiveInt.default(60),
  /**
   * How long an API request may work: one still working after it is answered 503 deadline_exceeded and
   * its reads stop (artifact uploads excepted).
   */
  REQUEST_DEADLINE_MS: positiveInt.default(10_000),
  /**
   * Requests all the sessions and API keys of one organisation may make together per
   * RATE_LIMIT_API_WINDOW_SECONDS (4 × RATE_LIMIT_API's default), so minting more keys buys no more budget.
   */
  RATE_LIMIT_ORG: positiveInt.default(4800),
  /** Requests one DSN may send per second to the ingest service (abuse control, never a plan figure). */
  INGEST_RATE_LIMIT_PER_SECOND: positiveInt.default(1000),
  /** How long an ingest process trusts its cached DSN lookup; revocation takes effect within this. */
  INGEST_DSN_CACHE_MS: positiveInt.max(5000).default(4000),
  /**
   * Ingest writes a batch job as soon as a write to Redis is free, gathering requests while writes are
   * under way; a batch is written without waiting once this many records have gathered.
   */
  INGEST_BATCH_SIZE: positiveInt.default(500),
  /**
   * Where ingest keeps accepted batches while Redis cannot take them, replayed into the queue when it
   * returns; defaults to DATA_DIR/spool/<REDIS_PREFIX>. Each ingest process should have its own.
   */
  INGEST_SPOOL_DIR: z.string().optional(),
  /** The spool's size cap: past it ingest answers 503 with Retry-After (and /readyz says why). */
  INGEST_SPOOL_MAX_MB: z.coerce.number().positive().default(1024),
  /** Spooled batches older than this when Redis returns are discarded (logged and counted as dropped), not replayed. */
  INGEST_SPOOL_MAX_AGE_HOURS: z.coerce.number().positive().default(72),
  /** Requests without a valid DSN one client address may send per minute before ingest refuses it with 429. */
  INGEST_UNAUTHENTICATED_PER_MINUTE: positiveInt.default(120),
  /**
   * Telemetry jobs each worker process holds at once: while one flush is being stored the others wait and
   * go into the next flush together (jobs are idempotent, so order does not matter).
   */
  WORKER_CONCURRENCY: positiveInt.default(512),
  /**
   * How long a worker's hold on a job lasts unless renewed (it renews at half this): a job whose worker
   * died goes back to the queue for another worker once its hold has lapsed and a stalled check sees it.
   */
  WORKER_LOCK_MS: positiveInt.default(30_000),
  /** How often each worker process looks for jobs whose worker died (BullMQ's stalled-job check). */
  WORKER_STALLED_CHECK_MS: positiveInt.default(30_000),
  /** How old a note of error events stored and not yet counted is before the recount sweep takes their count for lost. */
  WORKER_RECOUNT_AFTER_MS: positiveInt.default(60_000),
  /** Prefix of every BullMQ and cache key in Redis, so several deployments can share one Redis. */
  REDIS_PREFIX: z.string().min(1).default('slk'),
  /**
   * Key that seals credentials kept at rest (code-host tokens): 32 bytes as 64 hex digits or base64.
   * Unset: a key is generated once into DATA_DIR/encryption.key and reused.
   */
  ENCRYPTION_KEY: z
    .string()
    .regex(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/]{43}=)$/, 'must be 32 bytes as 64 hex digits or base64')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** REST API roots of the code hosts (VCS integrations verify tokens and repositories there). */
  GITHUB_API_URL: z.url().default('https://api.github.com'),
  GITLAB_API_URL: z.url().default('https://gitlab.com/api/v4'),
  /** `host:port` of the DNS server SSO domain verification asks for TXT records; unset: the system resolver. */
  DNS_RESOLVER: z
    .string()
    .regex(/^[^:\s]+:\d{1,5}$/, 'must be host:port')
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /** AI investigations are on when either is set: the Ollama server (e.g. http://127.0.0.1:11434) and/or its API key. */
  OLLAMA_HOST: optionalUrl,
  OLLAMA_API_KEY: z.string().optional().or(z.literal('').transform(() => undefined)),
  OLLAMA_MODEL: z.string().min(1).default('llama3.1'),
  /** How long one model call may take before the investigation fails. */
  AI_TIMEOUT_MS: positiveInt.default(120_000),
  /** Checkout is mounted only when this is set: the payment provider's secret key (Stripe-compatible API). */
  PAYMENT_API_KEY: z.string().optional().or(z.literal('').transform(() => undefined)),
  PAYMENT_API_URL: z.url().default('https://api.stripe.com'),
  /** The provider's price that a checkout session sells. */
  PAYMENT_PRICE_ID: z.string().optional().or(z.literal('').transform(() => undefined)),
  /**
   * Plan figures per usage category for the current month, `category=quantity` comma-separated
   * (errors, spans, logs, metrics, replays, checkins, feedback). Shown beside usage; they never throttle.
   */
  PLAN_INCLUDED: z
    .string()
    .regex(/^(\s*[a-z_]+\s*=\s*\d+\s*)(,\s*[a-z_]+\s*=\s*\d+\s*)*$/, 'must be category=quantity pairs, comma-separated')
    .default('errors=100000,spans=10000000,logs=10000000,metrics=10000000,replays=10000,checkins=100000,feedback=10000'),
  /** Check-ins one token may send per minute (abuse control: a looping script, not a schedule). */
  CHECKIN_RATE_LIMIT_PER_MINUTE: positiveInt.default(60),
  /** Where alert and digest email goes, e.g. smtp://127.0.0.1:2525; unset: email is off. */
  SMTP_URL: optionalUrl,
  MAIL_FROM: z.string().min(3).default('Sluice <alerts@localhost>'),
  /** Mail the service may send for one organisation per hour (alerts, digests, confirmations); past it, mail is not sent. */
  MAIL_PER_ORG_PER_HOUR: positiveInt.default(100),
  /**
   * Addresses and CIDR ranges uptime probes, webhooks and SSO identity providers may reach although the
   * outbound guard refuses private, loopback and metadata addresses (a self-hosted install probing its
   * own network, or an in-house identity provider).
   */
  OUTBOUND_ALLOWLIST: z
    .string()
    .default('')
    .superRefine((value, ctx) => {
      try {
        parseAllowlist(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  /** An uptime monitor's certificate expiring within this many days raises an alert. */
  TLS_EXPIRY_WARN_DAYS: positiveInt.default(14),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
})
  // `when` runs these beside the other keys' checks, so one boot lists every bad key.
  .refine((env) => env.BLOB_STORE !== 's3' || !!env.S3_BUCKET, { path: ['S3_BUCKET'], message: 'required when BLOB_STORE=s3', when: () => true })
  .refine((env) => !env.S3_ACCESS_KEY_ID === !env.S3_SECRET_ACCESS_KEY, { path: ['S3_SECRET_ACCESS_KEY'], message: 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are set together or not at all', when: () => true });

type Env = z.infer<typeof schema>;

export interface Config extends Readonly<Omit<Env, 'INGEST_PUBLIC_URL' | 'BLOB_DIR' | 'INGEST_SPOOL_DIR' | 'DASHBOARD_ORIGIN'>> {
  readonly INGEST_PUBLIC_URL: string;
  readonly DASHBOARD_ORIGIN: string;
  readonly BLOB_DIR: string;
  readonly INGEST_SPOOL_DIR: string;
  /** True when cookies carry the Secure flag: COOKIE_SECURE, else whether the public URL is https. */
  readonly secureCookies: boolean;
}

export class ConfigError extends Error {}

/** The only reader of the environment: parses it once, fails listing every bad key, and freezes the result. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const value = parsed.data;
  return Object.freeze({
    ...value,
    INGEST_PUBLIC_URL: value.INGEST_PUBLIC_URL ?? `http://localhost:${value.INGEST_PORT}`,
    // an origin has no trailing slash: the browser's Origin header is compared with this exactly
    DASHBOARD_ORIGIN: (value.DASHBOARD_ORIGIN ?? `http://localhost:${value.WEB_PORT || 3000}`).replace(/\/+$/, ''),
    BLOB_DIR: value.BLOB_DIR ?? `${value.DATA_DIR}/blobs`,
    INGEST_SPOOL_DIR: value.INGEST_SPOOL_DIR ?? `${value.DATA_DIR}/spool/${value.REDIS_PREFIX}`,
    secureCookies: value.COOKIE_SECURE ?? value.API_PUBLIC_URL?.startsWith('https:') ?? false,
  });
}
