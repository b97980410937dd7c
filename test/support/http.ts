/** A small fetch client that keeps the slk_session cookie and sends what a dashboard or script would. */
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface ClientOptions {
  origin?: string;
  bearer?: string;
  authorization?: string;
  cookie?: string;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly options: ClientOptions = {},
  ) {}

  with(options: ClientOptions): Client {
    return new Client(this.baseUrl, { ...this.options, ...options });
  }

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const { origin, bearer, authorization, cookie } = this.options;
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...(body !== undefined && typeof body !== 'string' && { 'content-type': 'application/json' }),
        ...(origin && { origin }),
        ...(bearer && { authorization: `Bearer ${bearer}` }),
        ...(authorization && { authorization }),
        ...(cookie && { cookie }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, headers?: Record<string, string>) => this.request<T>('GET', path, undefined, headers);
  post = <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => this.request<T>('POST', path, body, headers);
  put = <T = any>(path: string, body?: unknown) => this.request<T>('PUT', path, body);
  patch = <T = any>(path: string, body?: unknown) => this.request<T>('PATCH', path, body);
  delete = <T = any>(path: string) => this.request<T>('DELETE', path);
}

/** The `name=value` part of a Set-Cookie header, ready to send back. */
export function sessionCookieOf(headers: Headers): string | undefined {
  const line = headers.getSetCookie().find((c) => c.startsWith('slk_session='));
  return line?.split(';')[0];
}

/** Keeps the text of every answer passed through `kept`, so a test can show a secret is in none of them. */
export function answerRecorder() {
  const answers: string[] = [];
  const kept = async (reply: Promise<Reply>) => {
    const r = await reply;
    answers.push(r.text);
    return r;
  };
  return { answers, kept };
}
