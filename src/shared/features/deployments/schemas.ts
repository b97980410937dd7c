import { z } from 'zod';
import { httpUrl } from '../../links.js';
import { pageQuery } from '../../paging.js';
import { repeatedParameter, viewQuery } from '../../views.js';
import { verdicts } from './model.js';

export const createDeploymentBody = z
  .object({
    project_id: z.string(),
    /** The release name the SDKs send (e.g. `shop@2.4.1`). */
    version: z.string().trim().min(1).max(200),
    environment: z.string().trim().min(1).max(64).default('production'),
    commit_sha: z.string().regex(/^[0-9a-fA-F]{7,64}$/, 'a commit hash (7 to 64 hex digits)').optional(),
    repository: z.string().max(300).optional(),
    url: httpUrl.optional(),
    /** Defaults to now. */
    deployed_at: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

export const listDeploymentsQuery = z.object({ ...viewQuery, ...pageQuery, environment: z.string().max(64).optional(), version: z.string().max(200).optional() });

export const healthQuery = z.object({
  /** Minutes compared on each side of the deployment. */
  window: z.coerce.number().int().min(5).max(1440).default(60),
});

export const deploymentJson = z.object({
  id: z.string(),
  project_id: z.string(),
  version: z.string(),
  environment: z.string(),
  commit_sha: z.string().nullable(),
  repository: z.string().nullable(),
  url: z.string().nullable(),
  /** A link to the commit on the project's code host, when an integration names the repository. */
  commit_url: z.string().nullable(),
  deployed_at: z.string(),
  created_at: z.string(),
  /** The verdict over the default 60-minute windows, once they have passed. */
  verdict: z.enum(verdicts).nullable(),
});

const metricBase = {
  difference: z.number().nullable(),
  test: z.enum(['two_proportion_z', 'poisson_exact']).nullable(),
  statistic: z.number().nullable(),
  p_value: z.number().nullable(),
  minimum_sample: z.number(),
  verdict: z.enum(verdicts),
  rule: z.string(),
};

const rateSide = z.object({ errors: z.number(), requests: z.number().optional(), sessions: z.number().optional(), rate: z.number().nullable() });

export const healthJson = z.object({
  deployment_id: z.string(),
  project_id: z.string(),
  version: z.string(),
  environment: z.string(),
  deployed_at: z.string(),
  window_minutes: z.number(),
  before: z.object({ from: z.string(), to: z.string() }),
  after: z.object({ from: z.string(), to: z.string() }),
  error_rate: z.object({ denominator: z.enum(['requests', 'sessions']), before: rateSide, after: rateSide, ...metricBase }),
  p95_latency: z.object({
    before: z.object({ requests: z.number(), p95_ms: z.number().nullable(), slower: z.number(), rate: z.number().nullable() }),
    after: z.object({ requests: z.number(), p95_ms: z.number().nullable(), slower: z.number(), rate: z.number().nullable() }),
    /** The before window's p95: requests slower than it are counted on both sides. */
    threshold_ms: z.number().nullable(),
    ...metricBase,
  }),
  crash_free_sessions: z
    .object({
      before: z.object({ sessions: z.number(), crashed: z.number(), crash_free_rate: z.number().nullable() }),
      after: z.object({ sessions: z.number(), crashed: z.number(), crash_free_rate: z.number().nullable() }),
      ...metricBase,
    })
    .nullable(),
  new_issues: z.array(z.object({ id: z.string(), title: z.string(), first_seen: z.string(), count: z.number() })),
  verdict: z.enum(verdicts),
  reasons: z.array(z.string()),
});

export const listReleasesQuery = z.object({ ...pageQuery, project: repeatedParameter, environment: z.string().max(64).optional() });

export const releaseJson = z.object({
  version: z.string(),
  projects: z.array(z.string()),
  environments: z.array(z.string()),
  first_seen: z.string().nullable(),
  last_seen: z.string().nullable(),
  first_deployed_at: z.string().nullable(),
  last_deployed_at: z.string().nullable(),
  deployment_count: z.number(),
  new_issues: z.number(),
  events: z.number(),
  /** 1 − crashed / sessions, where sessions exist. */
  crash_free_rate: z.number().nullable(),
  /** The newest deployment's verdict, once judged. */
  latest_verdict: z.enum(verdicts).nullable(),
  latest_commit_url: z.string().nullable(),
  /** When release tooling finalized the release (sentry-cli `releases finalize`), if it did. */
  finalized_at: z.string().nullable(),
  /** The head commits release tooling set (sentry-cli `releases set-commits`), per repository. */
  commits: z.array(z.object({ repository: z.string(), commit: z.string() })),
});
