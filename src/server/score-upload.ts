/**
 * Scoring one upload: read the hostile bytes (upload.ts), decide the board, validate and score with the project's
 * scorer against gold held in memory, and hash the normalised content. Pure of any server or database: it runs in a
 * worker thread (score-worker.ts) so that the event loop keeps answering pages while uploads are scored.
 */
import { createHash } from 'node:crypto';
import { buildItemStats, mean, metricsFromSums, statsLayout, taskScore } from '../metrics/item-stats.js';
import type { ItemScores } from '../metrics/ladder.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import type { ReferenceLoader } from '../scoring/reference.js';
import {
  type EvaluationResult,
  scoreValidated,
  type ValidatedSubmission,
  validateRead,
} from '../scoring/score.js';
import { submissionFromEntries } from '../scoring/submission.js';
import { validateTaskFile } from '../scoring/validate.js';
import { getTask, isTaskName, TASKS } from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import { encodeItemStats, type StoredItemStats } from './boards/ranking.js';
import type { BoardName, SubmissionStatus } from './db/schema.js';
import { capIssues } from './submissions/issues.js';
import { readUpload, type UploadFile, type UploadLimits } from './upload.js';

export const BOARD_SPLIT: Record<BoardName, Split> = { public: 'test', closed: 'private_test' };

const hasSplit = (t: TaskDefinition, s: Split) => (t.splits as readonly Split[]).includes(s);

/**
 * The tasks of each board, in the paper's order, then the tasks defined in files that `serve --tasks-dir` loaded:
 * the public board has the five public tasks and every defined task with a test file (its gold is public); the
 * closed board every task with a private test, whose gold the admin imports (for a task whose records only its host
 * holds, ECG2Pathology, the imported gold's ids are the split). Read from the registry when asked, as definitions
 * are loaded after this module.
 */
export const BOARD_TASKS: Readonly<Record<BoardName, readonly string[]>> = {
  get public() {
    return TASKS.filter(
      (t) => t.inOverall || (t.source !== undefined && hasSplit(t, 'test') && t.files?.test !== undefined),
    ).map((t) => t.name);
  },
  get closed() {
    return TASKS.filter((t) => hasSplit(t, 'private_test')).map((t) => t.name);
  },
};

const onAnyBoard = (task: string) => BOARD_TASKS.public.includes(task) || BOARD_TASKS.closed.includes(task);

/** The closed board's overall: the built-in closed tests (a defined task is shown beside it, not averaged in). */
const CLOSED_OVERALL = TASKS.filter((t) => t.source === undefined && hasSplit(t, 'private_test')).map(
  (t) => t.name,
);

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
  /** Closed board, scored: per-item scores for the Ladder (server-side only). */
  itemScores?: ItemScores;
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

/** Per-item scores in [0, 1] of each scored task (one item's metrics, averaged as the task's score is). */
function itemScoresOf(validated: ValidatedSubmission): ItemScores {
  const out: ItemScores = {};
  for (const t of validated.tasks) {
    if (!t.items) continue;
    const stats = buildItemStats(t.task, t.items);
    const { width } = statsLayout(t.task);
    const scores: Record<string, number> = {};
    stats.ids.forEach((id, i) => {
      const row = stats.stats.subarray(i * width, (i + 1) * width);
      scores[id] = taskScore(t.task, metricsFromSums(t.task, Float64Array.from(row), 1)) / 100;
    });
    out[t.task.name] = scores;
  }
  return out;
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
    const id = firstId(task, e.text);
    const priv = def ? await refs.closed.load(def, 'private_test') : undefined;
    votes.add(id !== undefined && priv?.records?.some((r) => r.id === id) ? 'closed' : 'public');
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
  return [...votes][0] ?? 'public';
}

/** Closed tests leak nothing per item: only aggregate metrics and their intervals are kept. */
function aggregateOnly(result: EvaluationResult): EvaluationResult {
  const tasks: EvaluationResult['tasks'] = {};
  for (const [name, t] of Object.entries(result.tasks)) {
    const { breakdown: _breakdown, ...rest } = t;
    tasks[name] = rest as EvaluationResult['tasks'][string];
  }
  return { ...result, tasks };
}

/** The mean of a closed result's task scores (the board's overall when all three are there): what a ladder climbs. */
export function closedScore(result: EvaluationResult): number | undefined {
  const scores = Object.values(result.tasks).map((t) => t.score);
  return scores.length > 0 ? mean(scores) : undefined;
}

function boardOverall(board: BoardName, result: EvaluationResult): number | null {
  if (board === 'public') return result.overall;
  const scores = CLOSED_OVERALL.map((t) => result.tasks[t]?.score);
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
  let result = scoreValidated(validated, options);
  if (board === 'closed') result = aggregateOnly(result);
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
    ...(board === 'closed' && status === 'scored' ? { itemScores: itemScoresOf(validated) } : {}),
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
  if (job.board === 'closed') result = aggregateOnly(result);
  return { result, overall: null };
}
