import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the fake model does with the next chat requests. */
export type Behaviour =
  /** Answers the JSON text of `content` as the assistant's message. */
  | { answer: unknown }
  /** Answers this text as the assistant's message, as is (e.g. not JSON). */
  | { raw: string }
  /** Answers an HTTP error with Ollama's `{"error": …}` body. */
  | { status: number; error: string }
  /** Never answers (until the server closes). */
  | { hang: true };

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string }[];
  format?: unknown;
  stream?: boolean;
  options?: Record<string, unknown>;
}

export interface FakeOllama {
  url: string;
  /** Every /api/chat body received, in order. */
  requests: ChatRequestBody[];
  /** Authorization headers received, in order. */
  authorizations: (string | undefined)[];
  behaviour: Behaviour;
  /** Holds answers back until release(): lets a test see an investigation while it runs. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

/** A local HTTP server speaking Ollama's non-streaming chat API (`POST /api/chat`). */
export async function startFakeOllama(behaviour: Behaviour = { answer: { summary: 'ok', suggested_actions: [] } }): Promise<FakeOllama> {
  const sockets = new Set<Socket>();
  let held: (() => void)[] | undefined;
  const fake: FakeOllama = {
    url: '',
    requests: [],
    authorizations: [],
    behaviour,
    hold: () => {
      held ??= [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const go of waiting) go();
    },
    close: async () => {
      fake.release();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const respond = (res: ServerResponse, model: string) => {
    const now = fake.behaviour;
    if ('hang' in now) return;
    if ('status' in now) {
      res.writeHead(now.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: now.error }));
      return;
    }
    const content = 'raw' in now ? now.raw : JSON.stringify(now.answer);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(
      JSON.stringify({
        model,
        created_at: new Date().toISOString(),
        message: { role: 'assistant', content },
        done: true,
        done_reason: 'stop',
        total_duration: 1_000_000,
        load_duration: 1000,
        prompt_eval_count: 321,
        prompt_eval_duration: 1000,
        eval_count: 45,
        eval_duration: 1000,
      }),
    );
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/api/chat') {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString()) as ChatRequestBody;
      fake.requests.push(body);
      fake.authorizations.push(req.headers.authorization);
      if (held) held.push(() => respond(res, body.model));
      else respond(res, body.model);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
