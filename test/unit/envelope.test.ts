import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { AppError } from '../../src/shared/errors.js';
import {
  isKnownItemType,
  itemCategories,
  knownItemTypes,
  parseEnvelope,
  parseEnvelopeHeader,
  parseJsonItem,
  type EnvelopeItemHeader,
} from '../../src/ingest/sentry/envelope.js';

const EVENT_ID = '9ec79c33ec9942ab8353589fcb2e04dc';
const envelopeHeader = {
  event_id: EVENT_ID,
  sent_at: '2025-01-02T03:04:05.678Z',
  sdk: { name: 'sentry.javascript.node', version: '11.12.0' },
  trace: { trace_id: '4c79f60c11214eb38604f4ae0781bfb2', public_key: 'e12d836b15bb49d7bbf99e64295d995b', environment: 'production' },
};
const event = {
  event_id: EVENT_ID,
  timestamp: 1735787045.678,
  platform: 'node',
  level: 'error',
  exception: { values: [{ type: 'TypeError', value: "Cannot read properties of undefined (reading 'id')" }] },
};
// Bytes an attachment may hold: NUL, 0xff, and newlines that must not end the payload early.
const attachmentBytes = Buffer.from([0x00, 0x0a, 0xff, 0x7b, 0x0a, 0x0a, 0x7d, 0x0d, 0x0a, 0x01]);
const recording = Buffer.concat([Buffer.from('{"segment_id":0}\n'), gzipSync('[{"type":4,"timestamp":1}]')]);

const json = (value: unknown) => JSON.stringify(value);
const bytes = (...parts: (string | Buffer)[]) => Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)));

function realisticEnvelope(trailingNewline: boolean): Buffer {
  return bytes(
    json(envelopeHeader), '\n',
    json({ type: 'event' }), '\n',
    json(event), '\n',
    json({ type: 'attachment', length: attachmentBytes.length, filename: 'core.bin', content_type: 'application/octet-stream' }), '\n',
    attachmentBytes, '\n',
    json({ type: 'replay_recording', length: recording.length }), '\n',
    recording,
    trailingNewline ? '\n' : '',
  );
}

function expectMalformed(body: Buffer | string, reason: RegExp, limits?: Parameters<typeof parseEnvelope>[1]) {
  const input = typeof body === 'string' ? Buffer.from(body) : body;
  let thrown: unknown;
  try {
    parseEnvelope(input, limits);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(AppError);
  expect(thrown).toMatchObject({ code: 'invalid_request', status: 400 });
  expect((thrown as AppError).message).toMatch(reason);
}

describe('parseEnvelope on what SDKs send', () => {
  test.each([true, false])('event without length, binary attachment and replay recording (trailing newline: %s)', (trailing) => {
    const envelope = parseEnvelope(realisticEnvelope(trailing));
    expect(envelope.header).toEqual(envelopeHeader);
    expect(envelope.items.map((item) => item.header)).toEqual([
      { type: 'event' },
      { type: 'attachment', length: attachmentBytes.length, filename: 'core.bin', content_type: 'application/octet-stream' },
      { type: 'replay_recording', length: recording.length },
    ]);
    const [eventItem, attachment, replay] = envelope.items;
    expect(parseJsonItem(eventItem!)).toEqual(event);
    expect(Buffer.compare(attachment!.payload, attachmentBytes)).toBe(0);
    expect(Buffer.compare(replay!.payload, recording)).toBe(0);
  });

  test('an empty envelope header {} and no items', () => {
    expect(parseEnvelope(Buffer.from('{}'))).toEqual({ header: {}, items: [] });
    expect(parseEnvelope(Buffer.from('{}\n'))).toEqual({ header: {}, items: [] });
  });

  test('length 0 is an empty payload, followed by a newline or the end', () => {
    const envelope = parseEnvelope(Buffer.from('{}\n{"type":"attachment","length":0}\n\n{"type":"attachment","length":0}'));
    expect(envelope.items).toHaveLength(2);
    expect(envelope.items.map((item) => item.payload.length)).toEqual([0, 0]);
  });

  test('without length a payload runs to the next newline or the end, and may be empty', () => {
    const envelope = parseEnvelope(Buffer.from('{}\n{"type":"attachment"}\nhello\n{"type":"attachment"}\n\n{"type":"attachment"}\nworld'));
    expect(envelope.items.map((item) => item.payload.toString())).toEqual(['hello', '', 'world']);
    expect(parseEnvelope(Buffer.from('{}\n{"type":"client_report"}')).items[0]!.payload.length).toBe(0);
  });

  test('unknown item types are returned for the caller to skip', () => {
    const envelope = parseEnvelope(Buffer.from('{}\n{"type":"nel"}\n[]\n{"type":"event"}\n{}\n'));
    expect(envelope.items.map((item) => item.header.type)).toEqual(['nel', 'event']);
    expect(envelope.items.map((item) => isKnownItemType(item.header.type))).toEqual([false, true]);
  });

  test('"length": null means no length, as in Relay', () => {
    const [item] = parseEnvelope(Buffer.from('{}\n{"type":"event","length":null}\n{"a":1}\n')).items;
    expect(item!.header).toEqual({ type: 'event' });
    expect(parseJsonItem(item!)).toEqual({ a: 1 });
  });

  test('CRLF: accepted after headers and kept in implicit-length JSON payloads; not after a length-delimited payload', () => {
    const crlf = parseEnvelope(Buffer.from('{"event_id":"x"}\r\n{"type":"event"}\r\n{"level":"error"}\r\n'));
    expect(crlf.header).toEqual({ event_id: 'x' });
    expect(crlf.items[0]!.payload.toString()).toBe('{"level":"error"}\r');
    expect(parseJsonItem(crlf.items[0]!)).toEqual({ level: 'error' });
    expectMalformed('{}\r\n{"type":"attachment","length":3}\r\nabc\r\n', /followed by byte 0x0d, not a newline/);
  });

  test('blank lines between items and after the last one are skipped, as Relay skips whitespace before a header', () => {
    const envelope = parseEnvelope(Buffer.from('\n{}\n{"type":"event"}\n{}\n\n\n{"type":"event"}\n{}\n\n'));
    expect(envelope.items).toHaveLength(2);
  });
});

describe('parseEnvelope refuses malformed input with invalid_request', () => {
  test('empty input', () => expectMalformed('', /envelope is empty/));
  test('envelope header that is not JSON', () => expectMalformed('{"event_id":\n{"type":"event"}\n{}', /envelope header is not valid one-line JSON/));
  test('envelope header that is not an object', () => expectMalformed('[1,2]\n', /envelope header must be a JSON object/));
  test('item header that is not JSON', () => expectMalformed('{}\n{"type":"event"\n{}', /item 1 header is not valid one-line JSON/));
  test('item header without type', () => expectMalformed('{}\n{"length":2}\n{}', /item 1 header needs a non-empty string "type"/));
  test('item header with a non-string type', () => expectMalformed('{}\n{"type":1}\n{}', /non-empty string "type"/));
  test.each(['-1', '1.5', '"3"', 'true', '1e300'])('item length %s', (length) =>
    expectMalformed(`{}\n{"type":"attachment","length":${length}}\nabc`, /"length" must be a non-negative integer/),
  );
  test('truncated payload: length runs past the end', () =>
    expectMalformed('{}\n{"type":"attachment","length":100}\nonly forty bytes of the promised hundred..', /declares length 100 but only 42 bytes follow/),
  );
  test('wrong length followed by garbage instead of a newline', () =>
    expectMalformed('{}\n{"type":"attachment","length":3}\nabcdef\n', /item 1 \(attachment\) payload of length 3 is followed by byte 0x64, not a newline/),
  );
  test('a second item whose length is wrong names that item', () =>
    expectMalformed('{}\n{"type":"event"}\n{}\n{"type":"attachment","length":2}\nabc', /item 2 \(attachment\)/),
  );
  test('payload lines that are not headers after an implicit-length item', () =>
    expectMalformed('{}\n{"type":"event"}\n{"a":1}\n{"b":2}\n', /item 2 header needs a non-empty string "type"/),
  );

  test('an envelope header line over the limit is refused without being parsed', () => {
    const huge = Buffer.from(`{"pad":"${'x'.repeat(70_000)}"}\n{"type":"event"}\n{}`);
    expectMalformed(huge, /envelope header exceeds 65536 bytes/);
    expectMalformed(Buffer.from(`{"pad":"${'x'.repeat(100)}"}`), /exceeds 64 bytes/, { maxHeaderBytes: 64 });
  });

  test('an item header line over the limit, even without any newline after it', () => {
    expectMalformed(Buffer.from(`{}\n{"type":"event","pad":"${'x'.repeat(70_000)}"}`), /item 1 header exceeds 65536 bytes/);
    // Exactly at the limit is fine.
    const header = json({ type: 'event', pad: 'x'.repeat(100) });
    expect(parseEnvelope(Buffer.from(`{}\n${header}\n{}`), { maxHeaderBytes: header.length }).items).toHaveLength(1);
  });

  test('too many items', () => {
    const item = '{"type":"client_report"}\n{}\n';
    expect(parseEnvelope(Buffer.from(`{}\n${item.repeat(1000)}`)).items).toHaveLength(1000);
    expectMalformed(`{}\n${item.repeat(1001)}`, /more than 1000 items/);
    expectMalformed(`{}\n${item.repeat(3)}`, /more than 2 items/, { maxItems: 2 });
  });
});

describe('parseEnvelopeHeader (the first line alone, read before the rest of a key-less body)', () => {
  test('reads the header from the first line, whatever follows it, even cut off mid-item', () => {
    const dsn = 'https://e12d836b15bb49d7bbf99e64295d995b@o1.ingest.example/42';
    expect(parseEnvelopeHeader(Buffer.from(`\n${JSON.stringify({ ...envelopeHeader, dsn })}\n{"type":"ev`))).toEqual({ ...envelopeHeader, dsn });
  });
  test.each([
    ['', /envelope is empty/],
    ['not json\n', /envelope header is not valid one-line JSON/],
    ['[1]\n', /envelope header must be a JSON object/],
    [`{"pad":"${'x'.repeat(70_000)}"}\n`, /envelope header exceeds 65536 bytes/],
  ])('%#: a head that names no header is invalid_request', (head, message) =>
    expect(() => parseEnvelopeHeader(Buffer.from(head))).toThrow(expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(message) })),
  );
});

describe('parseJsonItem', () => {
  const item = (payload: string) => ({ header: { type: 'event' }, payload: Buffer.from(payload) });
  test('parses an object payload', () => expect(parseJsonItem(item('{"level":"warning"}'))).toEqual({ level: 'warning' }));
  test.each(['{"level":', '', '\xff'])('bad JSON %p is invalid_request', (payload) =>
    expect(() => parseJsonItem(item(payload))).toThrow(expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/event item is not valid JSON/) })),
  );
  test.each(['[]', 'null', '"text"', '42'])('non-object %p is invalid_request', (payload) =>
    expect(() => parseJsonItem(item(payload))).toThrow(expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/must be a JSON object/) })),
  );
});

describe('item types and rate-limit categories', () => {
  test('map each known type to its category (PROTOCOLS.md)', () => {
    expect(itemCategories).toEqual({
      event: 'error', transaction: 'transaction', span: 'span', log: 'log_item', trace_metric: 'trace_metric',
      check_in: 'monitor', session: 'session', sessions: 'session', feedback: 'feedback', user_report: 'feedback',
      replay_event: 'replay', replay_recording: 'replay', attachment: 'attachment', client_report: 'internal',
      profile: 'profile', profile_chunk: 'profile', statsd: 'profile',
    });
    expect(knownItemTypes).toHaveLength(17);
    expect(isKnownItemType('toString')).toBe(false);
  });
});

interface GeneratedEnvelope {
  header: Record<string, unknown>;
  items: { header: EnvelopeItemHeader; payload: Buffer }[];
  trailingNewline: boolean;
}

describe('parseEnvelope properties', () => {
  /** Accepts or refuses with invalid_request — never another exception. */
  function parsesOrRefuses(input: Buffer): void {
    try {
      parseEnvelope(input, { maxHeaderBytes: 256, maxItems: 20 });
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('invalid_request');
    }
  }

  // Pieces of envelope syntax, so that random sequences often come close to a valid envelope.
  const envelopeToken = fc.constantFrom(
    '{', '}', '"', ':', ',', '\n', '\n', '\n', '\r', ' ', '[', ']', '0', '3', '-1', 'null', '\u00ff',
    '{}', '[]', '"text"', '{"type":"event"}', '{"type":"attachment","length":', '{"type":', '"length":', '{"type":"x","length":null}',
  );
  const itemArb = fc.oneof(
    fc.record({
      header: fc.record({ type: fc.oneof(fc.constantFrom(...knownItemTypes), fc.string({ minLength: 1 })) }),
      payload: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.boolean())).map((value) => Buffer.from(json(value))),
    }),
    fc.record({
      header: fc.record({ type: fc.constantFrom('attachment', 'replay_recording'), filename: fc.string() }, { requiredKeys: ['type'] }),
      payload: fc.uint8Array({ maxLength: 64 }).map((array) => Buffer.from(array)),
    }).map(({ header, payload }) => ({ header: { ...header, length: payload.length } as EnvelopeItemHeader, payload })),
  );
  const envelopeArb: fc.Arbitrary<GeneratedEnvelope> = fc.record({
    header: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
    items: fc.array(itemArb, { maxLength: 6 }),
    trailingNewline: fc.boolean(),
  });
  const serialize = ({ header, items, trailingNewline }: GeneratedEnvelope) =>
    bytes(json(header), ...items.flatMap((item) => ['\n', json(item.header), '\n', item.payload]), trailingNewline ? '\n' : '');

  test('arbitrary bytes parse or are refused with invalid_request', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (array) => parsesOrRefuses(Buffer.from(array))), { numRuns: 2000 });
    fc.assert(fc.property(fc.array(envelopeToken, { maxLength: 80 }), (tokens) => parsesOrRefuses(Buffer.from(tokens.join('')))), { numRuns: 2000 });
  });

  test('serialized envelopes parse back to the same header and items', () => {
    fc.assert(
      fc.property(envelopeArb, (envelope) => {
        const parsed = parseEnvelope(serialize(envelope));
        expect(parsed.header).toEqual(envelope.header);
        expect(parsed.items.map((item) => item.header)).toEqual(envelope.items.map((item) => item.header));
        parsed.items.forEach((item, i) => expect(Buffer.compare(item.payload, envelope.items[i]!.payload)).toBe(0));
      }),
      { numRuns: 500 },
    );
  });

  test('mutated valid envelopes parse or are refused with invalid_request', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.oneof(envelopeToken, fc.string({ maxLength: 8 })) }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(envelopeArb, fc.array(mutation, { minLength: 1, maxLength: 4 }), (envelope, mutations) => {
        let body = serialize(envelope);
        for (const m of mutations) {
          const at = body.length === 0 ? 0 : m.at % body.length;
          if (m.kind === 'flip' && body.length > 0) body = bytes(body.subarray(0, at), Buffer.from([m.byte]), body.subarray(at + 1));
          if (m.kind === 'delete') body = bytes(body.subarray(0, at), body.subarray(at + m.count));
          if (m.kind === 'insert') body = bytes(body.subarray(0, at), m.text, body.subarray(at));
          if (m.kind === 'truncate') body = body.subarray(0, at);
        }
        parsesOrRefuses(body);
      }),
      { numRuns: 2000 },
    );
  });
});
