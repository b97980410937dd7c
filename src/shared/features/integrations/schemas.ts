import { z } from 'zod';
import { providers } from '../../clients/code-hosts.js';

export const putIntegrationBody = z
  .object({
    /** `owner/name` on GitHub; the project path on GitLab (`group/subgroup/name`). */
    repository: z
      .string()
      .trim()
      .regex(/^[\w.-]+(\/[\w.-]+)+$/, 'owner/name, or a GitLab project path')
      // `.` and `..` would be resolved away in the host's API URL and reach another endpoint
      .refine((path) => path.split('/').every((segment) => segment !== '.' && segment !== '..'), 'no `.` or `..` segments'),
    /** Defaults to the repository's default branch on the host. */
    default_branch: z.string().trim().min(1).max(255).optional(),
    access_token: z.string().trim().min(8).max(1024),
  })
  .strict();

export const integrationJson = z.object({
  provider: z.enum(providers),
  repository: z.string(),
  default_branch: z.string(),
  repository_url: z.string(),
  token_set: z.literal(true),
  /** The token's last four characters, to tell tokens apart. */
  token_last4: z.string(),
  verified_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
