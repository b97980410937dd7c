import { z, type ZodType } from 'zod';
import { errorStatus } from '../shared/errors.js';
import { defineRoute, type AnyRoute } from './routing.js';

const jsonSchema = (schema: ZodType, io: 'input' | 'output') => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const errorBody = {
  type: 'object',
  required: ['code', 'message', 'request_id'],
  properties: {
    code: { type: 'string', enum: Object.keys(errorStatus) },
    message: { type: 'string' },
    request_id: { type: 'string' },
    details: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
};

function parameters(route: AnyRoute) {
  const list: Record<string, unknown>[] = [];
  for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
    if (!schema) continue;
    const shape = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, property] of Object.entries(shape.properties ?? {})) {
      list.push({ name, in: where, required: where === 'path' || (shape.required ?? []).includes(name), schema: property });
    }
  }
  return list;
}

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

function operation(route: AnyRoute) {
  const status = String(route.status ?? 200);
  const particular = Object.entries(route.errors ?? {}).map(([code, description]) => [code, { description, content: errorContent }]);
  return {
    tags: [route.tag],
    summary: route.summary,
    operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    security: route.access === 'public' ? [] : [{ session: [] }, { apiKey: [] }, ...(route.access === 'member+dsn' ? [{ dsn: [] }] : [])],
    ...(route.access !== 'public' && route.access !== 'member+dsn' && { 'x-required-role': route.access }),
    parameters: parameters(route),
    ...(route.body && {
      requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } },
    }),
    responses: {
      [status]: route.response
        ? { description: 'Success', content: { 'application/json': { schema: jsonSchema(route.response, 'output') } } }
        : { description: 'Success, no body' },
      ...Object.fromEntries(particular),
      default: { description: 'Error (CONTRACT.md codes)', content: errorContent },
    },
  };
}

export function openApiDocument(routes: readonly AnyRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method] = operation(route);
  return {
    openapi: '3.1.0',
    info: { title: 'Sluice API', version: '1.0.0', description: 'Dashboard and scripting API. Shapes here are generated from the validating schemas.' },
    paths,
    components: {
      schemas: { Error: errorBody },
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'slk_session', description: 'Also requires Origin = DASHBOARD_ORIGIN.' },
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key secret (slk_…).' },
        dsn: { type: 'apiKey', in: 'header', name: 'Authorization', description: '"DSN <public key>": write-only.' },
      },
    },
  };
}

/** The document describes every mounted route, itself included. */
export function openApiRoute(routes: () => readonly AnyRoute[]) {
  let document: ReturnType<typeof openApiDocument> | undefined;
  return defineRoute({
    method: 'get',
    path: '/v1/openapi.json',
    tag: 'Meta',
    summary: 'This OpenAPI 3.1 document.',
    access: 'public',
    response: z.record(z.string(), z.unknown()),
    handler: async () => (document ??= openApiDocument(routes())),
  });
}
