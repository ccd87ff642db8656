/**
 * What one data record of a task holds, as data: a rule per field, read by the loader (data/load.ts) to check every
 * line of a task file. Rules rather than a schema library because they are few and fixed, and because the loader
 * runs in every `eval`: a schema library's import alone cost a quarter of a scoring run's start-up (issue #25).
 */

/** A field's rule. Every rule but `optional` ones requires the field. */
export type FieldRule =
  /** A non-empty string after trimming: ids and texts. */
  | { readonly type: 'text'; readonly optional?: boolean }
  /** Any string, empty included (RuMedTest's options). */
  | { readonly type: 'string'; readonly optional?: boolean }
  /** A non-empty list of strings (a tagging task's tokens). */
  | { readonly type: 'tokens'; readonly optional?: boolean }
  /**
   * One label: a string (or, with `numbers`, an integer read as its decimal string) from `oneOf`, or matching
   * `pattern` (`patternHint` says what it means), or any non-empty string.
   */
  | {
      readonly type: 'label';
      readonly optional?: boolean;
      readonly oneOf?: readonly string[];
      readonly pattern?: RegExp;
      readonly patternHint?: string;
      readonly numbers?: boolean;
    }
  /** One tag from `oneOf` per token of the field `tokens`. */
  | {
      readonly type: 'tags';
      readonly optional?: boolean;
      readonly oneOf: readonly string[];
      readonly tokens: string;
    }
  /** A set of labels from `oneOf` without repeats (integers read as strings), kept in `oneOf`'s order. */
  | { readonly type: 'label_set'; readonly optional?: boolean; readonly oneOf: readonly string[] };

/** A record's fields and their rules; fields not named here are kept as they are. */
export type RecordFields = Readonly<Record<string, FieldRule>>;

/** A problem with one record: the field's path (`ner_tags.0`; empty for the record itself) and what is wrong. */
export interface RecordIssue {
  readonly path: string;
  readonly message: string;
}

export type RecordCheck =
  | { readonly ok: true; readonly data: Record<string, unknown> }
  | { readonly ok: false; readonly issues: readonly RecordIssue[] };

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function quoteList(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

/** Reads one label (a string, or an integer where numbers are allowed) or says why it is not one. */
function readLabel(
  value: unknown,
  rule: {
    readonly oneOf?: readonly string[];
    readonly pattern?: RegExp;
    readonly patternHint?: string;
    readonly numbers?: boolean;
  },
): { label: string } | { error: string } {
  let label: string;
  if (typeof value === 'string') label = value;
  else if (rule.numbers && typeof value === 'number' && Number.isInteger(value)) label = String(value);
  else
    return {
      error: `must be ${rule.numbers ? 'a label (a string or an integer)' : 'a string'}; found ${kindOf(value)}`,
    };
  if (rule.oneOf) {
    if (!rule.oneOf.includes(label))
      return { error: `must be one of ${quoteList(rule.oneOf)}; found ${JSON.stringify(label)}` };
  } else if (rule.pattern) {
    if (!rule.pattern.test(label))
      return {
        error: `must be ${rule.patternHint ?? `a label matching ${rule.pattern.source}`}; found ${JSON.stringify(label)}`,
      };
  } else if (label.trim() === '') return { error: 'must be a non-empty label' };
  return { label };
}

/**
 * Checks one parsed JSON line against a task's fields. Returns the record (labels read as strings, label sets in
 * their canonical order, other fields as given) or every problem found.
 */
export function checkRecord(fields: RecordFields, value: unknown): RecordCheck {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, issues: [{ path: '', message: `must be a JSON object; found ${kindOf(value)}` }] };
  const record = value as Record<string, unknown>;
  const issues: RecordIssue[] = [];
  const data: Record<string, unknown> = { ...record };
  const fail = (path: string, message: string) => issues.push({ path, message });
  for (const [field, rule] of Object.entries(fields)) {
    const v = record[field];
    if (v === undefined) {
      if (!rule.optional) fail(field, 'is missing');
      continue;
    }
    switch (rule.type) {
      case 'text':
        if (typeof v !== 'string') fail(field, `must be a non-empty string; found ${kindOf(v)}`);
        else if (v.trim() === '') fail(field, 'must be a non-empty string');
        break;
      case 'string':
        if (typeof v !== 'string') fail(field, `must be a string; found ${kindOf(v)}`);
        break;
      case 'tokens':
        if (!Array.isArray(v)) fail(field, `must be a list of strings; found ${kindOf(v)}`);
        else if (v.length === 0) fail(field, 'must list at least one token');
        else {
          const at = v.findIndex((t) => typeof t !== 'string');
          if (at >= 0) fail(`${field}.${at}`, `must be a string; found ${kindOf(v[at])}`);
        }
        break;
      case 'label': {
        const read = readLabel(v, rule);
        if ('error' in read) fail(field, read.error);
        else data[field] = read.label;
        break;
      }
      case 'tags': {
        if (!Array.isArray(v)) {
          fail(field, `must be a list of tags; found ${kindOf(v)}`);
          break;
        }
        // One problem per field is enough: a wrong tag scheme would otherwise name every token of the line.
        const at = v.findIndex((t) => typeof t !== 'string' || !rule.oneOf.includes(t));
        if (at >= 0) {
          fail(`${field}.${at}`, `must be one of ${rule.oneOf.join(', ')}; found ${JSON.stringify(v[at])}`);
          break;
        }
        const tokens = record[rule.tokens];
        if (Array.isArray(tokens) && tokens.length > 0 && tokens.length !== v.length)
          fail(
            field,
            `must have one tag per token of "${rule.tokens}" (${v.length} tags, ${tokens.length} tokens)`,
          );
        break;
      }
      case 'label_set': {
        if (!Array.isArray(v)) {
          fail(field, `must be a list of labels; found ${kindOf(v)}`);
          break;
        }
        const labels: string[] = [];
        let bad = false;
        for (const [i, item] of v.entries()) {
          const read = readLabel(item, { oneOf: rule.oneOf, numbers: true });
          if ('error' in read) {
            fail(`${field}.${i}`, read.error);
            bad = true;
            break;
          }
          labels.push(read.label);
        }
        if (bad) break;
        if (new Set(labels).size !== labels.length) {
          fail(field, 'repeats a label');
          break;
        }
        // Canonical order (the task's), whatever order the file lists them in.
        data[field] = rule.oneOf.filter((c) => labels.includes(c));
        break;
      }
    }
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, data };
}

/** IOB2 tags over the given entity types, plus `O`. */
export function iob2Tags(entityTypes: readonly string[]): readonly string[] {
  return ['O', ...entityTypes.flatMap((t) => [`B-${t}`, `I-${t}`])];
}
