/**
 * Group commit for the writes that follow stored telemetry (issue counts, span rollups): one commit
 * runs at a time in a process and takes every item handed in while the one before it ran, so a
 * document that many flushes add to is written once for all of them.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A commit that takes longer than BUSY_COMMIT_MS says the store is busy: then, where gathering is
 * asked for, the next one begins no sooner than GATHER_MS after it began, so that it takes more
 * items. Such a commit costs the store about the same however many items it carries (one write per
 * issue or rollup document), and what it follows (the stored events and spans) is readable without
 * it. At a low rate a commit takes a few milliseconds and the next one begins at once.
 */
const BUSY_COMMIT_MS = 100;
const GATHER_MS = 1000;

/**
 * Answers a function that hands an item to `commit` and resolves once the commit that took it has
 * succeeded (rejects if that commit fails). With `gatherWhileBusy`, a busy store spaces the commits
 * out as above; without it the next commit begins as soon as the last ends.
 */
export function groupCommit<T>(commit: (items: T[]) => Promise<void>, { gatherWhileBusy }: { gatherWhileBusy: boolean }): (item: T) => Promise<void> {
  const waiting: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  let running = false;
  const run = async () => {
    running = true;
    while (waiting.length > 0) {
      const taken = waiting.splice(0);
      const began = performance.now();
      try {
        await commit(taken.map(({ item }) => item));
        for (const { resolve } of taken) resolve();
      } catch (error) {
        for (const { reject } of taken) reject(error);
      }
      const took = performance.now() - began;
      if (gatherWhileBusy && took > BUSY_COMMIT_MS && took < GATHER_MS) await sleep(GATHER_MS - took);
    }
    running = false;
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!running) void run();
    });
}
