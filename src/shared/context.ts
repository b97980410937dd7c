import { AsyncLocalStorage } from 'node:async_hooks';
import { AppError } from './errors.js';

/** What every log line and audit entry of one request or job needs to know about it. */
export interface RequestContext {
  requestId?: string;
  jobId?: string;
  /** An API request's deadline (REQUEST_DEADLINE_MS after it arrived), in epoch milliseconds. */
  deadline?: number;
  /** Takes more rate-limit points from each of the request's limiters (see chargeWork). */
  chargers?: ((points: number) => Promise<void>)[];
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentContext(): RequestContext {
  return requestContext.getStore() ?? {};
}

export const deadlineExceeded = () => new AppError('deadline_exceeded', 'the request ran past its deadline and was stopped; ask for a shorter window or fewer widgets');

/** The option that stops a database read at the current request's deadline: `{ maxTimeMS }` with the time left, or nothing outside a request. */
export function untilDeadline(): { maxTimeMS?: number } {
  const { deadline } = currentContext();
  return deadline === undefined ? {} : { maxTimeMS: Math.max(1, deadline - Date.now()) };
}

/** Throws `deadline_exceeded` once the current request's deadline has passed: long reads call it between their steps. */
export function checkDeadline(): void {
  const { deadline } = currentContext();
  if (deadline !== undefined && Date.now() >= deadline) throw deadlineExceeded();
}

/**
 * Charges the current request `points` beyond the one every request costs, once the work it asks for
 * is known (a long view window, resolved widgets); over a limit it throws `rate_limited`. Outside a
 * request (a job), nothing.
 */
export async function chargeWork(points: number): Promise<void> {
  if (points <= 0) return;
  for (const charge of currentContext().chargers ?? []) await charge(points);
}
