import { Project, ProjectKey } from '../shared/features/projects/model.js';

/** What ingest needs to know about a DSN, resolved without Mongoose documents on the hot path. */
export interface IngestDsn {
  publicKey: string;
  orgId: string;
  projectId: string;
  projectNumber: number;
  replayCapture: boolean;
}

interface Entry {
  value: Promise<IngestDsn | undefined>;
  expires: number;
  /** The DSN as last found, kept after the entry expires, for when the store cannot be asked. */
  known?: { dsn: IngestDsn; at: number } | undefined;
}

/**
 * How long a DSN found live may still be trusted while the store does not answer: telemetry keeps
 * flowing into Redis through a database outage (a revocation needs the database too, so none can
 * have been made meanwhile through the API).
 */
const TRUSTED_DURING_OUTAGE_MS = 10 * 60_000;
/** How long a lookup of a DSN seen live may take before the last answer is used instead. */
const LOOKUP_PATIENCE_MS = 1000;

const patience = (ms: number) =>
  new Promise<never>((_, reject) => {
    setTimeout(() => reject(new Error(`the store did not answer within ${ms} ms`)), ms).unref();
  });

/**
 * Per-process DSN cache. An entry lives `ttlMs` (≤ 5 s), so a revoked DSN stops working on every ingest
 * process within that time without any cross-process signal; unknown keys are remembered for less,
 * so a newly issued DSN works almost at once. While the store does not answer, a DSN found live in
 * the last ten minutes is still accepted; one never seen gets 503.
 */
export class DsnCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly unknownTtlMs = Math.min(ttlMs, 1000),
  ) {}

  resolve(publicKey: string): Promise<IngestDsn | undefined> {
    const now = Date.now();
    const cached = this.entries.get(publicKey);
    if (cached && cached.expires > now) return cached.value;
    const known = cached?.known;
    const entry: Entry = { value: Promise.resolve(undefined), expires: now + this.ttlMs, known };
    // a DSN seen live is not held up by a store that takes long to answer (the driver waits up to 10 s for one that is down)
    const lookedUp = known ? Promise.race([lookup(publicKey), patience(LOOKUP_PATIENCE_MS)]) : lookup(publicKey);
    entry.value = lookedUp.then(
      (found) => {
        entry.known = found && { dsn: found, at: now };
        if (!found) entry.expires = now + this.unknownTtlMs;
        return found;
      },
      (error: unknown) => {
        if (known && now - known.at < TRUSTED_DURING_OUTAGE_MS) {
          // asked again after the next unknown-key interval, so the store's return is noticed soon
          entry.expires = now + this.unknownTtlMs;
          return known.dsn;
        }
        this.entries.delete(publicKey);
        throw error;
      },
    );
    this.entries.set(publicKey, entry);
    this.evictExpired(now);
    return entry.value;
  }

  /** Keeps the map from growing with keys nobody sends any more (or made-up ones). */
  private evictExpired(now: number) {
    if (this.entries.size < 10_000) return;
    for (const [key, entry] of this.entries) if (entry.expires <= now) this.entries.delete(key);
  }
}

async function lookup(publicKey: string): Promise<IngestDsn | undefined> {
  if (!/^[0-9a-f]{32}$/.test(publicKey)) return undefined;
  const key = await ProjectKey.collection.findOne({ publicKey, revokedAt: null }, { projection: { projectId: 1 } });
  if (!key) return undefined;
  const project = await Project.collection.findOne({ _id: key.projectId }, { projection: { orgId: 1, number: 1, replayCapture: 1 } });
  if (!project) return undefined;
  return {
    publicKey,
    orgId: String(project.orgId),
    projectId: String(project._id),
    projectNumber: project.number as number,
    replayCapture: project.replayCapture === true,
  };
}
