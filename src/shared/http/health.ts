import { Router } from 'express';
import { AppError } from '../errors.js';

/** A check passes unless it throws; what it returns (figures such as the ingest spool's) is shown beside its status. */
export type ReadinessCheck = () => Promise<void | Record<string, unknown>>;
export type ReadinessChecks = Record<string, ReadinessCheck>;

const CHECK_TIMEOUT_MS = 2000;

async function runCheck(name: string, check: ReadinessCheck) {
  let timer: NodeJS.Timeout | undefined;
  try {
    const details = await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { name, status: 'ok' as const, ...(details as Record<string, unknown> | undefined) };
  } catch (error) {
    return { name, status: 'down' as const, error: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What `/readyz` says of a feature that does not decide readiness: off (with why), or a check whose
 * failure is reported without taking the process out of service (email: alerts wait and retry).
 */
export type OptionalCheck = { off: string } | ReadinessCheck;

/** What `/readyz` answers: 200 while every required check passes, else 503 `not_ready`, listing every check either way. */
export async function readiness(checks: ReadinessChecks, optional: Record<string, OptionalCheck>, requestId: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const results = await Promise.all(Object.entries(checks).map(([name, check]) => runCheck(name, check)));
  const notes = await Promise.all(
    Object.entries(optional).map(async ([name, check]) => (typeof check === 'function' ? { ...(await runCheck(name, check)), required: false } : { name, status: 'off' as const, reason: check.off, required: false })),
  );
  if (results.every((result) => result.status === 'ok')) return { status: 200, body: { status: 'ok', checks: [...results, ...notes] } };
  const error = new AppError('not_ready', 'a dependency is not available');
  return { status: error.status, body: { code: error.code, message: error.message, request_id: requestId, checks: [...results, ...notes] } };
}

/** `/healthz` answers while the process runs; `/readyz` only while every dependency answers. */
export function healthRouter(checks: ReadinessChecks, optional: Record<string, OptionalCheck> = {}): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (req, res) => {
    const { status, body } = await readiness(checks, optional, req.requestId);
    res.status(status).json(body);
  });
  return router;
}
