import { readFileSync } from 'node:fs';
import { SCHEMA_FILE, webApiTypes } from '../../tools/web-api-types.js';

test("the dashboard's API types match the OpenAPI document the API serves (run `npm run gen:api` after changing a route)", async () => {
  const generated = await webApiTypes();
  const committed = readFileSync(SCHEMA_FILE, 'utf8');
  // a plain equality check: on failure, the first differing line is what changed in the API
  const firstDifference = generated.split('\n').findIndex((line, index) => line !== committed.split('\n')[index]);
  expect({ stale: generated !== committed, firstDifference, line: generated.split('\n')[firstDifference] }).toEqual({ stale: false, firstDifference: -1, line: undefined });
});
