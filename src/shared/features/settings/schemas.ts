import { z } from 'zod';

export const settingsJson = z.object({
  organization: z.object({ id: z.string(), name: z.string() }),
  /** Days telemetry is kept before the cleanup job removes it. */
  retention_days: z.number().int(),
});

export const settingsPatchBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    retention_days: z.number().int().min(1).max(365).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'nothing to change');
