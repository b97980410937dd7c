import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line and audit entry of one request or job needs to know about it. */
export interface RequestContext {
  requestId?: string;
  jobId?: string;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentContext(): RequestContext {
  return requestContext.getStore() ?? {};
}
