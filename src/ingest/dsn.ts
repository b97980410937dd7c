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
}

/**
 * Per-process DSN cache. An entry lives `ttlMs` (≤ 5 s), so a revoked DSN stops working on every ingest
 * process within that time without any cross-process signal; unknown keys are remembered for less,
 * so a newly issued DSN works almost at once.
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
    const value = lookup(publicKey);
    const entry: Entry = { value, expires: now + this.ttlMs };
    this.entries.set(publicKey, entry);
    value.then(
      (found) => {
        if (!found) entry.expires = now + this.unknownTtlMs;
      },
      () => this.entries.delete(publicKey),
    );
    this.evictExpired(now);
    return value;
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
