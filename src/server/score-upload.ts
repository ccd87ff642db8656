/**
 * Scoring one upload: read the hostile bytes (upload.ts), decide the board, validate and score with the project's
 * scorer against gold held in memory, and hash the normalised content. Pure of any server or database: it runs in a
 * worker thread (score-worker.ts) so that the event loop keeps answering pages while uploads are scored.
 */
import { createHash } from 'node:crypto';
import { mean } from '../metrics/item-stats.js';
import type { LadderItems } from '../metrics/ladder.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import type { ReferenceLoader } from '../scoring/reference.js';
import { type EvaluationResult, SIXTH_TASK, scoreValidated, validateRead } from '../scoring/score.js';
import { submissionFromEntries } from '../scoring/submission.js';
import { validateTaskFile } from '../scoring/validate.js';
import { getTask, heldByHost, isTaskName, TASKS } from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import { decodeRows, encodeItemStats, type StoredItemStats } from './boards/ranking.js';
import type { BoardName, SubmissionStatus } from './db/schema.js';
import { capIssues } from './submissions/issues.js';
import { readUpload, type UploadFile, type UploadLimits } from './upload.js';

export const BOARD_SPLIT: Record<BoardName, Split> = { public: 'test', closed: 'private_test' };

const hasSplit = (t: TaskDefinition, s: Split) => (t.splits as readonly Split[]).includes(s);

/**
 * The tasks of each board, in the paper's order, then the tasks defined in files that `serve --tasks-dir` loaded:
 * the public board has the five public tasks and every defined task with a test split (its gold public where its
 * test file is there; the host's, imported by the admin, where only the host holds its records: ECG2Pathology); the
 * closed board every task with a private test, whose gold the admin imports (for a task whose records only its host
 * holds, the imported gold's ids are the split). Read from the registry when asked, as definitions are loaded after
 * this module.
 */
export const BOARD_TASKS: Readonly<Record<BoardName, readonly string[]>> = {
  get public() {
    return TASKS.filter((t) => t.inOverall || (t.source !== undefined && hasSplit(t, 'test'))).map(
      (t) => t.name,
    );
  },
  get closed() {
    return TASKS.filter((t) => hasSplit(t, 'private_test')).map((t) => t.name);
  },
};

/**
 * The tasks of a board scored on gold only the host holds, which is hidden: every closed test, and on the public board
 * the tasks whose test records only their host has (ECG2Pathology). Nothing per item of them is kept or shown, and
 * their scores are released by the Ladder (see submissions/service.ts).
 */
export const HELD_TASKS: Readonly<Record<BoardName, readonly string[]>> = {
  get public() {
    return BOARD_TASKS.public.filter((t) => heldByHost(getTask(t), 'test'));
  },
  get closed() {
    return BOARD_TASKS.closed;
  },
};

/** The tasks whose records the platform has, which its own runs answer (a host-held split's records are not here). */
export const runnableTasks = (board: BoardName): string[] =>
  BOARD_TASKS[board].filter((t) => !heldByHost(getTask(t), BOARD_SPLIT[board]));

const onAnyBoard = (task: string) => BOARD_TASKS.public.includes(task) || BOARD_TASKS.closed.includes(task);

/**
 * The tasks each board's overall averages: the paper's five public tasks; the built-in closed tests. A defined task
 * is shown beside it, not averaged in (ECG2Pathology makes the public board's six-task overall: `SIX_TASK_OVERALL`).
 */
export const OVERALL_TASKS: Readonly<Record<BoardName, readonly string[]>> = {
  public: TASKS.filter((t) => t.inOverall).map((t) => t.name),
  closed: TASKS.filter((t) => t.source === undefined && hasSplit(t, 'private_test')).map((t) => t.name),
};

/** MedBench's six-task overall (the five public tasks and ECG2Pathology), on the public board when it has all six. */
export const SIX_TASK_OVERALL: readonly string[] = [...OVERALL_TASKS.public, SIXTH_TASK];

export interface ScoreJob {
  files: UploadFile[];
  /** The board asked for, or `auto`: decided by the ids in the files. */
  board: BoardName | 'auto';
  /** How messages name the upload. */
  source: string;
  bootstrap: number;
  seed: number;
  limits: UploadLimits;
}

export interface ScoreOutcome {
  board: BoardName;
  status: SubmissionStatus;
  result: EvaluationResult;
  /** The board's overall: the five public tasks' mean (public) or the three closed tasks' mean (closed). */
  overall: number | null;
  contentHash: string;
  /**
   * The files as read, to keep for audit and for paired comparisons; a rejected upload's are cut to their first
   * `REJECTED_KEEP_CHARS` altogether (a bomb is never stored inflated, nor copied back to the event loop whole).
   */
  files: { name: string; content: string }[];
  /** The result's issues, capped here (off the event loop): the first few of each code, long strings cut. */
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
  /** Issues left out of `errors` and `warnings`, counted per code. */
  omitted: Record<string, number>;
  /** Scored: per-item counts of each task, for the board's rank intervals (server-side only). */
  itemStats?: StoredItemStats;
}

/** What is kept of a rejected upload's files, in characters altogether: enough to see what was wrong. */
export const REJECTED_KEEP_CHARS = 256 * 1024;

/** A rejected upload's files, cut to `budget` characters altogether, each cut one saying how long it was. */
function keepBounded(
  files: { name: string; content: string }[],
  budget = REJECTED_KEEP_CHARS,
): { name: string; content: string }[] {
  let left = budget;
  return files.map((f) => {
    const take = Math.max(0, Math.min(left, f.content.length));
    left -= take;
    if (take === f.content.length) return f;
    return { name: f.name, content: `${f.content.slice(0, take)}\n… (cut: ${f.content.length} characters)` };
  });
}

export interface BoardReferences {
  public: ReferenceLoader;
  closed: ReferenceLoader;
}

const baseName = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

/** sha256 over each task file's non-blank lines, trimmed and sorted: the same predictions hash alike. */
function contentHash(entries: readonly { name: string; text: string }[]): string {
  const h = createHash('sha256');
  for (const e of [...entries].sort((a, b) => baseName(a.name).localeCompare(baseName(b.name)))) {
    const lines = e.text
      .replace(/^\uFEFF/, '')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .sort();
    h.update(`${baseName(e.name)}\n${lines.join('\n')}\n\0`);
  }
  return h.digest('hex');
}

/** The first id in a task file's text, if any line has one. */
function firstId(task: string, text: string): string | undefined {
  if (!isTaskName(task)) return undefined;
  const def = getTask(task);
  for (const line of text.split('\n', 50)) {
    try {
      const v = JSON.parse(line) as Record<string, unknown>;
      const id = v?.[def.idField];
      if (typeof id === 'string' || typeof id === 'number') return String(id);
    } catch {
      // Malformed lines are the validator's to report.
    }
  }
  return undefined;
}

async function decideBoard(
  entries: readonly { name: string; text: string }[],
  refs: BoardReferences,
): Promise<BoardName | SubmissionIssue> {
  const votes = new Set<BoardName>();
  const undecided: string[] = [];
  for (const e of entries) {
    const task = baseName(e.name).replace(/\.jsonl$/, '');
    if (!isTaskName(task) || !onAnyBoard(task)) continue;
    const def = getTask(task);
    if (!BOARD_TASKS.public.includes(task)) {
      votes.add('closed');
      continue;
    }
    if (!BOARD_TASKS.closed.includes(task)) {
      votes.add('public');
      continue;
    }
    // On both boards: the board whose split holds the file's first id. A split whose records only the host holds
    // has them once its gold is imported; where neither board can tell, the uploader must say.
    const id = firstId(task, e.text);
    const closed = (await refs.closed.load(def, 'private_test')).records;
    const open = (await refs.public.load(def, 'test')).records;
    const has = (records: typeof closed) => id !== undefined && records?.some((r) => r.id === id) === true;
    if (has(closed)) votes.add('closed');
    else if (has(open) || (closed && !open)) votes.add('public');
    else if (open && !closed) votes.add('closed');
    else if (heldByHost(def, 'test') && heldByHost(def, 'private_test')) undecided.push(task);
    else votes.add('public');
  }
  if (votes.size > 1) {
    return {
      severity: 'error',
      code: 'WRONG_BOARD',
      file: '(upload)',
      message:
        'the files answer both the public test sets and the closed (private) tests; upload them separately',
    };
  }
  if (undecided.length > 0 && votes.size === 0) {
    return {
      severity: 'error',
      code: 'WRONG_BOARD',
      file: '(upload)',
      message: `${undecided.join(', ')} is on both boards and its records are its host's: the ids do not tell which test the files answer; name the board (board: public or closed)`,
      expected: 'the board field: public or closed',
    };
  }
  return [...votes][0] ?? 'public';
}

/** Tasks on hidden gold leak nothing per item: only their aggregate metrics and intervals are kept. */
function aggregateOnly(result: EvaluationResult, held: readonly string[]): EvaluationResult {
  const tasks: EvaluationResult['tasks'] = {};
  for (const [name, t] of Object.entries(result.tasks)) {
    if (!held.includes(name)) {
      tasks[name] = t;
      continue;
    }
    const { breakdown: _breakdown, ...rest } = t;
    tasks[name] = rest as EvaluationResult['tasks'][string];
  }
  return { ...result, tasks };
}

/**
 * The counts the Ladder compares (metrics/ladder.ts): each task of the board on hidden gold, from an entry's stored
 * per-item counts; undefined unless every one of them is there (a ladder climbs on all of a board's hidden tasks).
 */
export function ladderItemsOf(board: BoardName, stats: StoredItemStats | undefined): LadderItems | undefined {
  if (!stats) return undefined;
  const items: LadderItems[number][] = [];
  for (const name of HELD_TASKS[board]) {
    const stored = stats[name];
    const task = getTask(name);
    const rows = stored ? decodeRows(task, stored) : undefined;
    if (!stored || !rows) return undefined;
    items.push({ task, key: stored.key, rows });
  }
  return items.length > 0 ? items : undefined;
}

/** The tasks of a result (scored or waiting for gold) that are on hidden gold: whose Ladder an upload climbs. */
export function heldTasksOf(board: BoardName, result: EvaluationResult): string[] {
  const held = HELD_TASKS[board];
  return [...Object.keys(result.tasks), ...Object.keys(result.unscored)]
    .filter((t) => held.includes(t))
    .sort();
}

/** The six-task overall from per-task scores (one of them the Ladder's release), where all six are there. */
export function sixTaskOverall(scores: Readonly<Record<string, number | undefined>>): number | null {
  const six = SIX_TASK_OVERALL.map((t) => scores[t]);
  return six.every((x) => x !== undefined) ? mean(six as number[]) : null;
}

function boardOverall(board: BoardName, result: EvaluationResult): number | null {
  if (board === 'public') return result.overall;
  const scores = OVERALL_TASKS.closed.map((t) => result.tasks[t]?.score);
  return scores.every((s) => s !== undefined) ? mean(scores as number[]) : null;
}

export async function scoreUpload(job: ScoreJob, refs: BoardReferences): Promise<ScoreOutcome> {
  const read = await readUpload(job.files, job.limits);
  const texts = read.entries.map((e) => ({ name: e.name, text: e.text() }));
  const files = texts.map((t) => ({ name: t.name, content: t.text }));
  const hash = contentHash(texts);
  let board: BoardName = job.board === 'auto' ? 'public' : job.board;
  const issues = [...read.issues];
  if (job.board === 'auto' && issues.length === 0) {
    const decided = await decideBoard(texts, refs);
    if (typeof decided === 'string') board = decided;
    else issues.push(decided);
  }
  const submission = submissionFromEntries(job.source, read.entries, issues);
  // A shipped task no board holds (ECG2Pathology in a MedBench zip): set aside with a word, as the zip is the
  // platform's own format.
  const offBoard = submission.files.filter((f) => !onAnyBoard(f.task) && getTask(f.task).optional);
  for (const f of offBoard) {
    submission.issues.push({
      severity: 'warning',
      code: 'PLATFORM_ONLY_TASK',
      file: f.file,
      task: f.task,
      message: `${f.task} is a MedBench platform task that this leaderboard's boards do not hold; not scored`,
    });
  }
  submission.files = submission.files.filter((f) => !offBoard.includes(f));
  // Tasks the board does not have (RuMedTop3 on the closed board) are refused, not silently dropped.
  const split = BOARD_SPLIT[board];
  const elsewhere = submission.files.filter((f) => !BOARD_TASKS[board].includes(f.task));
  for (const f of elsewhere) {
    submission.issues.push({
      severity: 'error',
      code: 'WRONG_BOARD',
      file: f.file,
      task: f.task,
      message: `${f.task} is not on the ${board} board (${BOARD_TASKS[board].join(', ')})`,
    });
  }
  submission.files = submission.files.filter((f) => BOARD_TASKS[board].includes(f.task));
  const options = { split, bootstrap: job.bootstrap, seed: job.seed, references: refs[board] };
  const validated = await validateRead(submission, options);
  const held = HELD_TASKS[board];
  const result = aggregateOnly(scoreValidated(validated, options), held);
  const scored = Object.keys(result.tasks).length > 0;
  // A closed test whose gold the admin has not imported yet: valid, kept, scored when the gold arrives.
  const waiting = !scored && result.errors.length === 0 && result.warnings.some((w) => w.code === 'NO_GOLD');
  const status = result.errors.length > 0 ? 'rejected' : scored ? 'scored' : waiting ? 'pending' : 'rejected';
  if (status === 'rejected' && result.errors.length === 0) {
    result.errors.push({
      severity: 'error',
      code: 'NO_FILES',
      file: job.source,
      message: 'no task was scored',
      expected: `<Task>.jsonl files of the ${board} board: ${BOARD_TASKS[board].join(', ')}`,
    });
  }
  const errors = capIssues(result.errors);
  const warnings = capIssues(result.warnings);
  return {
    board,
    status,
    result: { ...result, errors: errors.shown, warnings: warnings.shown },
    overall: status === 'scored' ? boardOverall(board, result) : null,
    contentHash: hash,
    files: status === 'rejected' ? keepBounded(files) : files,
    errors: errors.shown,
    warnings: warnings.shown,
    omitted: { ...errors.omitted, ...warnings.omitted },
    ...(status === 'scored' ? { itemStats: encodeItemStats(validated) } : {}),
  };
}

export interface SubsetJob {
  task: string;
  board: BoardName;
  /** [id, answer] of the items answered; the score covers these items only. */
  predictions: [string, string | string[]][];
  bootstrap: number;
  seed: number;
  source: string;
}

/**
 * Scores answers to a subset of a split (a human evaluation campaign's sample) with the usual validation and
 * metrics, against the same gold, restricted to the items answered.
 */
export async function scoreSubset(
  job: SubsetJob,
  refs: BoardReferences,
): Promise<{ result: EvaluationResult; overall: number | null }> {
  if (!isTaskName(job.task)) throw new Error(`unknown task ${job.task}`);
  const task = getTask(job.task);
  const split = BOARD_SPLIT[job.board];
  const full = await refs[job.board].load(task, split);
  const ids = new Set(job.predictions.map(([id]) => id));
  const reference = {
    ...full,
    ...(full.records ? { records: full.records.filter((r) => ids.has(r.id)) } : {}),
  };
  const lines = job.predictions.map(([id, answer], i) => ({
    line: i + 1,
    value: { [task.idField]: id, [task.goldField]: answer } as unknown,
  }));
  const validated = validateTaskFile(task, job.source, lines, reference);
  const options = { split, bootstrap: job.bootstrap, seed: job.seed };
  let result = scoreValidated({ source: job.source, split, tasks: [validated], issues: [] }, options);
  // The rest of the board's tasks are simply not part of a one-task campaign.
  result = {
    ...result,
    missing_tasks: [],
    warnings: result.warnings.filter((w) => w.code !== 'MISSING_TASK'),
  };
  result = aggregateOnly(result, HELD_TASKS[job.board]);
  return { result, overall: null };
}
