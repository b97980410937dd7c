import { placeLine, templateText, wordsOf, type Template } from '../../src/shared/features/logs/drain.js';

/** Places lines one after another in one project's templates, as the workers do. */
function mine(lines: string[]): { templates: Map<string, Template[]>; placed: string[] } {
  const templates = new Map<string, Template[]>();
  const placed = lines.map((line) => {
    const { words, group } = wordsOf(line);
    const ofGroup = templates.get(group) ?? [];
    templates.set(group, ofGroup);
    return placeLine(ofGroup, words, group).template.id;
  });
  return { templates, placed };
}

describe('Drain-style log templates', () => {
  test('lines differing in masked values or in a minority of words share a template that widens', () => {
    const { templates, placed } = mine(['Connected to db-7 in 35 ms', 'Connected to db-12 in 8 ms', 'Connected to cache in 2 ms']);
    expect(new Set(placed).size).toBe(1);
    const [template] = [...templates.values()].flat();
    expect(templateText(template!.words)).toBe('Connected to <*> in <*> ms');
  });

  test('a template keeps its id as it widens; different shapes and word counts stay apart', () => {
    const { placed } = mine(['User alice logged in', 'User bob logged in', 'Disk full on /var', 'User carol logged out of the console']);
    expect(placed[0]).toBe(placed[1]);
    expect(new Set(placed).size).toBe(3);
  });

  test('too few words in common start a template of their own', () => {
    const { placed } = mine(['cache miss for key', 'queue drained for worker']);
    expect(placed[0]).not.toBe(placed[1]);
  });

  test('a first word holding a digit does not split the group', () => {
    expect(wordsOf('42 jobs queued').group).toBe(wordsOf('7 jobs queued').group);
    expect(wordsOf('Payment 1001 failed').words).toEqual(['Payment', '<*>', 'failed']);
  });
});
