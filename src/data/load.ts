/**
 * Loading a task split: stream its JSONL, check every record against the task's field rules, check ids are unique,
 * and report every bad line as `file:line (id …): what was wrong`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { DataInvalidError, type DataIssue, DataNotFoundError } from '../errors.js';
import { checkRecord, type RecordIssue } from '../tasks/record.js';
import type { Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { fieldStringsOf } from './field-scan.js';
import { parseJsonlBytes, readJsonlLines } from './jsonl.js';
import { cachedParse, jsonFaithful } from './parsed-cache.js';
import { resolveDataDir, splitPath } from './paths.js';

export interface LoadOptions {
  /** The data folder; resolved with {@link resolveDataDir} when absent. */
  dataDir?: string;
  /**
   * The split's gold is held apart from its data (`--gold DIR`): the data's gold field is then not required, in any
   * split, and is replaced by that gold where the caller has it.
   */
  goldApart?: boolean;
  /**
   * Only these fields of each record are kept (checked all the same): scoring reads the id, the gold, a tagging
   * task's tokens and the cluster, and the texts beside them are most of what a test set weighs.
   */
  fields?: readonly string[];
}

/** Upstream's mirror note: this file is published but too large for some mirrors. */
function missingHint(task: TaskDefinition, split: Split): string {
  if (task.source !== undefined) {
    return task.files?.[split]
      ? `It is the ${split} file that ${task.source} names.`
      : `${task.source} names no ${split} file${task.splits.length > 0 ? ` (its splits: ${task.splits.join(', ')})` : ''}; give its gold with --gold DIR where the host holds it.`;
  }
  if (!task.splits.includes(split)) {
    return `${task.name} has no ${split} split upstream (it has ${task.splits.join(', ')}).`;
  }
  return 'Fetch the data with `rumedbench data download`, or point --data / RUMEDBENCH_DATA at a folder that has it.';
}

/** Converts zod's issue path and message into one readable phrase. */
function describeRecordIssue(issue: RecordIssue): string {
  return issue.path === '' ? issue.message : `field "${issue.path}": ${issue.message}`;
}

/** Validates parsed records of one split; returns typed records or throws with every problem listed. */
export function validateRecords(
  task: TaskDefinition,
  split: Split,
  file: string,
  lines: Iterable<{ line: number; value?: unknown; error?: string }>,
  options: Pick<LoadOptions, 'goldApart'> = {},
): TaskRecord[] {
  const issues: DataIssue[] = [];
  const records: TaskRecord[] = [];
  const seen = new Map<string, number>();
  // A closed test's data carries no gold; nor does any split whose gold is held apart.
  const goldRequired = split !== 'private_test' && !options.goldApart;
  for (const entry of lines) {
    if (entry.error !== undefined) {
      issues.push({ file, line: entry.line, message: entry.error });
      continue;
    }
    const parsed = checkRecord(task.recordFields, entry.value);
    const rawId = (entry.value as Record<string, unknown> | null)?.[task.idField];
    const id = typeof rawId === 'string' ? rawId : undefined;
    const at = { file, line: entry.line, ...(id !== undefined ? { id } : {}) };
    if (!parsed.ok) {
      for (const issue of parsed.issues) issues.push({ ...at, message: describeRecordIssue(issue) });
      continue;
    }
    const raw = parsed.data;
    const recordId = raw[task.idField] as string;
    const gold = raw[task.goldField] as string | string[] | undefined;
    if (gold === undefined && goldRequired) {
      issues.push({
        ...at,
        message: `field "${task.goldField}" is missing (required in the ${split} split, unless its gold is held apart: \`--gold DIR\`)`,
      });
      continue;
    }
    const first = seen.get(recordId);
    if (first !== undefined) {
      issues.push({ ...at, message: `duplicate id; first seen on line ${first}` });
      continue;
    }
    seen.set(recordId, entry.line);
    records.push({ id: recordId, gold, raw, line: entry.line });
  }
  if (issues.length > 0) throw new DataInvalidError(issues);
  return records;
}

/** The fields of `raw` named in `keep`, in the record's own order. */
function pick(raw: Readonly<Record<string, unknown>>, keep: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(raw)) if (keep.includes(k)) out[k] = raw[k];
  return out;
}

/**
 * Loads and validates one split of a task.
 * @example const test = await loadSplit(getTask('RuMedDaNet'), 'test', { dataDir: '../shared/rumedbench/data' });
 */
export async function loadSplit(
  task: TaskDefinition,
  split: Split,
  options: LoadOptions = {},
): Promise<TaskRecord[]> {
  const file = splitPath(options.dataDir ?? resolveDataDir(), task, split);
  if (!existsSync(file)) throw new DataNotFoundError(file, missingHint(task, split));
  // Read at once, not through fs/promises: a data file is a few megabytes in the page cache, and the promise's
  // open, stat, chunked reads and close were ~4 ms of idle waits in a cold `eval` (issue #47).
  const bytes = readFileSync(file);
  // Records are cached only where they were read from the bytes hashed.
  let fromBytes = true;
  const goldRequired = split !== 'private_test' && !options.goldApart;
  const keep = options.fields;
  // A record is its checked fields and its line: its id and gold are two of those fields.
  return cachedParse(
    bytes,
    {
      name: `${task.name}.${split}.records${keep ? `.${keep.join('+')}` : ''}`,
      rules: { fields: task.recordFields, id: task.idField, gold: task.goldField, goldRequired, keep },
    },
    {
      compute: async () => {
        let lines = parseJsonlBytes(file, bytes);
        // Not UTF-8: the line reader reads the file again and throws, naming the encoding.
        if (lines === undefined) {
          fromBytes = false;
          lines = await readJsonlLines(file);
        }
        const records = validateRecords(task, split, file, lines, options);
        return keep ? records.map((r) => ({ ...r, raw: pick(r.raw, keep) })) : records;
      },
      encode: (records) =>
        fromBytes && records.every((r) => jsonFaithful(r.raw))
          ? records.map((r) => [r.line, r.raw])
          : undefined,
      decode: (json) =>
        (json as [number, Record<string, unknown>][]).map(([line, raw]) => ({
          id: raw[task.idField] as string,
          gold: raw[task.goldField] as string | string[] | undefined,
          raw,
          line,
        })),
    },
  );
}

/** Whether every record of a split carries gold (private tests usually do not). */
export function hasGold(records: readonly TaskRecord[]): boolean {
  return records.length > 0 && records.every((r) => r.gold !== undefined);
}

/**
 * The gold labels of a split, without validating its records: the label inventory that scoring compares ranking
 * predictions with. Cheaper than {@link loadSplit} on the large train files; malformed lines are skipped here
 * because `data info` and training load the same file with full validation.
 */
export async function readGoldLabels(
  task: TaskDefinition,
  split: Split,
  options: LoadOptions = {},
): Promise<Set<string>> {
  const file = splitPath(options.dataDir ?? resolveDataDir(), task, split);
  if (!existsSync(file)) throw new DataNotFoundError(file, missingHint(task, split));
  const bytes = readFileSync(file);
  return cachedParse(
    bytes,
    { name: `${task.name}.${split}.${task.goldField}`, rules: { labelsOf: task.goldField } },
    {
      compute: () => fieldStringsOf(file, bytes, task.goldField),
      encode: (labels) => [...labels],
      decode: (json) => new Set(json as string[]),
    },
  );
}

/**
 * The value of a load, or undefined where the file is missing (an invalid file still throws): for callers that
 * carry on without an optional split.
 * @example const dev = await ifPresent(loadSplit(task, 'dev', { dataDir }));
 */
export async function ifPresent<T>(load: Promise<T>): Promise<T | undefined> {
  try {
    return await load;
  } catch (e) {
    if (e instanceof DataNotFoundError) return undefined;
    throw e;
  }
}
