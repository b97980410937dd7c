import fc from 'fast-check';
import {
  crashingFrames,
  culprit,
  groupingHash,
  issueTitle,
  normalizeMessage,
  type SentryEventLike,
  type SentryExceptionLike,
  type SentryFrameLike,
} from '../../src/shared/features/issues/grouping.js';

const frame = (fields: SentryFrameLike): SentryFrameLike => ({ lineno: 1, colno: 1, ...fields });

/** A Node error as @sentry/node sends it: frames oldest first, the throwing frame last. */
function nodeError(overrides: { type?: string; value?: string; frames?: SentryFrameLike[]; transaction?: string } = {}): SentryEventLike {
  return {
    platform: 'node',
    ...(overrides.transaction ? { transaction: overrides.transaction } : {}),
    exception: {
      values: [
        {
          type: overrides.type ?? 'TypeError',
          value: overrides.value ?? "Cannot read properties of undefined (reading 'id')",
          mechanism: { type: 'onuncaughtexception', handled: false } as SentryExceptionLike['mechanism'],
          stacktrace: {
            frames: overrides.frames ?? [
              frame({ filename: '/srv/app/node_modules/express/lib/router/layer.js', module: 'express.lib.router:layer', function: 'Layer.handle [as handle_request]', in_app: false, lineno: 95, colno: 5 }),
              frame({ filename: '/srv/app/dist/routes/orders.js', module: 'dist.routes:orders', function: 'Object.loadOrder', in_app: true, lineno: 40, colno: 12, context_line: '  const order = await findOrder(req.params.id);' }),
              frame({ filename: '/srv/app/dist/services/orders.js', module: 'dist.services:orders', function: 'findOrder', in_app: true, lineno: 17, colno: 30, context_line: '  return cache.get(user.id);' }),
            ],
          },
        },
      ],
    },
  };
}

/** The stored frame list of a `nodeError` event, to edit in place. */
const framesOfFirstException = (event: SentryEventLike): SentryFrameLike[] =>
  (event.exception as { values: SentryExceptionLike[] }).values[0]!.stacktrace!.frames!;

/** Same event, every frame moved to other line/column numbers (a deploy that shifted code). */
function moved(event: SentryEventLike, by: number): SentryEventLike {
  const copy = structuredClone(event);
  for (const f of framesOfFirstException(copy)) {
    f.lineno = (f.lineno ?? 0) + by;
    f.colno = (f.colno ?? 0) + by * 3;
  }
  return copy;
}

const messageEvent = (message: string): SentryEventLike => ({ platform: 'python', message });

describe('groupingHash: stack traces', () => {
  test('the same error thrown from other lines and columns is the same issue', () => {
    const first = groupingHash(nodeError());
    expect(first.kind).toBe('stacktrace');
    expect(first.hash).toMatch(/^[0-9a-f]{32}$/);
    expect(groupingHash(moved(nodeError(), 7))).toEqual(first);
    expect(first.components.join('\n')).not.toMatch(/\b(40|17|12|30)\b/);
  });

  test('a different exception type at the same place is a different issue', () => {
    expect(groupingHash(nodeError({ type: 'RangeError' })).hash).not.toBe(groupingHash(nodeError()).hash);
  });

  test('with a stack trace the exception value does not split issues', () => {
    const a = groupingHash(nodeError({ value: 'order 1 has no customer' }));
    const b = groupingHash(nodeError({ value: 'something else entirely' }));
    expect(b.hash).toBe(a.hash);
    expect(a.components.some((c) => c.startsWith('value:'))).toBe(false);
  });

  test('in-app frames are preferred: library frames do not change the hash when in-app frames exist', () => {
    const base = nodeError();
    const otherLibrary = structuredClone(base);
    framesOfFirstException(otherLibrary)[0] = frame({ filename: '/srv/app/node_modules/fastify/lib/route.js', function: 'preHandlerCallback', in_app: false });
    expect(groupingHash(otherLibrary).hash).toBe(groupingHash(base).hash);
    expect(groupingHash(base).components.join('\n')).not.toContain('express');

    const otherAppFrame = structuredClone(base);
    framesOfFirstException(otherAppFrame)[2]!.function = 'findInvoice';
    expect(groupingHash(otherAppFrame).hash).not.toBe(groupingHash(base).hash);
  });

  test('without any in-app frame, all frames count', () => {
    const libraryOnly = (fn: string): SentryEventLike =>
      nodeError({ frames: [frame({ module: 'pg.lib:client', function: 'Client.connect' }), frame({ module: 'pg.lib:connection', function: fn })] });
    expect(groupingHash(libraryOnly('connect')).hash).toBe(groupingHash(moved(libraryOnly('connect'), 3)).hash);
    expect(groupingHash(libraryOnly('connect')).hash).not.toBe(groupingHash(libraryOnly('end')).hash);
  });

  test('minified browser frames group across builds: hashed bundle names, query strings and columns are ignored', () => {
    const minified = 'function n(t){return t.items.map(function(e){return e.price*e.qty})}'.repeat(3);
    const browserError = (bundle: string, colno: number, contextLine: string): SentryEventLike => ({
      platform: 'javascript',
      exception: {
        values: [
          {
            type: 'TypeError',
            value: "Cannot read properties of null (reading 'items')",
            stacktrace: {
              frames: [
                { filename: `https://cdn.example.com/static/js/${bundle}`, abs_path: `https://cdn.example.com/static/js/${bundle}`, function: 'HTMLButtonElement.onClick', lineno: 1, colno, in_app: true, context_line: contextLine },
                { filename: `https://cdn.example.com/static/js/${bundle}`, function: 'Object.computeTotal', lineno: 2, colno: colno + 90, in_app: true },
              ],
            },
          },
        ],
      },
    });
    const first = groupingHash(browserError('main.3f2a1b9c.js?v=1', 10423, minified));
    expect(groupingHash(browserError('main.9e8d7c6b.js?v=2#top', 11871, `${minified}/* rebuilt */`)).hash).toBe(first.hash);
    expect(first.components).toEqual(['frame:["main.js","onClick",null]', 'frame:["main.js","computeTotal",null]', 'type:TypeError']);
    // Vite/Rollup name chunks `name-<8 char hash>`.
    expect(groupingHash(browserError('index-BxKq3w9a.js', 5, minified)).components[0]).toBe('frame:["index.js","onClick",null]');
  });

  test('short context lines are part of the frame; long (minified) ones are not', () => {
    const withLine = (line: string) =>
      groupingHash(nodeError({ frames: [frame({ module: 'dist.jobs:sync', function: 'sync', in_app: true, context_line: line })] }));
    expect(withLine('    throw new Error("boom")').hash).toBe(withLine('throw   new Error("boom")').hash);
    expect(withLine('throw new Error("boom")').hash).not.toBe(withLine('throw new Error("bang")').hash);
    expect(withLine(`a${'x'.repeat(130)}`).hash).toBe(withLine(`b${'y'.repeat(130)}`).hash);
  });

  test('JS function names lose receivers and async/new markers; anonymous names are ignored', () => {
    const named = (fn: string) => groupingHash(nodeError({ frames: [frame({ module: 'dist:worker', function: fn, in_app: true })] })).hash;
    expect(named('Object.processJob')).toBe(named('processJob'));
    expect(named('async Worker.processJob')).toBe(named('processJob'));
    expect(named('Object.<anonymous>')).toBe(named('?'));
    expect(named('<anonymous>')).toBe(named('?'));
    expect(named('processJob')).not.toBe(named('?'));
  });

  test('direct recursion counts once, however deep', () => {
    const recursive = (depth: number) =>
      nodeError({
        frames: [
          frame({ module: 'dist:tree', function: 'render', in_app: true, lineno: 3 }),
          ...Array.from({ length: depth }, (_, i) => frame({ module: 'dist:tree', function: 'walk', in_app: true, lineno: 20 + (i % 2) })),
        ],
      });
    const shallow = groupingHash(recursive(1));
    expect(groupingHash(recursive(50))).toEqual(shallow);
    expect(shallow.components).toEqual(['frame:["dist:tree","render",null]', 'frame:["dist:tree","walk",null]', 'type:TypeError']);
  });

  test('a frame with no module, file or function contributes nothing', () => {
    const bare = nodeError();
    framesOfFirstException(bare).push({ context_line: 'eval(code)', in_app: true, filename: '<anonymous>' });
    expect(groupingHash(bare).hash).toBe(groupingHash(nodeError()).hash);
  });

  test('every exception of a chain contributes its type, except synthetic ones', () => {
    const chained = (causeType: string, synthetic: boolean): SentryEventLike => ({
      platform: 'python',
      exception: {
        values: [
          { type: causeType, value: 'timed out', mechanism: { synthetic }, stacktrace: { frames: [frame({ module: 'app.db', function: 'query', in_app: true })] } },
          { type: 'ServiceUnavailable', value: 'try later', stacktrace: { frames: [frame({ module: 'app.views', function: 'orders', in_app: true })] } },
        ],
      },
    });
    expect(groupingHash(chained('TimeoutError', false)).components).toEqual([
      'frame:["app.db","query",null]',
      'type:TimeoutError',
      'frame:["app.views","orders",null]',
      'type:ServiceUnavailable',
    ]);
    expect(groupingHash(chained('TimeoutError', false)).hash).not.toBe(groupingHash(chained('OSError', false)).hash);
    // A synthetic type is whatever the SDK invented for a thrown non-Error, so it must not split issues.
    expect(groupingHash(chained('TimeoutError', true)).hash).toBe(groupingHash(chained('Object', true)).hash);
    expect(groupingHash(chained('Object', true)).components).not.toContain('type:Object');
  });

  test('a message event with an attached stack trace groups by the stack trace', () => {
    const withStack = (message: string): SentryEventLike => ({
      platform: 'node',
      message,
      stacktrace: { frames: [frame({ module: 'dist:billing', function: 'charge', in_app: true })] },
    });
    const grouping = groupingHash(withStack('charge failed'));
    expect(grouping.kind).toBe('stacktrace');
    expect(groupingHash(withStack('a different text')).hash).toBe(grouping.hash);
  });
});

describe('groupingHash: exceptions without frames and messages', () => {
  const bareException = (type: string, value: string): SentryEventLike => ({ platform: 'node', exception: { values: [{ type, value }] } });

  test('without a stack trace, type and normalised value decide', () => {
    const a = groupingHash(bareException('QueryFailed', 'duplicate key 42 for user 9f1c2e3d-0000-4000-8000-123456789abc'));
    expect(a.kind).toBe('exception');
    expect(a.components).toEqual(['type:QueryFailed', 'value:duplicate key <int> for user <uuid>']);
    expect(groupingHash(bareException('QueryFailed', 'duplicate key 7 for user 0b0b0b0b-1111-4222-8333-444444444444')).hash).toBe(a.hash);
    expect(groupingHash(bareException('QueryFailed', 'lock wait timeout')).hash).not.toBe(a.hash);
  });

  test('messages that differ only in ids, numbers, uuids, emails, ips, urls and timestamps are one issue', () => {
    const a = groupingHash(
      messageEvent('Payment 1234 for ann@example.com from 10.0.0.1 failed at 2024-05-01T10:00:00Z (order 550e8400-e29b-41d4-a716-446655440000, https://pay.example.com/r/1?x=2, took 1.25s)'),
    );
    const b = groupingHash(
      messageEvent('Payment 98 for bob.smith@corp.io from 192.168.7.20 failed at 2025-12-31T23:59:59.999+01:00 (order 123e4567-e89b-12d3-a456-426614174000, https://pay.example.com/r/77, took 0.5s)'),
    );
    expect(a.kind).toBe('message');
    expect(b.hash).toBe(a.hash);
    expect(groupingHash(messageEvent('Refund 1234 failed')).hash).not.toBe(a.hash);
  });

  test('the logentry template groups, not the formatted text', () => {
    const logged = (formatted: string, param: string): SentryEventLike => ({ logentry: { message: 'Cache miss for %s', formatted, params: [param] } as SentryEventLike['logentry'] });
    expect(groupingHash(logged('Cache miss for users', 'users')).hash).toBe(groupingHash(logged('Cache miss for orders', 'orders')).hash);
  });

  test('an exception that contributes nothing falls back to the message', () => {
    const event: SentryEventLike = { message: 'queue 3 stalled', exception: { values: [{ mechanism: { synthetic: true }, type: 'Error' }] } };
    expect(groupingHash(event)).toMatchObject({ kind: 'message', components: ['message:queue <int> stalled'] });
  });
});

describe('groupingHash: fingerprints', () => {
  test('an explicit fingerprint replaces the default grouping', () => {
    const a = groupingHash({ ...nodeError(), fingerprint: ['my-group'] });
    const b = groupingHash({ ...messageEvent('something unrelated'), fingerprint: ['my-group'] });
    expect(a).toEqual({ hash: b.hash, components: ['fingerprint:my-group'], kind: 'fingerprint' });
    expect(groupingHash({ ...nodeError(), fingerprint: ['other-group'] }).hash).not.toBe(a.hash);
  });

  test('{{ default }} expands to the default components, combined with the extra entries', () => {
    const base = groupingHash(nodeError());
    const tenantA = groupingHash({ ...nodeError(), fingerprint: ['{{default}}', 'tenant-a'] });
    expect(tenantA.kind).toBe('fingerprint');
    expect(tenantA.components).toEqual([...base.components, 'fingerprint:tenant-a']);
    expect(groupingHash({ ...moved(nodeError(), 5), fingerprint: [' {{  default }} ', 'tenant-a'] }).hash).toBe(tenantA.hash);
    expect(groupingHash({ ...nodeError(), fingerprint: ['{{ default }}', 'tenant-b'] }).hash).not.toBe(tenantA.hash);
    expect(tenantA.hash).not.toBe(base.hash);
    // A fingerprint that only says "default" is the default grouping.
    expect(groupingHash({ ...nodeError(), fingerprint: ['{{ default }}'] })).toEqual(base);
  });

  test('numbers in a fingerprint are used as text', () => {
    expect(groupingHash({ ...nodeError(), fingerprint: ['shard', 3] }).components).toEqual(['fingerprint:shard', 'fingerprint:3']);
  });
});

describe('normalizeMessage', () => {
  test.each([
    ['email', 'no account for jane.doe+test@example.co.uk', 'no account for <email>'],
    ['url', 'GET https://api.example.com/v1/users/42?expand=1 returned 503', 'GET <url> returned <int>'],
    ['url with any scheme', 'cannot reach postgres://app:secret@db:5432/app', 'cannot reach <url>'],
    ['hostname', 'getaddrinfo ENOTFOUND db-3.prod.example.com', 'getaddrinfo ENOTFOUND <hostname>'],
    ['ipv4 and port', 'connect ECONNREFUSED 10.0.0.12:5432', 'connect ECONNREFUSED <ip>:<int>'],
    ['ipv6', 'connect to [2001:db8::8a2e:370:7334]:443 and fe80::1%eth0 and ::ffff:192.168.1.1', 'connect to [<ip>]:<int> and <ip> and <ip>'],
    ['uuid', 'order 550e8400-e29b-41d4-a716-446655440000 missing', 'order <uuid> missing'],
    ['sha1 and md5', 'blob 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 etag d41d8cd98f00b204e9800998ecf8427e', 'blob <hash> etag <hash>'],
    ['iso dates', 'at 2024-01-02T10:30:00.123Z, 2024-01-02 10:30:00+02:00, 2024-01-02 and 20240102T103000Z', 'at <date>, <date>, <date> and <date>'],
    ['http and js dates', 'Tue, 02 Jan 2024 10:00:00 GMT / Tue Jan 02 2024 10:00:00 GMT+0000 (Coordinated Universal Time)', '<date> / <date>'],
    ['other dates and times', 'Jan 2, 2024; 01/02/2024; 10:30:15; 3:45 PM', '<date>; <date>; <date>; <date>'],
    ['hex', 'pointer 0x7ffeefbff5c8, token deadbeef12, DEADBEEF12', 'pointer <hex>, token <hex>, <hex>'],
    ['float', 'took 1.5 s, delta -3.25, rate 1.5e10', 'took <float> s, delta <float>, rate <float>'],
    ['int', 'retry 3 of 5, offset -4', 'retry <int> of <int>, offset <int>'],
    ['numbers with units', 'took 1.25s, waited 500ms, 3rd try', 'took <float>s, waited <int>ms, <int>rd try'],
    ['url before punctuation', 'see https://status.example.com/incidents/9, then retry.', 'see <url>, then retry.'],
  ])('%s', (_name, input, expected) => {
    expect(normalizeMessage(input)).toBe(expected);
  });

  test('leaves words, identifiers and code alone', () => {
    const untouched = 'user42 cannot call Foo::bar() on this.state in main.js (std::vector, DeadBeef12, deadbeef, abc-def)';
    expect(normalizeMessage(untouched)).toBe(untouched);
    expect(normalizeMessage('at app.js:10:15 in abc-123')).toBe('at app.js:<int>:<int> in abc-<int>');
  });

  test('keeps the first two non-empty lines, trimmed', () => {
    expect(normalizeMessage('\n  Query failed  \n\n  SELECT 1\n  FROM users WHERE id = 7\n')).toBe('Query failed\nSELECT <int>');
  });

  test('stays fast on a huge, pattern-like message', () => {
    const hostile = `${'a.'.repeat(200_000)} ${'1:'.repeat(200_000)}`;
    const started = performance.now();
    expect(normalizeMessage(hostile).startsWith('a.a.')).toBe(true);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('issueTitle, culprit and crashingFrames', () => {
  test('the title is Type: value of the newest exception, truncated', () => {
    expect(issueTitle(nodeError())).toBe("TypeError: Cannot read properties of undefined (reading 'id')");
    const long = issueTitle(nodeError({ value: `${'x'.repeat(300)}\nsecond line` }));
    expect(long).toBe(`TypeError: ${'x'.repeat(200)}…`);
    expect(issueTitle({ exception: { values: [{ type: 'Cause', value: 'inner' }, { type: 'Wrapper' }] } })).toBe('Wrapper');
  });

  test('a message event is titled by its formatted message; an empty event is unlabeled', () => {
    expect(issueTitle({ logentry: { message: 'Cache miss for %s', formatted: 'Cache miss for users' } })).toBe('Cache miss for users');
    expect(issueTitle({ message: { formatted: 'Disk almost full' } })).toBe('Disk almost full');
    expect(issueTitle(messageEvent('\nWorker crashed\nstack…'))).toBe('Worker crashed');
    expect(issueTitle({})).toBe('<unlabeled event>');
  });

  test('SDK 11 captureMessage (a typeless synthetic exception) is titled by the message alone', () => {
    const captured = { message: 'Payment timed out', exception: { values: [{ value: 'Payment timed out', mechanism: { type: 'generic', handled: true, synthetic: true } }] } };
    expect(issueTitle(captured)).toBe('Payment timed out');
    expect(issueTitle({ exception: { values: [{ value: 'no type, not synthetic' }] } })).toBe('Error: no type, not synthetic');
  });

  test('the culprit is the transaction, else the crashing in-app frame', () => {
    expect(culprit(nodeError({ transaction: 'GET /orders/:id' }))).toBe('GET /orders/:id');
    expect(culprit(nodeError())).toBe('findOrder (dist.services:orders)');
    const libraryOnly = nodeError({ frames: [frame({ filename: 'app.js', function: 'main' }), frame({ filename: '/srv/node_modules/pg/lib/client.js', function: '?' })] });
    expect(culprit(libraryOnly)).toBe('/srv/node_modules/pg/lib/client.js');
    expect(culprit(messageEvent('no frames'))).toBeNull();
  });

  test('crashingFrames are the newest exception frames, crashing frame last', () => {
    const frames = crashingFrames(nodeError());
    expect(frames.map((f) => f.function)).toEqual(['Layer.handle [as handle_request]', 'Object.loadOrder', 'findOrder']);
    expect(crashingFrames({ stacktrace: { frames: [{ function: 'tick' }] } })).toEqual([{ function: 'tick' }]);
    expect(crashingFrames({})).toEqual([]);
  });
});

describe('properties', () => {
  const option = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
  const frameArb: fc.Arbitrary<SentryFrameLike> = fc.record(
    {
      filename: option(fc.constantFrom('app.js', '/srv/app/jobs.js', 'https://cdn.example.com/static/js/main.3f2a1b9c.js?v=1', '<anonymous>', '[native code]', 'node:internal/timers')),
      module: option(fc.constantFrom('app.jobs', 'dist:worker', '')),
      function: option(fc.constantFrom('run', 'Object.run', 'async run', '?', '<anonymous>', 'a', 'Foo.bar [as baz]')),
      lineno: option(fc.nat(5000)),
      colno: option(fc.nat(500)),
      in_app: option(fc.boolean()),
      context_line: option(fc.oneof(fc.constantFrom('return run(job);', '  throw err;'), fc.string({ maxLength: 200 }))),
      platform: option(fc.constantFrom('javascript', 'python')),
    },
    { requiredKeys: [] },
  );
  const stacktraceArb = fc.record({ frames: fc.array(frameArb, { maxLength: 6 }) });
  const exceptionArb: fc.Arbitrary<SentryExceptionLike> = fc.record(
    {
      type: option(fc.constantFrom('Error', 'TypeError', 'ValueError')),
      value: option(fc.oneof(fc.constantFrom('boom', 'id 42 missing'), fc.string({ maxLength: 60 }))),
      mechanism: option(fc.record({ synthetic: fc.boolean() })),
      stacktrace: option(stacktraceArb),
    },
    { requiredKeys: [] },
  );
  const eventArb: fc.Arbitrary<SentryEventLike> = fc.record(
    {
      platform: option(fc.constantFrom('javascript', 'node', 'python', 'ruby', 'java')),
      transaction: option(fc.constantFrom('GET /', 'job:sync')),
      fingerprint: option(fc.array(fc.oneof(fc.constantFrom('{{ default }}', '{{default}}', 'group-a'), fc.integer()), { maxLength: 3 })),
      exception: option(fc.record({ values: fc.array(exceptionArb, { maxLength: 3 }) })),
      stacktrace: option(stacktraceArb),
      message: option(fc.oneof(fc.string({ maxLength: 80 }), fc.record({ formatted: fc.string({ maxLength: 40 }) }, { requiredKeys: [] }))),
      logentry: option(fc.record({ message: fc.string({ maxLength: 40 }), formatted: fc.string({ maxLength: 40 }) }, { requiredKeys: [] })),
    },
    { requiredKeys: [] },
  );
  const allFrames = (event: SentryEventLike): SentryFrameLike[] => {
    const exception = event.exception;
    const exceptions = exception && !Array.isArray(exception) ? (exception.values ?? []) : [];
    return [...exceptions.flatMap((e) => e.stacktrace?.frames ?? []), ...(event.stacktrace?.frames ?? [])];
  };

  test('groupingHash is total and deterministic', () => {
    fc.assert(
      fc.property(eventArb, (event) => {
        const grouping = groupingHash(event);
        expect(grouping.hash).toMatch(/^[0-9a-f]{32}$/);
        expect(groupingHash(structuredClone(event))).toEqual(grouping);
        expect(typeof issueTitle(event)).toBe('string');
      }),
    );
  });

  test('line and column numbers never change the hash', () => {
    fc.assert(
      fc.property(eventArb, fc.func(option(fc.nat(100_000))), (event, position) => {
        const shifted = structuredClone(event);
        allFrames(shifted).forEach((f, i) => {
          f.lineno = position(i, 'line');
          f.colno = position(i, 'column');
        });
        expect(groupingHash(shifted).hash).toBe(groupingHash(event).hash);
      }),
    );
  });

  test('malformed events (any JSON where objects are expected) never throw', () => {
    const junk = fc.jsonValue({ maxDepth: 2 });
    const looseFrame = fc.oneof(junk, fc.dictionary(fc.constantFrom('filename', 'function', 'module', 'in_app', 'context_line', 'platform'), junk));
    const looseException = fc.oneof(junk, fc.record({ type: junk, value: junk, mechanism: junk, stacktrace: fc.oneof(junk, fc.record({ frames: fc.oneof(junk, fc.array(looseFrame)) })) }));
    const looseEvent = fc.record(
      {
        platform: junk,
        transaction: junk,
        fingerprint: junk,
        exception: fc.oneof(junk, fc.array(looseException), fc.record({ values: fc.oneof(junk, fc.array(looseException)) })),
        stacktrace: junk,
        message: junk,
        logentry: junk,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(looseEvent, (raw) => {
        const event = raw as unknown as SentryEventLike;
        expect(groupingHash(event).hash).toMatch(/^[0-9a-f]{32}$/);
        expect(issueTitle(event).length).toBeGreaterThan(0);
        expect(culprit(event) === null || typeof culprit(event) === 'string').toBe(true);
        expect(Array.isArray(crashingFrames(event))).toBe(true);
      }),
    );
  });
});
