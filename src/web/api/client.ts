import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema';

/** What the dashboard's server tells the app at /config.json. */
export interface RuntimeConfig {
  api_url: string;
  /** Single sign-on is on (the API has a public URL). */
  sso: boolean;
  /** AI investigations are on (a model is configured). Absent when a team serves the app itself: the app then asks the API, which answers 501 while they are off. */
  ai?: boolean;
  /** POST /v1/checkout is mounted (PAYMENT_API_KEY is set), so the usage page offers "Upgrade". */
  checkout?: boolean;
  ingest_url: string;
}

let runtime: RuntimeConfig | undefined;
let client: Client<paths> | undefined;

export async function loadRuntimeConfig(): Promise<RuntimeConfig> {
  const response = await fetch('/config.json', { cache: 'no-store' });
  if (!response.ok) throw new Error(`the dashboard's configuration did not load (HTTP ${response.status})`);
  runtime = (await response.json()) as RuntimeConfig;
  // every call is cross-origin with the session cookie: the API allows exactly this dashboard's origin
  client = createClient<paths>({ baseUrl: runtime.api_url, credentials: 'include' });
  return runtime;
}

export const runtimeConfig = (): RuntimeConfig => runtime!;

/** The API client, typed from the OpenAPI document; available once loadRuntimeConfig has resolved. */
export const api = (): Client<paths> => client!;

/** The API's error body (CONTRACT.md), thrown for every refused request. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    readonly details?: Array<{ path?: string; message?: string }>,
  ) {
    super(message);
  }
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of an API answer, or its error body thrown as an ApiError. */
export async function read<T>(answer: Promise<Answer<T>>): Promise<T> {
  let result: Answer<T>;
  try {
    result = await answer;
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(0, 'network_error', 'The API could not be reached. Is the service running?');
  }
  const { data, error, response } = result;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { code?: string; message?: string; request_id?: string; details?: ApiError['details'] };
  throw new ApiError(response.status, body.code ?? 'http_error', body.message ?? `The API answered HTTP ${response.status}.`, body.request_id, body.details);
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = M extends keyof paths[P] ? NonNullable<paths[P][M]> : never;

/** The query parameters a route takes, e.g. `QueryOf<'/v1/issues'>`. */
export type QueryOf<P extends keyof paths, M extends Method = 'get'> = Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The JSON a route answers on success, e.g. `AnswerOf<'/v1/issues'>`. */
export type AnswerOf<P extends keyof paths, M extends Method = 'get'> = Operation<P, M> extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer J } } }
    ? J
    : R extends { 201: { content: { 'application/json': infer J } } }
      ? J
      : R extends { 202: { content: { 'application/json': infer J } } }
        ? J
        : never
  : never;

/** The JSON body a route takes. */
export type BodyOf<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
