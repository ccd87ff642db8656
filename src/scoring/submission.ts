/**
 * Reading a submission: a folder or a `.zip` of `<Task>.jsonl` files, or a run folder (its `predictions/`). A zip
 * may hold its files at the root or inside one folder; anything else in it is rejected. Files that name no task are
 * reported, never skipped quietly, and a path with no task file at all is an error (`NO_FILES`), never an empty
 * result: the CLI and the library read submissions here alike.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { type JsonlLine, parseJsonl, readJsonlLines } from '../data/jsonl.js';
import { decodeUtf8, encodingMessage, TextEncodingError } from '../data/text.js';
import { didYouMean, isTaskName, TASKS } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import type { SubmissionIssue } from './issues.js';
import { isLmEvalOutput, readLmEval } from './lm-eval.js';

import type { Submission, SubmissionFile } from './submission-types.js';

export type { Submission, SubmissionFile };

// Archive tools add these; they carry no predictions.
const ARCHIVE_JUNK = /(^|\/)(__MACOSX\/|\.DS_Store$)/;

/**
 * Where a task file that names no known task may come from, for a reader on the user's own machine: a task defined
 * in a file is known only once its definition is read. (Not said to an upload: a leaderboard's boards are fixed.)
 */
const DEFINED_TASK_HINT =
  '; a task defined in a file is known only with its definition: give --tasks-dir DIR (or RUMEDBENCH_TASKS)';

function classify(
  name: string,
  display: string,
  issues: SubmissionIssue[],
  local: boolean,
): { task: string } | undefined {
  if (!name.endsWith('.jsonl')) {
    issues.push({
      severity: 'warning',
      code: 'IGNORED_FILE',
      file: display,
      message: 'not a .jsonl file; ignored',
      expected: '<Task>.jsonl',
    });
    return undefined;
  }
  const task = name.slice(0, -'.jsonl'.length);
  // ECG2Pathology, a MedBench platform task, is a task too (shipped as a definition): scored where its gold is given.
  if (isTaskName(task)) return { task };
  const near = didYouMean(task);
  issues.push({
    severity: 'error',
    code: 'UNKNOWN_TASK_FILE',
    file: display,
    message: `"${name}" names no RuMedBench task${near || (local ? DEFINED_TASK_HINT : '')}`,
    expected: `<Task>.jsonl of a known task: ${TASKS.map((t) => t.name).join(', ')}`,
  });
  return undefined;
}

async function readFolder(dir: string): Promise<Submission> {
  const issues: SubmissionIssue[] = [];
  const files: SubmissionFile[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    const hit = classify(name, path, issues, true);
    if (!hit) continue;
    const lines = await readLines(path, issues);
    if (lines) files.push({ task: hit.task, file: path, lines });
  }
  return { source: dir, files, issues };
}

async function readZip(zipPath: string): Promise<Submission> {
  const issues: SubmissionIssue[] = [];
  let entries: Record<string, Uint8Array>;
  // Imported here: most submissions are folders, and the zip reader was a quarter of the code `eval` loads.
  const { unzipSync } = await import('fflate');
  try {
    entries = unzipSync(readFileSync(zipPath));
  } catch (e) {
    return {
      source: zipPath,
      files: [],
      issues: [
        {
          severity: 'error',
          code: 'BAD_ZIP',
          file: zipPath,
          message: `not a readable zip: ${(e as Error).message}`,
        },
      ],
    };
  }
  const names = Object.keys(entries).filter((n) => !n.endsWith('/'));
  return submissionFromEntries(
    zipPath,
    names.map((name) => ({
      name,
      text: () => decodeUtf8(entries[name] as Uint8Array, `${zipPath}!${name}`),
    })),
    issues,
    { local: true },
  );
}

/** One file of an archive or an upload: its name inside and its text, read only when the name is a task file. */
export interface NamedText {
  name: string;
  text: () => string;
}

/**
 * A submission from named texts (a zip's entries, uploaded files), laid out as a zip may be: `<Task>.jsonl` files at
 * the root, or all inside one folder; archive junk is ignored with a warning; anything else is an issue.
 */
export function submissionFromEntries(
  source: string,
  entries: readonly NamedText[],
  issues: SubmissionIssue[] = [],
  /** local: read on the user's machine (a zip), where a task defined in a file can be named with --tasks-dir. */
  options: { local?: boolean } = {},
): Submission {
  const junk = entries.filter((e) => ARCHIVE_JUNK.test(e.name));
  for (const e of junk) {
    issues.push({
      severity: 'warning',
      code: 'IGNORED_FILE',
      file: `${source}!${e.name}`,
      message: 'archive metadata; ignored',
    });
  }
  const real = entries.filter((e) => !ARCHIVE_JUNK.test(e.name)).sort((a, b) => a.name.localeCompare(b.name));
  // Files at the root, or all inside one top folder (what "compress folder" produces).
  const folders = new Set(
    real.map((e) => (e.name.includes('/') ? e.name.slice(0, e.name.indexOf('/') + 1) : '')),
  );
  const prefix = folders.size === 1 ? ([...folders][0] as string) : '';
  const files: SubmissionFile[] = [];
  for (const { name, text } of real) {
    const display = `${source}!${name}`;
    const inner = name.slice(prefix.length);
    if (inner.includes('/') || (prefix === '' && name.includes('/'))) {
      issues.push({
        severity: 'error',
        code: 'BAD_ZIP_LAYOUT',
        file: display,
        message: 'the zip must hold <Task>.jsonl files at its root or inside one folder',
        found: name,
      });
      continue;
    }
    const hit = classify(inner, display, issues, options.local ?? false);
    if (!hit) continue;
    let content: string;
    try {
      content = text();
    } catch (e) {
      if (!(e instanceof TextEncodingError)) throw e;
      issues.push(encodingIssue(display, e));
      continue;
    }
    files.push({ task: hit.task, file: display, lines: [...parseJsonl(content)] });
  }
  return { source, files, issues };
}

/**
 * A run folder (`llm`, `baseline`: summary.json beside predictions/) stands for its predictions: its test ones
 * (predictions/), or its private-test ones (submission.zip) when the private test is what is scored.
 */
export const predictionsOf = (path: string, split?: Split): string => {
  if (!existsSync(join(path, 'summary.json'))) return path;
  if (split === 'private_test' && existsSync(join(path, 'submission.zip')))
    return join(path, 'submission.zip');
  return existsSync(join(path, 'predictions')) ? join(path, 'predictions') : path;
};

/** Where the predictions may be when a folder holds none: run folders (or predictions folders) inside it. */
function folderHint(path: string): string {
  if (!statSync(path).isDirectory()) return '';
  const inside = readdirSync(path, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join(path, d.name))
    .filter((d) => existsSync(join(d, 'predictions')) || readdirSync(d).some((f) => f.endsWith('.jsonl')))
    .slice(0, 3);
  const near = inside.map((d) => (existsSync(join(d, 'predictions')) ? join(d, 'predictions') : d));
  return near.length > 0 ? `; did you mean ${near.join(' or ')}?` : '';
}

/**
 * Reads a submission: a folder, a zip, one `<Task>.jsonl`, a run folder (read as its `predictions/`), or an
 * lm-evaluation-harness output folder (src/scoring/lm-eval.ts). Problems
 * come back as issues, not exceptions; a path that holds no task file is one `NO_FILES` error.
 * @example const s = await readSubmission('runs/naive'); // runs/naive/predictions' files
 */
export async function readSubmission(
  path: string,
  options: {
    /** The split a run folder's predictions are of (a private test's `submission.zip`). */
    split?: Split;
    /** The data folder: where an lm-eval run of a task not exported by us finds a ranking task's train inventory. */
    dataDir?: string;
  } = {},
): Promise<Submission> {
  // An lm-evaluation-harness output folder: its samples, checked against our prompts, read as predictions.
  const read = isLmEvalOutput(path)
    ? (await readLmEval(path, options.dataDir !== undefined ? { dataDir: options.dataDir } : {})).submission
    : await readPath(predictionsOf(path, options.split));
  // Nothing to score is a mistake (a wrong folder), never an empty result; other errors already say why.
  if (read.files.length === 0 && !read.issues.some((i) => i.severity === 'error')) {
    read.issues.push({
      severity: 'error',
      code: 'NO_FILES',
      file: path,
      message: `no <Task>.jsonl files to score in ${path}${folderHint(path)}`,
      expected: 'a predictions folder, a run folder, a submission.zip or <Task>.jsonl files',
    });
  }
  return read;
}

async function readPath(path: string): Promise<Submission> {
  if (!existsSync(path)) {
    return {
      source: path,
      files: [],
      issues: [
        {
          severity: 'error',
          code: 'SUBMISSION_NOT_FOUND',
          file: path,
          message: 'no such file or folder',
          expected: 'a folder or a .zip of <Task>.jsonl files',
        },
      ],
    };
  }
  if (statSync(path).isDirectory()) return readFolder(path);
  if (path.toLowerCase().endsWith('.zip')) return readZip(path);
  // A single task file is a submission of one task.
  const issues: SubmissionIssue[] = [];
  const hit = classify(basename(path), path, issues, true);
  if (!hit) return { source: path, files: [], issues };
  const lines = await readLines(path, issues);
  return { source: path, files: lines ? [{ task: hit.task, file: path, lines }] : [], issues };
}

const encodingIssue = (file: string, e: TextEncodingError): SubmissionIssue => ({
  severity: 'error',
  code: 'BAD_ENCODING',
  file,
  message: encodingMessage(e.found),
  expected: 'UTF-8',
  found: e.found,
});

/** A task file's lines, or one BAD_ENCODING issue (not an error per line) when it is not UTF-8. */
async function readLines(path: string, issues: SubmissionIssue[]): Promise<JsonlLine[] | undefined> {
  try {
    return await readJsonlLines(path);
  } catch (e) {
    if (!(e instanceof TextEncodingError)) throw e;
    issues.push(encodingIssue(path, e));
    return undefined;
  }
}
