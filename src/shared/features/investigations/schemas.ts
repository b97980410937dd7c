import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { repeatedParameter } from '../../views.js';
import { investigationKinds, investigationStatuses } from './model.js';

export const explainBody = z.object({ question: z.string().trim().min(1).max(2000) }).strict();

export const listInvestigationsQuery = z.object({
  ...pageQuery,
  project: repeatedParameter,
  kind: z.enum(investigationKinds).optional(),
  status: z.enum(investigationStatuses).optional(),
});

/** What the model must answer for an issue, an alert or a project (sent as Ollama's `format`). */
export const findingsAnswer = z.object({
  summary: z.string().min(1),
  suggested_actions: z.array(z.string()),
});

/** What the model must answer to a question about the topology. */
export const explainAnswer = z.object({
  answer: z.string().min(1),
  suggested_actions: z.array(z.string()),
});

export const investigationJson = z.object({
  id: z.string(),
  kind: z.enum(investigationKinds),
  status: z.enum(investigationStatuses),
  project_id: z.string().nullable(),
  /** What was investigated: `issue`, `alert` or `project` and its id. */
  subject: z.object({ type: z.string(), id: z.string() }),
  /** `explain` only. */
  question: z.string().nullable(),
  /** Issue, alert and project investigations, once completed. */
  summary: z.string().nullable(),
  /** `explain`, once completed. */
  answer: z.string().nullable(),
  /** Once completed; empty when the model suggests nothing. */
  suggested_actions: z.array(z.string()).nullable(),
  /** What our code gathered and the model was shown (as JSON); null until the investigation starts. */
  evidence: z.record(z.string(), z.unknown()).nullable(),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number().nullable(), completion_tokens: z.number().nullable() }).nullable(),
  /** Why a failed investigation failed. */
  error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
});

/** List items leave the evidence out (it can be large): read one investigation for it. */
export const investigationRowJson = investigationJson.omit({ evidence: true });
