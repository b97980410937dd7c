/**
 * Log pattern mining in the manner of Drain (He et al., ICWS 2017), kept as logs arrive. A line is
 * first masked (numbers, ids, addresses, times become `<*>`, see normalizeMessage) and split into
 * words. Lines are only compared within a group of the same word count and the same first word
 * (Drain's fixed-depth tree); within a group, a line joins the template it shares the most words
 * with, position by position, when that share reaches SIMILARITY, and the words where they differ
 * become `<*>`. Otherwise it starts a template of its own. A template's id is fixed when it is
 * created, so it names the same pattern as the template widens.
 */
import { sha256 } from '../../secrets.js';
import { normalizeMessage } from '../issues/grouping.js';

export const WILDCARD = '<*>';
/** The share of a template's words (wildcards aside) a line must repeat, in place, to join it. */
export const SIMILARITY = 0.5;
/** Templates kept per group; past this, a line is its own masked pattern. */
export const MAX_TEMPLATES_PER_GROUP = 200;
/** Longer lines are compared on their first MAX_WORDS words only. */
const MAX_WORDS = 80;

export interface Template {
  id: string;
  words: string[];
}

/** A line's masked words, and the group they are compared within. */
export function wordsOf(body: string): { words: string[]; group: string } {
  const words = normalizeMessage(body, () => WILDCARD)
    .split(/\s+/)
    .filter((word) => word !== '')
    .slice(0, MAX_WORDS);
  const first = words[0] ?? '';
  // a first word holding a digit is a value, not a shape
  return { words, group: `${words.length}:${/\d/.test(first) ? WILDCARD : first}` };
}

/** The share of the template's words the line repeats in place, and how many wildcards it has (ties go to fewer). */
function similarity(template: string[], words: string[]): { score: number; wildcards: number } {
  let same = 0;
  let wildcards = 0;
  template.forEach((word, index) => {
    if (word === WILDCARD) wildcards += 1;
    else if (word === words[index]) same += 1;
  });
  return { score: template.length === 0 ? 1 : same / template.length, wildcards };
}

/** The template widened to cover the line: each word where they differ becomes a wildcard. */
const merged = (template: string[], words: string[]) => template.map((word, index) => (word === words[index] ? word : WILDCARD));

export const templateText = (words: string[]) => words.join(' ');

/**
 * Places a line among a group's templates (mutating `templates`): the template it joins, and
 * whether that template was created or widened by it.
 */
export function placeLine(templates: Template[], words: string[], group: string): { template: Template; changed: boolean } {
  let best: { template: Template; score: number; wildcards: number } | undefined;
  for (const template of templates) {
    const { score, wildcards } = similarity(template.words, words);
    if (score >= SIMILARITY && (!best || score > best.score || (score === best.score && wildcards < best.wildcards))) best = { template, score, wildcards };
  }
  if (best) {
    const widened = merged(best.template.words, words);
    const changed = widened.some((word, index) => word !== best.template.words[index]);
    if (changed) best.template.words = widened;
    return { template: best.template, changed };
  }
  const template = { id: sha256(`${group}\n${templateText(words)}`).slice(0, 16), words };
  if (templates.length < MAX_TEMPLATES_PER_GROUP) templates.push(template);
  return { template, changed: true };
}
