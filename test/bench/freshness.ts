/**
 * Freshness from the client's side: how long after its 200 an error event is listed by
 * `GET /v1/issues/{id}/events`, the read behind an issue's page. The watched events all carry one exception
 * type, so they group into one issue of their own and one poller reading that issue's newest events covers
 * them all, at one API request per poll, instead of a read per issue the load touches.
 */
import { sentryRequest, type Destination } from './payloads.js';
import { percentile, sleep } from './support.js';
import type { Client } from '../support/http.js';

/** How often the watcher reads the issue's events: the figures' resolution, at about 10 API reads a second. */
const POLL_MS = 100;
/** Events per page read; a poll reads further pages only while a page lists events it had not seen. */
const PAGE = 100;
const MAX_PAGES = 20;

/**
 * Polls one issue's events, newest first, and notes when each event_id is first listed, in Date.now()
 * (the clock the load generator stamps its answers with; see LoadResult.watched).
 */
export class EventWatcher {
  readonly listedAt = new Map<string, number>();
  /** How long each read of a page took, from the request until its answer was parsed. */
  readonly readMs: number[] = [];
  private stopped = false;
  private loop?: Promise<void>;
  private failure?: Error;

  constructor(
    private readonly api: Client,
    readonly issueId: string,
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const started = Date.now();
        try {
          await this.poll();
        } catch (error) {
          this.failure = error as Error;
          return;
        }
        await sleep(Math.max(0, POLL_MS - (Date.now() - started)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async poll(): Promise<void> {
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const sent = Date.now();
      const reply = await this.api.get(`/v1/issues/${this.issueId}/events?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      if (reply.status !== 200) throw new Error(`the events of issue ${this.issueId}: ${reply.status} ${reply.text.slice(0, 200)}`);
      const now = Date.now();
      this.readMs.push(now - sent);
      let unseen = 0;
      for (const { event_id: eventId } of reply.body.data as { event_id: string }[]) {
        if (this.listedAt.has(eventId)) continue;
        this.listedAt.set(eventId, now);
        unseen++;
      }
      cursor = reply.body.next_cursor as string | null;
      if (unseen === 0 || !cursor) return;
    }
  }

  /** Waits until every one of `eventIds` has been listed, or `givenUp` says to stop waiting; false if not all were. */
  async waitFor(eventIds: string[], givenUp: () => boolean): Promise<boolean> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (eventIds.every((id) => this.listedAt.has(id))) return true;
      if (givenUp()) return false;
      await sleep(POLL_MS / 2);
    }
  }
}

/** Sends one event of `issue` and waits until the issue is listed: a watcher of it, not yet polling. */
export async function watchIssue(api: Client, to: Destination, projectId: string, issue: string): Promise<EventWatcher> {
  const first = sentryRequest(to, 0, issue);
  const reply = await fetch(first.url, { method: 'POST', headers: first.headers, body: first.body });
  await reply.arrayBuffer();
  if (reply.status !== 200) throw new Error(`the first event of ${issue} was answered ${reply.status}`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const issues = await api.get(`/v1/issues?project=${projectId}&q=${issue}&limit=1`);
    const found = (issues.body?.data as { id: string }[] | undefined)?.[0];
    if (found) return new EventWatcher(api, found.id);
    if (Date.now() > deadline) throw new Error(`the issue ${issue} was not listed within 120 s`);
    await sleep(POLL_MS);
  }
}

/**
 * The run's first seconds, shown apart: a new project's first events create its issues (the bench's
 * load has 500 fingerprints), which costs the workers more than the events of known issues after.
 */
export const OPENING_MS = 5000;

export interface Freshness {
  /** Watched events accepted, and how many of those were listed. */
  watched: number;
  listed: number;
  /** ms from the 200 to the first poll that listed the event. */
  p50: number;
  p99: number;
  max: number;
  /** The same, for the events answered in the run's first OPENING_MS and for those answered after. */
  opening: { p50: number; p99: number };
  after: { p50: number; p99: number };
  /** The poller's reads of a page over the run: an event stored during a read is listed by the next one at the earliest. */
  read: { count: number; p50: number; p99: number };
}

export function freshnessOf(answers: { eventId: string; answeredAt: number }[], watcher: EventWatcher): Freshness {
  const delaysOf = (of: typeof answers) =>
    of.flatMap(({ eventId, answeredAt }) => {
      const listedAt = watcher.listedAt.get(eventId);
      return listedAt === undefined ? [] : [Math.max(0, listedAt - answeredAt)];
    });
  const delays = delaysOf(answers);
  const openingEnds = Math.min(...answers.map((answer) => answer.answeredAt)) + OPENING_MS;
  const percentiles = (of: typeof answers) => {
    const some = delaysOf(of);
    return { p50: percentile(some, 50), p99: percentile(some, 99) };
  };
  const read = { count: watcher.readMs.length, p50: percentile(watcher.readMs, 50), p99: percentile(watcher.readMs, 99) };
  return {
    watched: answers.length,
    listed: delays.length,
    p50: percentile(delays, 50),
    p99: percentile(delays, 99),
    max: delays.length > 0 ? Math.max(...delays) : NaN,
    opening: percentiles(answers.filter((answer) => answer.answeredAt < openingEnds)),
    after: percentiles(answers.filter((answer) => answer.answeredAt >= openingEnds)),
    read,
  };
}
