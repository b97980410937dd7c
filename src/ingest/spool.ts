import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** One batch on disk. File names start with the write time, so a sorted listing is oldest first. */
interface SpoolEntry {
  name: string;
  id: string;
  bytes: number;
  writtenAt: number;
}

const NAME = /^(\d{15})-([A-Za-z0-9_-]{1,64})\.json$/;

export class SpoolFullError extends Error {}

export type SpoolStatus = {
  batches: number;
  bytes: number;
  max_bytes: number;
  /** A write was refused for want of room and nothing has been replayed since. */
  full: boolean;
  oldest_at: string | null;
};

/** What a replay does with each spooled batch, oldest first. */
export interface SpoolDrain {
  /** Puts the batch back on its way; a throw stops the replay and keeps the batch for the next one. */
  deliver(id: string, data: unknown): Promise<void>;
  /** A batch past its age cap: told once, then deleted. */
  expire(id: string, data: unknown, ageMs: number): Promise<void>;
  /** A file that no longer parses (the disk lied): moved aside as `.corrupt`, never replayed. */
  corrupt(name: string, error: Error): void;
}

/**
 * Ingest's local disk spool: where accepted batches wait while Redis cannot take them. A batch is
 * durable once `write` resolves (written to a temporary name, fsynced, renamed, directory fsynced), so
 * ingest may answer 200. Bounded by `maxBytes`; it survives restarts, since `open` lists what an earlier
 * process left.
 */
export class DiskSpool {
  private readonly entries: SpoolEntry[] = [];
  private bytes = 0;
  private refusedSinceRemoval = false;

  private constructor(
    readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  static async open(dir: string, maxBytes: number): Promise<DiskSpool> {
    await mkdir(dir, { recursive: true });
    const spool = new DiskSpool(dir, maxBytes);
    for (const name of (await readdir(dir)).sort()) {
      const match = NAME.exec(name);
      if (!match) {
        // a write cut short by a crash was never acknowledged: nothing to keep
        if (name.endsWith('.tmp')) await rm(join(dir, name), { force: true });
        continue;
      }
      const { size } = await stat(join(dir, name));
      spool.entries.push({ name, id: match[2]!, bytes: size, writtenAt: Number(match[1]) });
      spool.bytes += size;
    }
    return spool;
  }

  get isEmpty(): boolean {
    return this.entries.length === 0;
  }

  status(): SpoolStatus {
    const oldest = this.entries[0];
    return {
      batches: this.entries.length,
      bytes: this.bytes,
      max_bytes: this.maxBytes,
      full: this.refusedSinceRemoval,
      oldest_at: oldest ? new Date(oldest.writtenAt).toISOString() : null,
    };
  }

  /** Keeps one batch under its id; resolves once it is on disk. Throws SpoolFullError past the size cap. */
  async write(id: string, data: unknown, now = Date.now()): Promise<void> {
    const payload = Buffer.from(JSON.stringify(data));
    if (this.bytes + payload.length > this.maxBytes) {
      this.refusedSinceRemoval = true;
      throw new SpoolFullError(`the ingest spool is full (${this.bytes} of ${this.maxBytes} bytes in ${this.entries.length} batches)`);
    }
    // reserved before the first await, so concurrent writes cannot pass the cap together
    this.bytes += payload.length;
    const name = `${String(now).padStart(15, '0')}-${id}.json`;
    const temporary = join(this.dir, `${name}.tmp`);
    try {
      const file = await open(temporary, 'w');
      try {
        await file.writeFile(payload);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, join(this.dir, name));
      await syncDirectory(this.dir);
    } catch (error) {
      this.bytes -= payload.length;
      await rm(temporary, { force: true });
      throw error;
    }
    this.entries.push({ name, id, bytes: payload.length, writtenAt: now });
  }

  /**
   * Hands batches to `drain` oldest first, deleting each once it is delivered or expired. Stops at the
   * first delivery that fails (Redis went away again). One drain at a time: the caller serialises.
   */
  async drain(drain: SpoolDrain, maxAgeMs: number, now = () => Date.now()): Promise<number> {
    let delivered = 0;
    while (this.entries.length > 0) {
      const entry = this.entries[0]!;
      const path = join(this.dir, entry.name);
      let data: unknown;
      try {
        data = JSON.parse(await readFile(path, 'utf8'));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          // another ingest process sharing this directory replayed it
          this.remove(entry);
          continue;
        }
        drain.corrupt(entry.name, error as Error);
        await rename(path, `${path}.corrupt`).catch(() => {});
        this.remove(entry);
        continue;
      }
      const ageMs = now() - entry.writtenAt;
      if (ageMs > maxAgeMs) await drain.expire(entry.id, data, ageMs);
      else {
        await drain.deliver(entry.id, data);
        delivered += 1;
      }
      await rm(path, { force: true });
      this.remove(entry);
    }
    return delivered;
  }

  /** Removes the directory when nothing is left in it (a spool per Redis prefix would otherwise pile up). */
  async close(): Promise<void> {
    if (this.entries.length === 0) await rmdir(this.dir).catch(() => {});
  }

  private remove(entry: SpoolEntry) {
    const index = this.entries.indexOf(entry);
    if (index === -1) return;
    this.entries.splice(index, 1);
    this.bytes -= entry.bytes;
    this.refusedSinceRemoval = false;
  }
}

/** A rename is durable only once the directory holding it is. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
