import fc, { type Arbitrary } from 'fast-check';

/** The subset of JSON Schema that zod's toJSONSchema writes into the OpenAPI document. */
export type JsonSchema = Record<string, any>;

/** Values for properties the caller knows better than the schema (real ids for `project_id`, say). */
export type Overrides = Record<string, Arbitrary<unknown>>;

/** Strings that have broken parsers, loggers and databases before: controls, lone surrogates, bidi, huge. */
export const oddString = (): Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(
      '',
      '\u0000',
      '\uD800',
      '\uDFFF\uD800',
      '\u202Eevil',
      '\uFEFF',
      'e\u0301\u0301\u0301',
      '𝕏🏳️‍🌈',
      '\r\nX-Injected: 1',
      '../../../../etc/passwd',
      '%00%2e%2e',
      '$where',
      'a.b',
      '__proto__',
      '{"$gt":""}',
      '1e999',
      'x'.repeat(70_000),
    ),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
  );

/** Numbers at and past every edge JSON can carry. */
export const hugeNumber = (): Arbitrary<number> =>
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 2, -(2 ** 63), 2 ** 64, 5e-324, -0, 0.1, -1, 1e21);

/** Objects whose keys would be operators or paths if they ever reached a MongoDB query or update as such. */
export const operatorKeyed = (): Arbitrary<Record<string, unknown>> =>
  fc
    .tuple(
      fc.constantFrom('$where', '$gt', '$ne', '$set', '$inc', '$expr', '$regex', 'a.b', 'x.$y', '.', '$', '__proto__', 'constructor', 'filter'),
      fc.constantFrom<unknown>('', 1, 'sleep(100)', { $gt: '' }, { $ne: null }, { 'a.b': 1 }, { $set: { role: 'owner' } }, ['$in']),
    )
    .map(([key, value]) => JSON.parse(`{${JSON.stringify(key)}:${JSON.stringify(value)}}`) as Record<string, unknown>);

/** JSON text nested `depth` levels deep, as objects or arrays. */
export const nestedText = (depth: number, kind: 'object' | 'array') => (kind === 'object' ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth));

function stringMatching(pattern: string): Arbitrary<string> | undefined {
  try {
    return fc.stringMatching(new RegExp(pattern));
  } catch {
    return undefined;
  }
}

function stringOf(schema: JsonSchema): Arbitrary<string> {
  if (schema.format === 'email') return fc.emailAddress();
  if (schema.format === 'uri') return fc.webUrl();
  if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.pattern) {
    const matching = stringMatching(schema.pattern);
    if (matching) return schema.maxLength ? matching.filter((s) => s.length <= schema.maxLength) : matching;
  }
  const minLength = schema.minLength ?? 0;
  return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(schema.maxLength ?? 24, 24)) });
}

const bound = (schema: JsonSchema, fallback: number, side: 'min' | 'max') => {
  const inclusive = side === 'min' ? schema.minimum : schema.maximum;
  const exclusive = side === 'min' ? schema.exclusiveMinimum : schema.exclusiveMaximum;
  if (inclusive !== undefined) return inclusive as number;
  if (exclusive !== undefined) return (exclusive as number) + (side === 'min' ? 1 : -1);
  return fallback;
};

/**
 * Values shaped by a schema: mostly valid, with every optional property sometimes present. Properties
 * named in `overrides` take the caller's values instead (a real project id rather than random text).
 */
export function valueOf(schema: JsonSchema, overrides: Overrides = {}, depth = 0): Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((alternative) => valueOf(alternative, overrides, depth)));
  switch (schema.type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({ min: bound(schema, -1_000_000, 'min'), max: bound(schema, 1_000_000, 'max') });
    case 'number':
      return fc.double({ min: bound(schema, -1e6, 'min'), max: bound(schema, 1e6, 'max'), noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = schema.minItems ?? 0;
      return fc.array(valueOf(schema.items ?? {}, overrides, depth + 1), { minLength, maxLength: Math.max(minLength, Math.min(schema.maxItems ?? 3, minLength + 3)) });
    }
    case 'object':
      return objectOf(schema, overrides, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(schema: JsonSchema, overrides: Overrides, depth: number): Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const model = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, overrides[name] ?? valueOf(property, overrides, depth + 1)]));
  const known = fc.record(model, { requiredKeys: (schema.required ?? []).filter((name: string) => name in properties) });
  if (typeof schema.additionalProperties !== 'object' || depth > 4) return known;
  const key = schema.propertyNames?.pattern ? (stringMatching(schema.propertyNames.pattern) ?? fc.string()) : fc.string({ maxLength: 12 });
  const extra = fc.dictionary(key, valueOf(schema.additionalProperties, overrides, depth + 1), { maxKeys: 3 });
  return fc.tuple(known, extra).map(([fixed, more]) => ({ ...more, ...fixed }));
}

/** A value of the schema's type that breaks its bounds: too long, too short, out of range, wrong type. */
export function outOfBounds(schema: JsonSchema): Arbitrary<unknown> {
  const edges: unknown[] = [null, true, [], {}, 'not-a-number', -1, 0];
  if (schema.maximum !== undefined) edges.push(schema.maximum + 1, schema.maximum * 1000 + 7);
  if (schema.minimum !== undefined) edges.push(schema.minimum - 1, schema.minimum - 0.5);
  if (schema.maxLength !== undefined) edges.push('y'.repeat(schema.maxLength + 1));
  if (schema.minLength) edges.push('');
  if (schema.maxItems !== undefined) edges.push(Array.from({ length: schema.maxItems + 1 }, () => 'z'));
  return fc.oneof(fc.constantFrom(...edges), hugeNumber(), oddString());
}

/** A changed copy of a valid value: one property removed, replaced by something hostile, or joined by an operator key. */
export function mutated(valid: Arbitrary<unknown>, schema: JsonSchema): Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const hostile = (name: string) => (properties[name] ? outOfBounds(properties[name]) : fc.oneof(oddString(), hugeNumber(), operatorKeyed(), fc.jsonValue({ maxDepth: 3 })));
  return fc
    .tuple(valid, fc.nat(), fc.constantFrom('drop', 'replace', 'operator', 'nest-operator', 'unknown'))
    .chain(([value, pick, how]) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return fc.oneof(fc.constant(value), operatorKeyed());
      const record = value as Record<string, unknown>;
      const names = Object.keys(record);
      const name = names.length ? names[pick % names.length]! : 'field';
      if (how === 'drop') return fc.constant(Object.fromEntries(Object.entries(record).filter(([key]) => key !== name)));
      if (how === 'replace') return hostile(name).map((replacement) => ({ ...record, [name]: replacement }));
      if (how === 'operator') return operatorKeyed().map((operator) => ({ ...record, ...operator }));
      if (how === 'nest-operator') return operatorKeyed().map((operator) => ({ ...record, [name]: operator }));
      return fc.tuple(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 })).map(([key, extra]) => ({ ...record, [`${key}_unknown`]: extra }));
    });
}
