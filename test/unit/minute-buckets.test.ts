import { minutesDown, newestMinutesFirst } from '../../src/shared/views.js';

/** Minutes 0..99 where only the listed ones hold documents (named after their minute). */
async function readBack(filled: number[], limit: number) {
  const reads: number[] = [];
  const found: string[] = [];
  await newestMinutesFirst(
    minutesDown(0, 99),
    async (minute) => {
      reads.push(minute);
      return filled.includes(minute) ? [`${minute}a`, `${minute}b`] : [];
    },
    (docs) => {
      found.push(...docs);
    },
    () => found.length > limit,
  );
  return { reads, found };
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
});
