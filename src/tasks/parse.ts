/**
 * Reading a model's answer. Every parser returns either the answer in the task's shape or `unparsed` with the
 * reason; an answer that cannot be read is never replaced by a default label (it is scored as wrong and counted).
 *
 * All parsers first strip reasoning blocks (`<think>…</think>`) and markdown, then look for the final answer: the
 * text after the last "Ответ:" / "Итоговый ответ:" / "Answer:" marker, else the whole reply.
 */
import { say } from './reasons.js';

export type ParseResult<T> =
  | { status: 'parsed'; answer: T; notes: string[] }
  | { status: 'unparsed'; reason: string };

const parsed = <T>(answer: T, notes: string[] = []): ParseResult<T> => ({ status: 'parsed', answer, notes });
const unparsed = (reason: string): ParseResult<never> => ({ status: 'unparsed', reason });

const THINK_BLOCK = /<(think|thinking|reasoning)>[\s\S]*?<\/\1>/gi;
const UNCLOSED_THINK = /<(think|thinking|reasoning)>[\s\S]*$/i;
const ANSWER_MARKER =
  /(?:итоговый\s+ответ|окончательный\s+ответ|правильный\s+ответ|final\s+answer|ответ|answer)\s*[:：—-]\s*/gi;

/** Removes reasoning blocks; an unfinished one, or everything before a closing tag without its opening, is reasoning. */
function removeReasoning(reply: string): string {
  let t = reply.replace(THINK_BLOCK, ' ');
  const close = t.search(/<\/(think|thinking|reasoning)>/i);
  if (close >= 0) t = t.slice(t.indexOf('>', close) + 1);
  return t.replace(UNCLOSED_THINK, ' ');
}

/** Removes reasoning blocks and markdown (fences, emphasis, headings), keeping the text. */
export function stripReasoning(reply: string): string {
  return removeReasoning(reply)
    .replace(/```[a-z]*\n?/gi, '\n')
    .replace(/[*_`]+/g, '')
    .replace(/^\s{0,3}#{1,6}\s*/gm, '')
    .trim();
}

/** The final answer: after the last answer marker, else the whole (stripped) reply. */
export function finalAnswer(reply: string): string {
  const t = stripReasoning(reply);
  let last = -1;
  for (const m of t.matchAll(ANSWER_MARKER)) last = (m.index ?? 0) + m[0].length;
  return (last >= 0 ? t.slice(last) : t).trim();
}

/** Words of a text, lower-cased, ё as е. */
function words(text: string): { word: string; index: number }[] {
  return [
    ...text
      .toLowerCase()
      .replace(/ё/g, 'е')
      .matchAll(/[\p{L}\p{N}]+/gu),
  ].map((m) => ({ word: m[0], index: m.index ?? 0 }));
}

/** The first of several word-level cues in the answer; null when none occurs. */
function firstCue<T>(answer: string, cues: readonly [RegExp, T][]): T | null {
  let best: { at: number; value: T } | null = null;
  for (const [re, value] of cues) {
    const m = re.exec(answer.toLowerCase().replace(/ё/g, 'е'));
    if (m && (best === null || m.index < best.at)) best = { at: m.index, value };
  }
  return best?.value ?? null;
}

const B = '(?<![\\p{L}\\p{N}])';
const E = '(?![\\p{L}\\p{N}])';
const cue = (alternatives: string, notAfter = ''): RegExp =>
  new RegExp(`${notAfter ? `(?<!${notAfter})` : ''}${B}(?:${alternatives})${E}`, 'u');

// Negated forms come first in each list only for readability; the earliest match in the text wins.
const YES_NO: [RegExp, 'да' | 'нет'][] = [
  [
    cue('нет|неверно|не\\s+верно|неправильно|не\\s+правильно|ложно|не\\s+соответствует|no|false|incorrect'),
    'нет',
  ],
  [cue('да|верно|правильно|истинно|соответствует|yes|true|correct'), 'да'],
];

/** Two different answers offered as alternatives ("да или нет", "1/2", "2 or 3"): the reply chose neither. */
const ALTERNATIVES = (words: string) =>
  new RegExp(`${B}(${words})${E}[»"']?\\s*(?:или|либо|or|/)\\s*[«"']?(${words})${E}`, 'iu');
const YES_NO_ALTERNATIVES = ALTERNATIVES('да|нет|yes|no');
const OPTION_ALTERNATIVES = ALTERNATIVES('[1-9]|[абвг]');

function ambiguity(answer: string, re: RegExp): string | undefined {
  const m = re.exec(answer.toLowerCase().replace(/ё/g, 'е'));
  return m && m[1] !== m[2] ? say('AMBIGUOUS_PAIR', m[1] as string, m[2] as string) : undefined;
}

/** RuMedDaNet: да / нет and their synonyms (верно, неверно, yes, no, …). */
export function parseYesNo(reply: string): ParseResult<'да' | 'нет'> {
  const answer = finalAnswer(reply);
  const both = ambiguity(answer, YES_NO_ALTERNATIVES);
  if (both) return unparsed(both);
  const v = firstCue(answer, YES_NO);
  return v ? parsed(v) : unparsed(say('NO_YES_NO'));
}

type NliLabel = 'entailment' | 'contradiction' | 'neutral';

/** A negation just before a cue turns it off: "не следует", "не противоречит", "нет противоречия". */
const NEGATED = '(?:не|нет|нельзя|ни)\\s+';

/**
 * The forms models write for each relation: English labels, Russian nouns in every case (следствие, следование,
 * противоречие, нейтральность), verbs (следует, вытекает, противоречит) and adjectives (противоречащее,
 * нейтральное). Matched on word boundaries that know Cyrillic (JavaScript's \b does not).
 */
const NLI: [RegExp, NliLabel][] = [
  [
    cue(
      'entailment|entails?|следстви(?:е|я|ю|ем|и)|следовани(?:е|я|ю|ем|и)|логическое\\s+следование|следует|следуют|вытека(?:ет|ют)|выводится|подтвержда(?:ет|ют|ется)|импликаци(?:я|и|ю|ей)',
      NEGATED,
    ),
    'entailment',
  ],
  [
    cue(
      'contradiction|contradicts?|contradictory|противоречи(?:е|я|ю|ем|и)|противореч(?:ит|ат)|противоречащ(?:ий|ая|ее|ие|его|ей|ую|им|их|ими)|противоречив(?:ый|ая|ое|ы|о)?|опроверга(?:ет|ют)',
      NEGATED,
    ),
    'contradiction',
  ],
  [
    cue(
      'neutral|neutrality|нейтральн(?:о|ое|ый|ая|ые|ого|ой|ым|ую|ость|ости|остью)|не\\s+связаны|нет\\s+связи|невозможно\\s+(?:определить|сказать)|нельзя\\s+(?:определить|сказать)',
    ),
    'neutral',
  ],
];

/** The numbered options of the RuMedNLI prompt. */
const NLI_OPTIONS: Record<string, NliLabel> = { '1': 'entailment', '2': 'contradiction', '3': 'neutral' };
/** An option number where the answer starts: "2", "2.", "2)", "2 — противоречие". */
const LEADING_OPTION = /^[\s«"'(]*([123])(?![\p{L}\p{N}])/u;

/** RuMedNLI: the relation, as a word in Russian or English (any form) or as the number of the option. */
export function parseNli(reply: string): ParseResult<NliLabel> {
  const answer = finalAnswer(reply);
  // "entailment or contradiction", "1/2": two relations offered as alternatives are no answer.
  const folded = answer.toLowerCase().replace(/ё/g, 'е');
  const offered = new Set(NLI.filter(([re]) => re.test(folded)).map(([, label]) => label));
  if (offered.size >= 2 && /(?<![\p{L}\p{N}])(или|либо|or)(?![\p{L}\p{N}])|\//u.test(folded))
    return unparsed(say('AMBIGUOUS_RELATIONS', [...offered].join(' and ')));
  const options = ambiguity(answer, OPTION_ALTERNATIVES);
  if (options) return unparsed(options);
  const word = firstCue(answer, NLI);
  if (word) return parsed(word);
  const option = LEADING_OPTION.exec(answer);
  if (option)
    return parsed(NLI_OPTIONS[option[1] as string] as NliLabel, [
      say('OPTION_READ_AS', option[1] as string, NLI_OPTIONS[option[1] as string] as string),
    ]);
  return unparsed(say('NO_RELATION'));
}

// Cyrillic option letters, and the Latin letters that look like them (A for А, B for В).
const OPTION_LETTERS: Record<string, string> = { а: '1', б: '2', в: '3', г: '4', a: '1', b: '3' };

/** RuMedTest: the number of the chosen option (1-4), or its letter (А Б В Г, or Latin look-alikes of А and В). */
export function parseOption(
  reply: string,
  options: readonly string[] = ['1', '2', '3', '4'],
): ParseResult<string> {
  const answer = finalAnswer(reply);
  const both = ambiguity(answer, OPTION_ALTERNATIVES);
  if (both) return unparsed(both);
  const digit = new RegExp(`${B}([1-9])(?:[).:]|${E})`, 'u').exec(answer);
  const letter = new RegExp(`${B}([абвгab])(?:[).:]|${E})`, 'iu').exec(answer);
  const candidates: { at: number; value: string; note?: string }[] = [];
  if (digit) candidates.push({ at: digit.index, value: digit[1] as string });
  if (letter) {
    const l = (letter[1] as string).toLowerCase();
    candidates.push({
      at: letter.index,
      value: OPTION_LETTERS[l] as string,
      note: say('OPTION_LETTER', letter[1] as string, OPTION_LETTERS[l] as string),
    });
  }
  candidates.sort((a, b) => a.at - b.at);
  const first = candidates[0];
  if (!first) return unparsed(say('NO_OPTION'));
  if (!options.includes(first.value))
    return unparsed(say('OPTION_NOT_OFFERED', first.value, options.join(', ')));
  return parsed(first.value, first.note ? [first.note] : []);
}

// Cyrillic letters that look like Latin ones, as models sometimes write ICD-10 codes (М54 for M54).
const LOOKALIKE: Record<string, string> = {
  А: 'A',
  В: 'B',
  Е: 'E',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  Х: 'X',
  У: 'Y',
  З: 'Z',
};
const ICD_CODE = /(?<![\p{L}\p{N}])([A-ZА-ЯЁ])\s?(\d{2})(?:[.,]\d{1,2})?(?!\d)/giu;

/** RuMedTop3: up to three ICD-10 codes, ranked; look-alike letters mapped, subcodes cut, duplicates removed. */
export function parseIcd10List(reply: string, max = 3): ParseResult<string[]> {
  const answer = finalAnswer(reply);
  const codes: string[] = [];
  const notes: string[] = [];
  for (const m of answer.matchAll(ICD_CODE)) {
    const raw = (m[1] as string).toUpperCase();
    const letter = LOOKALIKE[raw] ?? raw;
    if (!/^[A-Z]$/.test(letter)) continue;
    if (letter !== raw) notes.push(say('CYRILLIC_LETTER', raw, letter));
    const code = `${letter}${m[2]}`;
    if (m[0].length > 3 + (m[0].includes(' ') ? 1 : 0)) notes.push(say('CODE_CUT', m[0].trim(), code));
    if (!codes.includes(code)) codes.push(code);
    if (codes.length === max) break;
  }
  return codes.length > 0 ? parsed(codes, [...new Set(notes)]) : unparsed(say('NO_ICD_CODE'));
}

/** Lower-case, ё as е, punctuation and extra spaces removed: how symptom names are compared. */
export function normalizeSymptom(s: string): string {
  return words(s)
    .map((w) => w.word)
    .join(' ');
}

/** Similarity of two normalised strings: 1 − Levenshtein distance / longer length. */
export function similarity(a: string, b: string): number {
  if (a === b) return 1;
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) return 0;
  let prev = Array.from({ length: m + 1 }, (_, j) => j);
  for (let i = 1; i <= n; i++) {
    const cur = [i];
    for (let j = 1; j <= m; j++) {
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return 1 - (prev[m] as number) / Math.max(n, m);
}

/** A fuzzy match to the symptom inventory counts only at or above this similarity (and is recorded). */
export const SYMPTOM_FUZZY_THRESHOLD = 0.85;

/**
 * RuMedSymptomRec: up to three symptoms from the task's inventory. The answer is split into items (lines, numbered
 * items, commas, semicolons); each is matched exactly after normalisation, else to the most similar inventory
 * entry when the similarity reaches {@link SYMPTOM_FUZZY_THRESHOLD}.
 */
export function parseSymptomList(
  reply: string,
  inventory: readonly string[],
  max = 3,
): ParseResult<string[]> {
  const answer = finalAnswer(reply);
  const byNorm = new Map(inventory.map((s) => [normalizeSymptom(s), s]));
  const items = answer
    .split(/\n|;|,(?![^()]*\))|(?:^|\s)\d+[.)]\s/)
    .map((s) => s.replace(/^[\s\-–—•\d.)]+/, '').trim())
    .filter((s) => s !== '');
  const out: string[] = [];
  const notes: string[] = [];
  for (const item of items) {
    const norm = normalizeSymptom(item);
    if (norm === '') continue;
    let hit = byNorm.get(norm);
    if (!hit) {
      let best = { score: 0, label: '' };
      for (const [n, label] of byNorm) {
        const sc = similarity(norm, n);
        if (sc > best.score) best = { score: sc, label };
      }
      if (best.score >= SYMPTOM_FUZZY_THRESHOLD) {
        hit = best.label;
        notes.push(say('SYMPTOM_MATCHED', item, best.label, best.score.toFixed(2)));
      } else notes.push(say('SYMPTOM_UNKNOWN', item));
    }
    if (hit && !out.includes(hit)) out.push(hit);
    if (out.length === max) break;
  }
  return out.length > 0
    ? parsed(out, notes)
    : unparsed(notes.length ? say('NO_SYMPTOM_NOTED', notes.join('; ')) : say('NO_SYMPTOM'));
}

/** RuDReC-style tokenisation: words and single punctuation marks. */
export function tokenize(text: string): string[] {
  return text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu) ?? [];
}

/** The first JSON array or object in a text (a fenced block, or the outermost brackets). */
function extractJson(text: string): unknown {
  const candidates: string[] = [];
  for (const m of text.matchAll(/```(?:json)?\s*([\s\S]*?)```/gi)) candidates.push(m[1] as string);
  const start = text.search(/[[{]/);
  if (start >= 0) {
    const open = text[start] as string;
    const close = open === '[' ? ']' : '}';
    const end = text.lastIndexOf(close);
    if (end > start) candidates.push(text.slice(start, end + 1));
  }
  for (const c of candidates) {
    try {
      return JSON.parse(c);
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

/**
 * RuMedNER: entities as JSON (`[{"text": …, "type": …}]`, or `{"entities": [...]}`), aligned back to the given
 * tokens (the first unused case-insensitive occurrence) and turned into IOB2 tags. Entities whose type is unknown or
 * whose text is not in the sentence are left out and recorded in the notes.
 */
export function parseEntities(
  reply: string,
  tokens: readonly string[],
  entityTypes: readonly string[],
): ParseResult<string[]> {
  // JSON may sit before an answer marker too; search the reply without reasoning, not only the final answer.
  const value = extractJson(removeReasoning(reply));
  const list = Array.isArray(value) ? value : (value as { entities?: unknown } | undefined)?.entities;
  if (!Array.isArray(list)) return unparsed(say('NO_ENTITY_LIST'));
  const typeOf = new Map(entityTypes.map((t) => [t.toLowerCase(), t]));
  const lower = tokens.map((t) => t.toLowerCase());
  const tags = tokens.map(() => 'O');
  const notes: string[] = [];
  for (const item of list) {
    const rec = item as Record<string, unknown>;
    const text = rec?.text ?? rec?.entity ?? rec?.span;
    const type = rec?.type ?? rec?.label ?? rec?.category;
    if (typeof text !== 'string' || typeof type !== 'string') {
      notes.push(say('ENTRY_WITHOUT_FIELDS', JSON.stringify(item)));
      continue;
    }
    const t = typeOf.get(type.toLowerCase());
    if (!t) {
      notes.push(say('UNKNOWN_TYPE', type, entityTypes.join(', ')));
      continue;
    }
    const span = tokenize(text).map((w) => w.toLowerCase());
    if (span.length === 0) continue;
    let placed = false;
    for (let i = 0; i + span.length <= tokens.length && !placed; i++) {
      if (
        span.every((w, k) => lower[i + k] === w) &&
        tags.slice(i, i + span.length).every((g) => g === 'O')
      ) {
        span.forEach((_, k) => {
          tags[i + k] = `${k === 0 ? 'B' : 'I'}-${t}`;
        });
        placed = true;
      }
    }
    if (!placed) notes.push(say('NOT_IN_SENTENCE', text, t));
  }
  return parsed(tags, notes);
}

/** How labels are compared with a reply: lower case, ё as е, spaces squeezed, edge punctuation dropped. */
const labelKey = (s: string): string =>
  s
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(/\s+/g, ' ')
    .replace(/^[\s"'«»“”.,;:!?()[\]]+|[\s"'«»“”.,;:!?()[\]]+$/g, '');

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Where each label occurs as a whole word (or words) in `text`, earliest first. */
function labelsIn(text: string, labels: readonly string[]): { label: string; at: number }[] {
  const t = labelKey(text);
  const found: { label: string; at: number }[] = [];
  for (const label of labels) {
    const m = new RegExp(`${B}${escapeRe(labelKey(label))}${E}`, 'u').exec(t);
    if (m) found.push({ label, at: m.index });
  }
  // A label inside a longer one found at the same place ("боль" in "боль в груди") is the longer one's.
  return found
    .filter(
      (f) =>
        !found.some(
          (g) =>
            g !== f &&
            g.label.length > f.label.length &&
            g.at <= f.at &&
            labelKey(g.label).includes(labelKey(f.label)),
        ),
    )
    .sort((a, b) => a.at - b.at);
}

/**
 * A task defined in a file, one label from a closed set: the final answer is a label (any case), or names exactly
 * one label; a reply naming several is unparsed, never resolved by a guess.
 */
export function parseLabel(reply: string, labels: readonly string[]): ParseResult<string> {
  const answer = finalAnswer(reply);
  const whole = labels.find((l) => labelKey(l) === labelKey(answer));
  if (whole !== undefined) return parsed(whole);
  const found = [...new Set(labelsIn(answer, labels).map((f) => f.label))];
  if (found.length === 1) return parsed(found[0] as string, [say('LABEL_READ_FROM', answer.slice(0, 60))]);
  if (found.length > 1) return unparsed(say('SEVERAL_LABELS', found.join(', ')));
  return unparsed(say('NO_LABEL_OF', labels.join(', ')));
}

const NONE_ANSWER = /^(нет|никакие|никаких|ни один|none|no|—|-)$/;

/**
 * A task defined in a file, a list of labels (multi-label classes, or a ranking's labels best first): the final
 * answer split at commas, semicolons and line ends, each piece a label or naming one. `none` (multi-label only):
 * "нет" or "none" alone is the empty set. At most `max` labels are kept; unknown pieces are noted, not guessed.
 */
export function parseLabelList(
  reply: string,
  match: { labels?: readonly string[]; pattern?: RegExp },
  options: { max?: number; none?: boolean } = {},
): ParseResult<string[]> {
  const answer = finalAnswer(reply);
  if (options.none && NONE_ANSWER.test(labelKey(answer))) return parsed([]);
  const out: string[] = [];
  const notes: string[] = [];
  for (const piece of answer.split(/[,;\n]+/)) {
    const key = labelKey(piece);
    if (key === '') continue;
    let hits: string[] = [];
    if (match.labels) {
      const whole = match.labels.find((l) => labelKey(l) === key);
      hits = whole !== undefined ? [whole] : labelsIn(piece, match.labels).map((f) => f.label);
    } else if (match.pattern) {
      const word = piece.trim().replace(/^[\s"'«».()[\]]+|[\s"'«».()[\]]+$/g, '');
      if (match.pattern.test(word)) hits = [word];
    }
    if (hits.length === 0) notes.push(say('NOT_A_LABEL', piece.trim().slice(0, 40)));
    for (const h of hits) if (!out.includes(h)) out.push(h);
  }
  if (out.length === 0) return unparsed(notes.length > 0 ? notes.join('; ') : say('NO_LABEL'));
  const max = options.max ?? out.length;
  if (out.length > max) notes.push(say('LABELS_DROPPED', out.length - max, max));
  return parsed(out.slice(0, max), notes);
}
