/**
 * Statement normalisation: calls that differ only in their values share a pattern. Literals
 * (quoted strings, numbers, hex, booleans are kept), bind parameters (`$1`, `:name`, `?`, and DB-API's
 * `%s` and `%(name)s`) become `?`;
 * `IN (...)` lists and `VALUES` rows collapse to one placeholder each; comments go; case and
 * whitespace are folded (one space after a comma and around a comparison operator). Double-quoted
 * and backquoted names are identifiers and stay.
 */
const MAX_INPUT = 10_000;
export const MAX_PATTERN = 2_000;

const STEPS: [RegExp, string][] = [
  // comments
  [/\/\*[\s\S]*?\*\//g, ' '],
  [/--[^\n]*/g, ' '],
  // string literals, with '' and \' escapes, and dollar-quoted strings
  [/(?:[enbx]|u&)?'(?:[^'\\]|''|\\.)*'/gi, '?'],
  [/\$(\w*)\$[\s\S]*?\$\1\$/g, '?'],
  // bind parameters
  [/\$\d+/g, '?'],
  [/(?<=[\s(,=<>]):[a-z_]\w*/gi, '?'],
  // DB-API format and pyformat (psycopg2, pymysql): string literals are gone by now, so a `%` left is
  // a placeholder or the modulo operator, and a placeholder's `s` ends its word (`a %size` is modulo)
  [/(?<!%)%(?:\([^()\s]*\))?s\b/g, '?'],
  // numbers not part of a name: hex, then decimals with exponents and signs
  [/(?<![\w$.])0x[0-9a-f]+\b/gi, '?'],
  [/(?<![\w$.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?\b/gi, '?'],
];

export function normalizeStatement(statement: string): string {
  let text = statement.slice(0, MAX_INPUT);
  for (const [pattern, replacement] of STEPS) text = text.replace(pattern, replacement);
  text = text.replace(/\s+/g, ' ').trim().toLowerCase();
  text = text.replace(/\s*,\s*/g, ', ').replace(/\(\s+/g, '(').replace(/\s+\)/g, ')');
  // one space either side of a comparison (not of ->, ->>, => or ::)
  text = text.replace(/\s*(?<![<>!=:-])(<>|!=|<=|>=|=|<|>)(?![<>=])\s*/g, ' $1 ');
  // lists of placeholders: IN (?, ?, ?) and VALUES (?, ?), (?, ?)
  text = text.replace(/\bin\s*\(\s*\?(?:\s*,\s*\?)*\s*\)/g, 'in (?)');
  text = text.replace(/\bvalues\s*\(\s*\?(?:\s*,\s*\?)*\s*\)(?:\s*,\s*\(\s*\?(?:\s*,\s*\?)*\s*\))*/g, 'values (?)');
  return text.length > MAX_PATTERN ? `${text.slice(0, MAX_PATTERN)}…` : text;
}
