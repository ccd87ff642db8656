/**
 * Validating one task file of a submission against the task's definition and, where the data is at hand, the
 * reference split. Every problem is collected (never only the first) and nothing is dropped without an issue.
 *
 * Two formats are accepted, detected per file:
 * - RuMedBench (upstream `code/*\/out`): the record's id, its gold field and `prediction`;
 * - MedBench platform: the id and the gold field carrying the prediction; gold then comes from the data split.
 */
import type { JsonlLine } from '../data/jsonl.js';
import type { Prediction } from '../metrics/item-stats.js';
import { heldByHost } from '../tasks/registry.js';
import type { Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { type SubmissionIssue, show } from './issues.js';

export type SubmissionFormat = 'rumedbench' | 'platform';

export interface ScoredItem {
  id: string;
  gold: Prediction;
  /** null: no answer (an unparsed model reply), scored as wrong. */
  prediction: Prediction | null;
}

export interface Reference {
  split: Split;
  /** The split's records, in file order; undefined where the data file is not available. */
  records?: readonly TaskRecord[];
  /**
   * Where records is undefined: where the split was looked for and not found (`/data/RuMedNLI/test_v1.jsonl: not
   * found`, or `no such folder: /data`), for messages that name the place.
   */
  notFound?: string;
  /** Set when the caller chose to score on the gold in the files alone (`--file-gold`). */
  fileGoldOnly?: boolean;
  /**
   * A closed test (a leaderboard's private_test): the gold is secret. Answer fields in a file are ignored (never
   * compared with the gold, never scored on), and every item must be answered, so that no message and no score
   * tells anything about one item.
   */
  hiddenGold?: boolean;
  /** Labels seen in train (ranking tasks), to count predictions that can never be right. */
  trainLabels?: ReadonlySet<string>;
}

export interface ValidatedTask {
  task: TaskDefinition;
  file: string;
  format: SubmissionFormat | undefined;
  /** Items ready to score, in reference order; undefined when the file has errors or no gold is available. */
  items?: ScoredItem[];
  /** Why the task is not scored, where it is not. */
  unscored?: string;
  issues: SubmissionIssue[];
}

const PREDICTION = 'prediction';

/** What a file whose first line and most lines are not JSON looks like instead, or undefined. */
function notJsonlKind(lines: readonly JsonlLine[]): string | undefined {
  const first = lines[0];
  if (lines.length < 2 || !first || !('error' in first)) return undefined;
  const bad = lines.filter((l) => 'error' in l).length;
  if (bad * 2 < lines.length) return undefined;
  const start = first.start ?? '';
  if (/^\[\s*(\{|$)/.test(start)) return 'a JSON array (one value over many lines)';
  if (/^[^{[]*[,;\t]/.test(start)) return 'CSV or TSV (a header line, then values)';
  return undefined;
}

/**
 * Whether the task's data may write a label as an integer (its gold field's rule has `numbers`: a defined task's
 * gold by default, `"answer": 1` for the label "1"). Answers are read by the same rule as the gold they are scored
 * against: an integer that the data's gold may be is accepted as a prediction too, never refused as WRONG_TYPE.
 */
function integerLabels(task: TaskDefinition): boolean {
  const rule = task.recordFields[task.goldField];
  return rule?.type === 'label' && rule.numbers === true;
}

/** A label as the task reads one: a string, or an integer where its gold may be one (as its decimal string). */
function labelOf(task: TaskDefinition, value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return Number.isInteger(value) && integerLabels(task) ? String(value) : undefined;
}

/** Checks one value against the task's label space; returns a problem or undefined. */
export function checkAnswer(
  task: TaskDefinition,
  value: unknown,
  tokensLength?: number,
): { code: SubmissionIssue['code']; message: string; expected: string; found: string } | undefined {
  // What was found and what was expected are written only for a problem: most answers have none.
  const found = (): string => show(value);
  switch (task.kind) {
    case 'classification': {
      const expected = (): string => `one of ${task.labels.map((l) => JSON.stringify(l)).join(', ')}`;
      const label = labelOf(task, value);
      if (label === undefined)
        return {
          code: 'WRONG_TYPE',
          message: integerLabels(task)
            ? 'the answer must be a label (a string or an integer)'
            : 'the answer must be a string',
          expected: expected(),
          found: found(),
        };
      if (label.trim() === '')
        return {
          code: 'EMPTY_PREDICTION',
          message: 'the answer is empty',
          expected: expected(),
          found: found(),
        };
      if (!task.labels.includes(label))
        return {
          code: 'UNKNOWN_LABEL',
          message: 'label outside the label space',
          expected: expected(),
          found: found(),
        };
      return undefined;
    }
    case 'ranking': {
      const k = task.k ?? 3;
      const expected = (): string => `a list of 1 to ${k} distinct labels, each ${task.labelDescription}`;
      if (!Array.isArray(value))
        return {
          code: 'WRONG_TYPE',
          message: 'the answer must be a ranked list',
          expected: expected(),
          found: found(),
        };
      if (value.length === 0)
        return {
          code: 'EMPTY_PREDICTION',
          message: 'the ranked list is empty',
          expected: expected(),
          found: found(),
        };
      // Upstream counts a hit anywhere in the list, so a longer list would game Hit@3.
      if (value.length > k) {
        return {
          code: 'TOO_MANY_PREDICTIONS',
          message: `the ranked list has ${value.length} labels`,
          expected: expected(),
          found: found(),
        };
      }
      for (const item of value) {
        const v = labelOf(task, item);
        if (v === undefined)
          return {
            code: 'WRONG_TYPE',
            message: integerLabels(task)
              ? 'every label must be a string or an integer'
              : 'every label must be a string',
            expected: expected(),
            found: found(),
          };
        if (v.trim() === '')
          return {
            code: 'EMPTY_PREDICTION',
            message: 'a label is empty',
            expected: expected(),
            found: found(),
          };
        if (!task.labelPattern.test(v) || (task.labels !== undefined && !task.labels.includes(v))) {
          return {
            code: 'UNKNOWN_LABEL',
            message: `${show(v)} is not ${task.labelDescription}`,
            expected: expected(),
            found: found(),
          };
        }
      }
      if (new Set(value.map(String)).size !== value.length) {
        return {
          code: 'DUPLICATE_PREDICTION',
          message: 'the ranked list repeats a label',
          expected: expected(),
          found: found(),
        };
      }
      return undefined;
    }
    case 'tagging': {
      const { tags } = task;
      const expected = (): string =>
        `a list of ${tokensLength ?? 'one per token'} IOB2 tags from ${tags.join(', ')}`;
      if (!Array.isArray(value))
        return {
          code: 'WRONG_TYPE',
          message: 'the answer must be a list of tags',
          expected: expected(),
          found: found(),
        };
      if (value.length === 0)
        return {
          code: 'EMPTY_PREDICTION',
          message: 'the tag list is empty',
          expected: expected(),
          found: found(),
        };
      const bad = value.findIndex((t) => typeof t !== 'string' || !tags.includes(t));
      if (bad >= 0) {
        return {
          code: typeof value[bad] === 'string' ? 'UNKNOWN_LABEL' : 'WRONG_TYPE',
          message: `tag ${bad + 1} (${show(value[bad])}) is not an IOB2 tag of this task`,
          expected: expected(),
          found: found(),
        };
      }
      if (tokensLength !== undefined && value.length !== tokensLength) {
        return {
          code: 'NER_LENGTH_MISMATCH',
          message: `${value.length} tags for ${tokensLength} tokens`,
          expected: expected(),
          found: `${value.length} tags`,
        };
      }
      return undefined;
    }
    case 'multilabel': {
      const expected = (): string => `a list of distinct classes from ${describeClasses(task.classes)}`;
      if (!Array.isArray(value))
        return {
          code: 'WRONG_TYPE',
          message: 'the answer must be a list of classes',
          expected: expected(),
          found: found(),
        };
      const bad = value.findIndex(
        (v) => (typeof v !== 'string' && !Number.isInteger(v)) || !task.classes.includes(String(v)),
      );
      if (bad >= 0) {
        const v = value[bad];
        return {
          code: typeof v === 'string' || Number.isInteger(v) ? 'UNKNOWN_LABEL' : 'WRONG_TYPE',
          message: `class ${bad + 1} (${show(v)}) is not a class of this task`,
          expected: expected(),
          found: found(),
        };
      }
      if (new Set(value.map(String)).size !== value.length)
        return {
          code: 'DUPLICATE_PREDICTION',
          message: 'the list repeats a class',
          expected: expected(),
          found: found(),
        };
      // An empty set is an answer (no class applies), not a missing one.
      return undefined;
    }
  }
}

/** A class list for messages: all of a short one, the ends of a long one. */
function describeClasses(classes: readonly string[]): string {
  const q = (l: string) => JSON.stringify(l);
  return classes.length <= 8
    ? classes.map(q).join(', ')
    : `${classes.slice(0, 3).map(q).join(', ')} … ${classes.slice(-2).map(q).join(', ')} (${classes.length} classes)`;
}

/**
 * An answer in the task's canonical shape: a multi-label answer's classes as strings (files write class indices as
 * numbers, as upstream's ECG2Pathology baselines do), in the task's class order. Others as given.
 */
export function canonicalAnswer(task: TaskDefinition, value: unknown): Prediction {
  if (task.kind === 'multilabel') {
    const set = new Set((value as unknown[]).map(String));
    return task.classes.filter((c) => set.has(c));
  }
  // An integer label (accepted where the gold may be one) is its decimal string, as the data's gold is read.
  if (task.kind === 'classification' && typeof value === 'number') return String(value);
  if (task.kind === 'ranking' && Array.isArray(value)) return value.map(String);
  if (task.kind === 'ranking' && typeof value === 'number') return String(value);
  return value as Prediction;
}

/** A ranking task's gold (one label, not a list), checked; a problem or undefined. */
export function checkRankingGold(
  task: TaskDefinition & { kind: 'ranking' },
  value: unknown,
): { message: string; expected: string } | undefined {
  const label = labelOf(task, value);
  return label !== undefined && task.labelPattern.test(label)
    ? undefined
    : { message: 'must be one label', expected: task.labelDescription };
}

function sameAnswer(a: unknown, b: unknown): boolean {
  // Answers are a label or a list of labels (tags): compared as such, without two JSON strings per item (RuMedNER's
  // sentences made that 5 ms of a cold `eval`); anything else as its JSON.
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  if (Array.isArray(a) && Array.isArray(b) && a.every((x) => typeof x === 'string')) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Validates one task file. Pure: the caller reads the files and the reference data. */
export function validateTaskFile(
  task: TaskDefinition,
  file: string,
  lines: readonly JsonlLine[],
  reference: Reference,
): ValidatedTask {
  const issues: SubmissionIssue[] = [];
  const err = (issue: Omit<SubmissionIssue, 'severity' | 'file' | 'task'>): void => {
    issues.push({ severity: 'error', file, task: task.name, ...issue });
  };
  const records = reference.records;
  const byId = records ? new Map(records.map((r) => [r.id, r])) : undefined;
  const hostHeld =
    !records && (task.optional === true || heldByHost(task, reference.split)) && !reference.fileGoldOnly;
  const fieldsHint = `"${task.idField}" with "${PREDICTION}" (RuMedBench format) or "${task.goldField}" (MedBench platform format)`;

  let format: SubmissionFormat | undefined;
  let fileGoldIgnored = 0;
  let unanswered = 0;
  const seen = new Map<string, number>();
  const answers = new Map<string, { prediction: Prediction | null; fileGold?: Prediction }>();

  if (lines.length === 0)
    err({
      code: 'EMPTY_FILE',
      message: 'the file has no records',
      expected: `one record per ${reference.split} item`,
    });

  // A file that is not JSONL at all (CSV, a pretty-printed JSON array) is one mistake, not one per line.
  const notJsonl = notJsonlKind(lines);
  if (notJsonl) {
    err({
      code: 'NOT_JSONL',
      line: 1,
      message: `the file looks like ${notJsonl}, not JSONL`,
      expected: `one JSON object per line: {${fieldsHint}}`,
    });
    return { task, file, format: undefined, issues };
  }

  for (const entry of lines) {
    const { line } = entry;
    if ('error' in entry) {
      err({ code: 'MALFORMED_JSON', line, message: entry.error, expected: 'one JSON object per line' });
      continue;
    }
    const obj = entry.value;
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
      err({
        code: 'NOT_AN_OBJECT',
        line,
        message: 'the line is not a JSON object',
        expected: fieldsHint,
        found: show(obj),
      });
      continue;
    }
    const rec = obj as Record<string, unknown>;
    const rawId = rec[task.idField];
    if (typeof rawId !== 'string' || rawId === '') {
      err({
        code: 'MISSING_ID',
        line,
        message: `field "${task.idField}" is missing or not a string`,
        expected: 'a string id',
        found: show(rawId),
      });
      continue;
    }
    const id = rawId;
    const at = { line, id };
    const first = seen.get(id);
    if (first !== undefined) {
      err({
        ...at,
        code: 'DUPLICATE_ID',
        message: `id already given on line ${first}`,
        expected: 'each id once',
      });
      continue;
    }
    seen.set(id, line);

    const lineFormat: SubmissionFormat | undefined =
      PREDICTION in rec ? 'rumedbench' : task.goldField in rec ? 'platform' : undefined;
    if (lineFormat === undefined) {
      err({
        ...at,
        code: 'MISSING_PREDICTION',
        message: 'no prediction in this record',
        expected: fieldsHint,
        found: `fields ${Object.keys(rec).join(', ')}`,
      });
      continue;
    }
    if (format === undefined) format = lineFormat;
    else if (lineFormat !== format) {
      err({
        ...at,
        code: 'MIXED_FORMAT',
        message: `a ${lineFormat}-format line in a ${format}-format file`,
        expected: `every line in the ${format} format`,
      });
      continue;
    }

    const ref = byId?.get(id);
    if (byId && !ref) {
      err({
        ...at,
        code: 'UNKNOWN_ID',
        message: `id is not in the ${reference.split} split of ${task.name}`,
      });
      continue;
    }
    const refGold = ref?.gold;
    const tokensLength =
      task.kind === 'tagging'
        ? ref
          ? ((ref.raw[task.tokensField] ?? ref.gold) as unknown[]).length
          : Array.isArray(rec[task.goldField])
            ? (rec[task.goldField] as unknown[]).length
            : undefined
        : undefined;

    const given = format === 'rumedbench' ? rec[PREDICTION] : rec[task.goldField];
    // null is an explicit "no answer" (a model reply that could not be read): scored as wrong and counted.
    const problem = given === null ? undefined : checkAnswer(task, given, tokensLength);
    if (problem) {
      err({ ...at, ...problem });
      continue;
    }
    const prediction = given === null ? null : canonicalAnswer(task, given);

    if (prediction === null && reference.hiddenGold) unanswered += 1;
    let fileGold: Prediction | undefined;
    if (format === 'rumedbench' && reference.hiddenGold) {
      if (rec[task.goldField] !== undefined) fileGoldIgnored += 1;
    } else if (format === 'rumedbench') {
      const g = rec[task.goldField];
      if (g === undefined) {
        // A split only the task's host holds has no gold here to miss: the file is validated, not scored (below).
        if (!ref && !hostHeld) {
          err({
            ...at,
            code: 'INVALID_GOLD',
            message: `field "${task.goldField}" (gold) is missing and no reference data is available to supply it`,
          });
          continue;
        }
      } else {
        // Gold in the file is checked like an answer, but a ranking task's gold is one label, not a list.
        const goldProblem =
          task.kind === 'ranking' ? checkRankingGold(task, g) : checkAnswer(task, g, tokensLength);
        if (goldProblem) {
          err({
            ...at,
            code: 'INVALID_GOLD',
            message: `field "${task.goldField}" (gold) is invalid: ${goldProblem.message}`,
            expected: goldProblem.expected,
            found: show(g),
          });
          continue;
        }
        const gc = canonicalAnswer(task, g);
        if (refGold !== undefined && !sameAnswer(gc, refGold)) {
          err({
            ...at,
            code: 'GOLD_MISMATCH',
            message: `gold in the file differs from the ${reference.split} split`,
            expected: show(refGold),
            found: show(g),
          });
          continue;
        }
        fileGold = gc;
      }
    }
    answers.set(id, {
      prediction: prediction as Prediction,
      ...(fileGold !== undefined ? { fileGold } : {}),
    });
  }

  if (records) {
    for (const r of records) {
      if (!seen.has(r.id)) {
        err({
          code: 'MISSING_ITEM',
          id: r.id,
          message: `no prediction for this ${reference.split} item (data line ${r.line})`,
        });
      }
    }
  }

  const unknown = issues.filter((i) => i.code === 'UNKNOWN_ID').length;
  const missing = issues.filter((i) => i.code === 'MISSING_ITEM').length;
  if (reference.hiddenGold && (unanswered > 0 || missing > 0)) {
    const total = records?.length ?? seen.size;
    err({
      code: 'UNANSWERED_ITEMS',
      message: `${missing + unanswered} of ${total} items have no answer (${missing} missing, ${unanswered} null): a closed test is scored only when every item is answered`,
      expected: `an answer for each of the ${total} items`,
    });
  }
  if (fileGoldIgnored > 0) {
    issues.push({
      severity: 'warning',
      file,
      task: task.name,
      code: 'FILE_GOLD_IGNORED',
      message: `the "${task.goldField}" field of ${fileGoldIgnored} line(s) was ignored: a closed test is scored only against the gold its organisers hold`,
    });
  }
  if (unknown > 0 && missing > 0) {
    issues.push({
      severity: 'warning',
      file,
      task: task.name,
      code: 'DATA_VERSION_HINT',
      message: `${unknown} unknown and ${missing} missing ids: the file may answer another release of the ${reference.split} split; --file-gold scores a RuMedBench-format file on the gold it carries`,
    });
  }
  const hasErrors = issues.some((i) => i.severity === 'error');
  // A task whose records only its host holds (ECG2Pathology; a definition listing a split without its file): its gold
  // is its host's. Checked, then left unscored, saying how.
  if (hostHeld) {
    const unscored = `no gold for ${task.name} here (its host holds it; \`eval --gold DIR\` scores it on ${task.name}.jsonl in DIR)`;
    issues.push({
      severity: 'warning',
      file,
      task: task.name,
      code: 'NO_GOLD',
      message: `${unscored}; validated, not scored`,
    });
    return hasErrors ? { task, file, format, issues } : { task, file, format, unscored, issues };
  }
  if (!records) {
    // Without the data a file would be scored on the gold it carries itself: only when asked (--file-gold).
    const onFileGold = format !== 'platform' && reference.fileGoldOnly;
    issues.push({
      severity: onFileGold ? 'warning' : 'error',
      file,
      task: task.name,
      code: 'NO_REFERENCE_DATA',
      message: onFileGold
        ? 'scored on the gold in the file, as upstream eval.py does (--file-gold): ids were not checked against the data'
        : format === 'platform' && reference.fileGoldOnly
          ? `the ${reference.split} split of ${task.name} is needed for gold labels (--file-gold is for RuMedBench-format files)`
          : `the ${reference.split} split of ${task.name} is not in the data folder${reference.notFound ? ` (${reference.notFound})` : ''}: run \`rumedbench data download\` or give --data DIR (or RUMEDBENCH_DATA); --file-gold scores on the gold the file carries instead`,
    });
  }
  if (hasErrors || issues.some((i) => i.severity === 'error')) return { task, file, format, issues };

  // Reference order where the data is at hand, else file order.
  const order = records ? records.map((r) => r.id) : [...answers.keys()];
  const items: ScoredItem[] = [];
  const noGold: string[] = [];
  for (const id of order) {
    const a = answers.get(id) as { prediction: Prediction | null; fileGold?: Prediction };
    const gold = a.fileGold ?? (byId?.get(id)?.gold as Prediction | undefined);
    if (gold === undefined) noGold.push(id);
    else items.push({ id, gold, prediction: a.prediction });
  }
  if (noGold.length > 0) {
    // Gold given for some items only (a --gold file short of ids) is named as such; a hidden gold's coverage is not.
    const unscored =
      noGold.length < order.length && !reference.hiddenGold
        ? `no gold for ${noGold.length} of ${order.length} items of the ${reference.split} split of ${task.name} (e.g. id ${noGold[0]}): validated, not scored`
        : `no gold labels in the ${reference.split} split of ${task.name} (closed test): validated, not scored`;
    issues.push({ severity: 'warning', file, task: task.name, code: 'NO_GOLD', message: unscored });
    return { task, file, format, unscored, issues };
  }

  if (task.kind === 'ranking' && reference.trainLabels) {
    const train = reference.trainLabels;
    const outside = items.flatMap((it) => ((it.prediction ?? []) as string[]).filter((l) => !train.has(l)));
    if (outside.length > 0) {
      const examples = [...new Set(outside)]
        .slice(0, 5)
        .map((l) => JSON.stringify(l))
        .join(', ');
      issues.push({
        severity: 'warning',
        file,
        task: task.name,
        code: 'LABEL_OUTSIDE_TRAIN',
        message: `${outside.length} predicted label(s) never occur in train, e.g. ${examples}; the label space is the train inventory`,
      });
    }
  }
  return { task, file, format, items, issues };
}
