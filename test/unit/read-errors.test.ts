import { toAppError } from '../../src/shared/http/errors.js';
import { readOnce } from '../../src/shared/views.js';

/** What FerretDB and MongoDB answer to a getMore whose cursor the server has closed. */
const cursorNotFound = () => Object.assign(new Error('cursor id 123 not found'), { code: 43, codeName: 'CursorNotFound' });

describe('a read whose cursor the server dropped', () => {
  test('is asked again once, and answers what the second read found', async () => {
    let calls = 0;
    const docs = await readOnce(async () => {
      calls++;
      if (calls === 1) throw cursorNotFound();
      return [{ n: 1 }];
    });
    expect(calls).toBe(2);
    expect(docs).toEqual([{ n: 1 }]);
  });

  test('failing again is answered as a read past its deadline (503), not an internal error', async () => {
    const error = await readOnce(async () => {
      throw cursorNotFound();
    }).catch((caught: unknown) => caught);
    const answer = toAppError(error);
    expect(answer.code).toBe('deadline_exceeded');
    expect(answer.status).toBe(503);
  });

  test('other errors are not retried', async () => {
    let calls = 0;
    await expect(
      readOnce(async () => {
        calls++;
        throw Object.assign(new Error('boom'), { code: 2 });
      }),
    ).rejects.toThrow('boom');
    expect(calls).toBe(1);
  });
});
