import { minutesDown, newestMinutesFirst, type MinuteRounds } from '../../src/shared/views.js';

/**
 * Minutes 0..99 where only the listed ones hold documents (named after their minute), read for a
 * page of `limit`; `rounds` counts the rounds (reads started while none was in flight).
 */
async function readBack(filled: number[], limit: number, paced = false, expected?: (minute: number) => number | undefined) {
  const reads: number[] = [];
  const found: string[] = [];
  let inFlight = 0;
  let rounds = 0;
  const pace: MinuteRounds = { width: 1, ...(paced && { wanted: () => limit + 1 - found.length }), ...(expected && { expected }) };
  await newestMinutesFirst(
    minutesDown(0, 99),
    async (minute) => {
      if (inFlight++ === 0) rounds++;
      reads.push(minute);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return filled.includes(minute) ? [`${minute}a`, `${minute}b`] : [];
    },
    (docs) => {
      found.push(...docs);
    },
    () => found.length > limit,
    pace,
  );
  return { reads, found, rounds };
}

describe('reading minute buckets newest first', () => {
  test('documents come newest minute first, and reading stops once the page is full', async () => {
    const { reads, found } = await readBack([99, 98, 97, 10], 3);
    expect(found).toEqual(['99a', '99b', '98a', '98b']);
    expect(reads).toEqual([99, 98]);
  });

  test('a sparse window is read through, empty minutes several at a time, and results keep their order', async () => {
    const { reads, found } = await readBack([5], 10);
    expect(found).toEqual(['5a', '5b']);
    expect(reads).toHaveLength(100);
    // the order of the results does not depend on the widening
    expect((await readBack([50, 5, 60], 10)).found).toEqual(['60a', '60b', '50a', '50b', '5a', '5b']);
  });

  test('told how many the page still wants, a busy window of few matches a minute is read in few rounds and hardly past the page', async () => {
    const every = minutesDown(0, 99);
    const oneAtATime = await readBack(every, 40);
    const paced = await readBack(every, 40, true);
    expect(paced.found).toEqual(oneAtATime.found);
    expect(oneAtATime.rounds).toBe(21);
    // one minute first, then 16 (its yield says 20), then the 4 the page still needs
    expect(paced.rounds).toBe(3);
    expect(paced.reads).toHaveLength(21);
  });

  test('the paced read never reads more than 16 minutes in a round, and still widens over empty minutes', async () => {
    const sparse = await readBack([99, 3, 2, 1], 6, true);
    expect(sparse.found).toEqual(['99a', '99b', '3a', '3b', '2a', '2b', '1a', '1b']);
    const { reads, rounds } = await readBack(minutesDown(0, 99), 99, true);
    expect(reads).toHaveLength(50);
    // 1, then 16 a round (the yield says 49) until full
    expect(rounds).toBe(5);
  });

  test('where rollups say a minute should fill the page, a round ends there: the empty newest ones are passed one at a time, not by reading busy ones together', async () => {
    // the trace list's busy minute read by tick: its newest ticks not reached yet, each older tick full
    const busy = (minute: number) => (minute <= 92 ? 1000 : 10);
    const widened = await readBack(minutesDown(0, 92), 3, true);
    const expecting = await readBack(minutesDown(0, 92), 3, true, busy);
    expect(expecting.found).toEqual(['92a', '92b', '91a', '91b']);
    expect(expecting.found).toEqual(widened.found);
    // 99..93 in rounds of 1, 2 and 4, then 8 at once, of which two were needed
    expect(widened.reads).toEqual(minutesDown(85, 99));
    expect(expecting.reads).toEqual(minutesDown(91, 99));
    // where they say nothing, the rounds widen as before
    expect((await readBack(minutesDown(0, 92), 3, true, () => undefined)).reads).toEqual(widened.reads);
  });
});

