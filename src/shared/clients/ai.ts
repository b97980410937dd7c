import { Ollama } from 'ollama';
import type { Config } from '../config.js';

/** Where the model runs when only OLLAMA_API_KEY is set: Ollama's hosted service. */
const OLLAMA_CLOUD = 'https://ollama.com';

/** AI investigations are on when either variable is set (CONTRACT.md: off → 501 ai_unavailable). */
export const aiEnabled = (config: Pick<Config, 'OLLAMA_HOST' | 'OLLAMA_API_KEY'>) => !!(config.OLLAMA_HOST || config.OLLAMA_API_KEY);

/** Why the model gave no answer: the message is fit to show a user (no credentials, no stack). */
export class AiError extends Error {
  constructor(
    readonly reason: 'timeout' | 'model_error' | 'unreachable',
    message: string,
  ) {
    super(message);
    this.name = 'AiError';
  }
}

export interface ChatCall {
  system: string;
  /** The user message, sent as is (the caller's JSON text). */
  user: string;
  /** JSON schema the answer must follow (Ollama's structured output). */
  format: object;
}

export interface ChatAnswer {
  /** The assistant's text, unparsed: checking it against the schema is the caller's job. */
  content: string;
  model: string;
  promptTokens: number | null;
  completionTokens: number | null;
}

export interface AiClient {
  readonly model: string;
  chat(call: ChatCall): Promise<ChatAnswer>;
}

/**
 * The model server, or undefined when AI is off. Every call is bounded by AI_TIMEOUT_MS (the request
 * is aborted, headers and body alike) and every failure becomes an AiError.
 */
export function createAiClient(config: Config): AiClient | undefined {
  if (!aiEnabled(config)) return undefined;
  const timeoutMs = config.AI_TIMEOUT_MS;
  const ollama = new Ollama({
    host: config.OLLAMA_HOST ?? OLLAMA_CLOUD,
    ...(config.OLLAMA_API_KEY && { headers: { Authorization: `Bearer ${config.OLLAMA_API_KEY}` } }),
    // one request per chat: its own deadline, whatever else the client has in flight
    fetch: (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs) }),
  });
  return {
    model: config.OLLAMA_MODEL,
    async chat({ system, user, format }) {
      let timer: NodeJS.Timeout | undefined;
      // belt and braces: a fetch that ignores its signal still cannot hold the job past the deadline
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new AiError('timeout', `the model did not answer within ${timeoutMs} ms`)), timeoutMs + 1000);
      });
      try {
        const response = await Promise.race([
          ollama.chat({
            model: config.OLLAMA_MODEL,
            messages: [
              { role: 'system', content: system },
              { role: 'user', content: user },
            ],
            format,
            stream: false,
            options: { temperature: 0 },
          }),
          deadline,
        ]);
        return {
          content: typeof response.message?.content === 'string' ? response.message.content : '',
          model: response.model || config.OLLAMA_MODEL,
          promptTokens: typeof response.prompt_eval_count === 'number' ? response.prompt_eval_count : null,
          completionTokens: typeof response.eval_count === 'number' ? response.eval_count : null,
        };
      } catch (error) {
        throw asAiError(error, timeoutMs);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

function asAiError(error: unknown, timeoutMs: number): AiError {
  if (error instanceof AiError) return error;
  const { name, message, status_code: status } = (error ?? {}) as { name?: string; message?: string; status_code?: number };
  if (name === 'TimeoutError' || name === 'AbortError') return new AiError('timeout', `the model did not answer within ${timeoutMs} ms`);
  if (name === 'SyntaxError') return new AiError('model_error', 'the model server sent a reply that is not JSON');
  if (name === 'ResponseError') return new AiError('model_error', `the model server answered ${status ?? 'an error'}: ${String(message ?? '').slice(0, 500)}`);
  return new AiError('unreachable', `the model server could not be reached: ${String(message ?? error).slice(0, 500)}`);
}
