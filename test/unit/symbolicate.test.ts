import { normalizeDebugId } from '../../src/shared/features/artifacts/schemas.js';
import { parseSourceMap, sourceMappingUrlOf } from '../../src/shared/features/artifacts/service.js';
import { enclosingFunction, nameForms } from '../../src/shared/features/artifacts/symbolicate.js';

describe('the names a frame file is looked up by', () => {
  test('a URL: as given, without its query, ~/path and basename', () => {
    expect(nameForms('https://cdn.example.com/static/app.min.js?v=3')).toEqual([
      'https://cdn.example.com/static/app.min.js?v=3',
      'https://cdn.example.com/static/app.min.js',
      '~/static/app.min.js',
      'app.min.js',
    ]);
  });

  test('app:/// and absolute paths get a ~/ form too', () => {
    expect(nameForms('app:///dist/server.js')).toEqual(['app:///dist/server.js', '~/dist/server.js', 'server.js']);
    expect(nameForms('/srv/app/dist/index.js')).toEqual(['/srv/app/dist/index.js', '~/srv/app/dist/index.js', 'index.js']);
  });
});

describe('the function around an original position', () => {
  const lines = [
    'export function outer(items: number[]): number {',
    '  const helper = (value: number) => {',
    '    return value * 2;',
    '  };',
    '  return items.map(helper).reduce((a, b) => a + b);',
    '}',
    'class Cart {',
    '  total(): number {',
    '    throw new Error("empty");',
    '  }',
    '}',
  ];

  test('the innermost named function still open at the position', () => {
    expect(enclosingFunction(lines, 2, 4)).toBe('helper');
    // helper's braces closed before line 5, so the position is back in outer
    expect(enclosingFunction(lines, 4, 4)).toBe('outer');
    expect(enclosingFunction(lines, 8, 4)).toBe('total');
  });

  test('nothing outside every function', () => {
    expect(enclosingFunction(['const a = 1;', 'a.toFixed(2);'], 1, 2)).toBeUndefined();
  });
});

describe('artifact contents', () => {
  test('a version 3 map, plain or indexed, with or without the XSSI prefix', () => {
    expect(parseSourceMap('{"version":3,"sources":[],"mappings":""}')).toMatchObject({ version: 3 });
    expect(parseSourceMap(")]}'\n{\"version\":3,\"sections\":[]}")).toMatchObject({ sections: [] });
    expect(parseSourceMap('{"version":2,"mappings":""}')).toBeUndefined();
    expect(parseSourceMap('function(){}')).toBeUndefined();
  });

  test('the last sourceMappingURL comment of a minified file wins', () => {
    expect(sourceMappingUrlOf('var a=1;\n//# sourceMappingURL=old.js.map\nvar b;\n//# sourceMappingURL=app.js.map\n')).toBe('app.js.map');
    expect(sourceMappingUrlOf('var a=1;')).toBeUndefined();
  });

  test('debug ids in the dashed lower-case form of debug_meta', () => {
    expect(normalizeDebugId('C0FFEE00AABB4CCD8EEF0123456789AB')).toBe('c0ffee00-aabb-4ccd-8eef-0123456789ab');
    expect(normalizeDebugId('not-a-debug-id')).toBeUndefined();
  });
});
