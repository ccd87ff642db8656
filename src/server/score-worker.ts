/**
 * The scoring worker (run by piscina): holds the gold of both boards in memory, loaded once, and does the CPU work
 * of the server (scoring an upload, a paired comparison, drawing charts) off the event loop.
 */
import { setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';
import type { TopLevelSpec } from 'vega-lite';
import { type ComparisonResult, clustersOfTasks, compareValidated } from '../scoring/compare.js';
import { ReferenceLoader } from '../scoring/reference.js';
import { validateRead } from '../scoring/score.js';
import { submissionFromEntries } from '../scoring/submission.js';
import { TASKS } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import {
  type DrawRowsJob,
  drawBoardRows,
  type RankTaskJob,
  type ReplicateRow,
  rankBoardOverall,
  rankBoardTask,
} from './boards/ranking.js';
import type { BoardName } from './db/schema.js';
import { drawForPhone } from './phone-charts.js';
import {
  BOARD_SPLIT,
  type BoardReferences,
  HELD_TASKS,
  type ScoreJob,
  type ScoreOutcome,
  type SubsetJob,
  scoreSubset,
  scoreUpload,
} from './score-upload.js';

export interface WorkerSetup {
  dataDir: string;
  /**
   * The nice value of the worker's thread, on Linux: the boards' rankings take the lowest priority (19), so that
   * they use only CPU that uploads and pages leave idle; scoring uploads a lower one than the HTTP thread (10), so
   * that pages are answered first while uploads are scored. (Linux keeps a nice value per thread, and raising it
   * needs no privilege; elsewhere it would apply to the whole process, so it is not set there.)
   */
  nice?: number;
  /** Task definition files loaded by the server, read again here (a thread has a registry of its own). */
  taskFiles: string[];
  /** [split, task, [id, gold][]] of the gold the host holds, as imported by the admin. */
  heldGold: (readonly [Split, string, [string, string | string[]][]])[];
  /** A thread of the chart lane: it draws charts only, so it loads no split. */
  chartsOnly?: boolean;
}

const setup = workerData as WorkerSetup;
if (setup.nice !== undefined && process.platform === 'linux') {
  try {
    // pid 0: the calling thread (setpriority(PRIO_PROCESS, 0) is per thread on Linux).
    setPriority(0, setup.nice);
  } catch {
    // Not allowed here (a sandbox): the work then shares the CPU evenly (a ranking's pauses still bound it).
  }
}
if (setup.taskFiles.length > 0) {
  const { loadUserTasks } = await import('../tasks/user.js');
  loadUserTasks(setup.taskFiles);
}
const heldOf = (split: Split) =>
  Object.fromEntries(
    setup.heldGold.filter((g) => g[0] === split).map(([, task, items]) => [task, new Map(items)]),
  );
// Both boards' held gold is hidden: the closed tests', and the public board's host-held test splits (ECG2Pathology);
// the public gold in the data files stays public.
// Messages go to uploaders: they name no path of this machine.
const refs: BoardReferences = {
  public: new ReferenceLoader(setup.dataDir, {
    hiddenGold: true,
    heldGold: { test: heldOf('test') },
    namePaths: false,
  }),
  closed: new ReferenceLoader(setup.dataDir, {
    hiddenGold: true,
    heldGold: { private_test: heldOf('private_test') },
    namePaths: false,
  }),
};
// Load every split the boards score against now, not on the first upload (a chart thread never scores).
for (const t of setup.chartsOnly ? [] : TASKS) {
  if ((t.splits as readonly string[]).includes('test')) await refs.public.load(t, 'test');
  if ((t.splits as readonly string[]).includes('private_test')) await refs.closed.load(t, 'private_test');
}

export default function score(job: ScoreJob): Promise<ScoreOutcome> {
  return scoreUpload(job, refs);
}

/** A human evaluation campaign's answers, scored over the items answered. */
export function subset(job: SubsetJob): ReturnType<typeof scoreSubset> {
  return scoreSubset(job, refs);
}

export interface CompareJob {
  board: BoardName;
  a: { source: string; files: { name: string; content: string }[] };
  b: { source: string; files: { name: string; content: string }[] };
  bootstrap: number;
  seed: number;
}

/** The paired comparison of two stored submissions of one board. */
export async function compare(job: CompareJob): Promise<ComparisonResult> {
  const options = { split: BOARD_SPLIT[job.board], references: refs[job.board] };
  const read = (s: CompareJob['a']) =>
    validateRead(
      submissionFromEntries(
        s.source,
        s.files.map((f) => ({ name: f.name, text: () => f.content })),
      ),
      options,
    );
  // A task on hidden gold (ECG2Pathology on the public board) is not compared: its paired differences are per item.
  const held = HELD_TASKS[job.board];
  const open = (v: Awaited<ReturnType<typeof read>>) => ({
    ...v,
    tasks: v.tasks.filter((t) => !held.includes(t.task.name)),
  });
  const a = open(await read(job.a));
  return compareValidated(a, open(await read(job.b)), {
    bootstrap: job.bootstrap,
    seed: job.seed,
    clusters: await clustersOfTasks(refs[job.board], a),
  });
}

/** Some entries' replicate rows of one task, from their per-item counts. */
export function drawRows(job: DrawRowsJob): Promise<(ReplicateRow | null)[]> {
  return drawBoardRows(job, refs[job.board]);
}

/** One task of a board's ranking, from its entries' replicate rows. */
export function rankTask(job: RankTaskJob): ReturnType<typeof rankBoardTask> {
  return rankBoardTask(job, refs[job.board]);
}

/** A board's overall, from its overall rows. */
export function rankOverall(
  job: Parameters<typeof rankBoardOverall>[0],
): ReturnType<typeof rankBoardOverall> {
  return rankBoardOverall(job);
}

/**
 * Draws charts: [id, spec, label] in, [id, svg, phone's svg] out (the phone's '' where the page's drawing fits a
 * phone's box already).
 */
export async function render(charts: [string, TopLevelSpec, string][]): Promise<[string, string, string][]> {
  const out: [string, string, string][] = [];
  for (const [id, spec, label] of charts) {
    const { wide, phone } = await drawForPhone(spec, label);
    out.push([id, wide, phone]);
  }
  return out;
}
