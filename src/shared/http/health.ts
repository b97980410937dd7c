import { Router } from 'express';
import { AppError } from '../errors.js';

export type ReadinessChecks = Record<string, () => Promise<void>>;

const CHECK_TIMEOUT_MS = 2000;

async function runCheck(name: string, check: () => Promise<void>) {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { name, status: 'ok' as const };
  } catch (error) {
    return { name, status: 'down' as const, error: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** `/healthz` answers while the process runs; `/readyz` only while every dependency answers. */
export function healthRouter(checks: ReadinessChecks): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (req, res) => {
    const results = await Promise.all(Object.entries(checks).map(([name, check]) => runCheck(name, check)));
    if (results.every((result) => result.status === 'ok')) {
      res.json({ status: 'ok', checks: results });
      return;
    }
    const error = new AppError('not_ready', 'a dependency is not available');
    res.status(error.status).json({ code: error.code, message: error.message, request_id: req.requestId, checks: results });
  });
  return router;
}
