/**
 * Runs a plan's cells side by side: at most `cellsAtOnce` cells at once, and on each endpoint no more requests in flight
 * than its budget (cells of a local model, which hold the machine, one at a time). Each cell's spec is run by the
 * caller's `runCell` (the CLI hands it to the engine), into its own run folder. Killed at any point, the plan
 * resumes: a cell with a summary is done, a cell with a journal continues from it (`resume`), others start.
 * At the end, `<out>/summary.json` has a row per cell, written by `writePlanSummary`, the one writer of that file.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic, writeRefusal } from '../data/atomic-write.js';
import { type RunSpec, specJson } from '../engine/spec.js';
import { PlanError, RumedbenchError, UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import { readRunLog } from '../scoring/run-log.js';
import type { Cell } from './cells.js';
import type { Plan } from './file.js';

export const PLAN_RUN_VERSION = 1;

export interface CellProgress {
  done: number;
  total: number;
}

export interface PlanProgress {
  cells: { done: number; failed: number; running: number; total: number };
  /** Requests of the cells started so far. */
  requests: { done: number; total: number };
  startedAt: number;
}

export interface CellOutcome {
  code: number;
  /** The cell's own message when it failed (its last error line). */
  error?: string;
  /** What a leaderboard answered when the cell was submitted (`plan run --submit`). */
  submission?: { status: string; id?: string; url?: string; error?: string };
}

export interface PlanRunOptions {
  plan: Plan;
  cells: readonly Cell[];
  outDir: string;
  resume?: boolean;
  /** Cells at once (default 4). */
  cellsAtOnce?: number;
  /** Requests in flight per endpoint, across its cells (default: the plan's max_in_flight, else 32). */
  maxInFlight?: number;
  /** Runs one cell's spec into `out` (continuing its journal where `resume`). */
  runCell(
    cell: Cell,
    at: { out: string; resume: boolean },
    hooks: { onProgress(p: CellProgress): void },
  ): Promise<CellOutcome>;
  log: Logger;
  onProgress?(p: PlanProgress): void;
}

/** A queued cell's states before it ends (`plan export` of a plan under way), and `cancelled`. */
export type UnfinishedState = 'queued' | 'running' | 'finishing' | 'cancelled';

export interface PlanRow {
  cell: string;
  model: string;
  provider: string;
  axes: Record<string, unknown>;
  settings: Record<string, unknown>;
  dir: string;
  /**
   * `done` or `failed`; an export of a plan still under way (`plan export`) gives its unfinished cells the queue's
   * own state: they are neither done nor failed yet.
   */
  status: 'done' | 'failed' | UnfinishedState;
  error?: string;
  overall: number | null;
  overall_ci: [number, number] | null;
  tasks: Record<
    string,
    { score: number; score_ci: [number, number] | null; metrics: Record<string, number> }
  >;
  unparsed_rate: number | null;
  tokens: { prompt: number; completion: number } | null;
  cost: number | null;
  wall_s: number | null;
  submission?: CellOutcome['submission'];
}

export interface PlanSummary {
  schema_version: typeof PLAN_RUN_VERSION;
  kind: 'plan';
  name: string;
  plan_file: string;
  plan_sha256: string;
  cells: PlanRow[];
}

const DEFAULT_MAX_IN_FLIGHT = 32;

export async function runPlan(o: PlanRunOptions): Promise<PlanSummary> {
  const cellsAtOnce = Math.max(1, o.cellsAtOnce ?? 4);
  const budget = o.maxInFlight ?? o.plan.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  const planText = readFileSync(o.plan.file);
  const planSha = createHash('sha256').update(planText).digest('hex');
  const stateFile = join(o.outDir, 'plan.json');
  const cellList = o.cells.map((c) => ({ id: c.id, spec: c.spec }));
  if (existsSync(stateFile)) {
    if (!o.resume)
      throw new UsageError(
        `${o.outDir} already holds a plan run; --resume finishes it, or choose another --out`,
      );
    const before = readState(stateFile, o.outDir);
    if (before.cells.some((c) => c.spec === undefined))
      throw new PlanError(o.plan.file, [
        `${o.outDir} was started by an older rumedbench (its cells are command lines, not run specs); run the plan into another --out`,
      ]);
    const same = (a: typeof before.cells, b: typeof before.cells) =>
      a.length === b.length &&
      a.every((c, i) => c.id === b[i]?.id && specJson(c.spec as RunSpec) === specJson(b[i]?.spec as RunSpec));
    if (!same(before.cells, cellList))
      throw new PlanError(o.plan.file, [
        `${o.plan.file}: the plan's cells changed since ${o.outDir} was started; run it into another --out`,
      ]);
  }
  mkdirSync(o.outDir, { recursive: true });
  writeFileAtomic(
    stateFile,
    `${JSON.stringify({ schema_version: PLAN_RUN_VERSION, name: o.plan.name, plan_file: o.plan.file, plan_sha256: planSha, cells: cellList }, null, 2)}\n`,
  );

  const progress: PlanProgress = {
    cells: { done: 0, failed: 0, running: 0, total: o.cells.length },
    requests: { done: 0, total: 0 },
    startedAt: Date.now(),
  };
  const perCell = new Map<string, CellProgress>();
  const report = () => {
    progress.requests = { done: 0, total: 0 };
    for (const p of perCell.values()) {
      progress.requests.done += p.done;
      progress.requests.total += p.total;
    }
    o.onProgress?.(progress);
  };

  const outcomes = new Map<string, CellOutcome & { wall_s: number | null }>();
  const pending: Cell[] = [];
  for (const cell of o.cells) {
    const dir = join(o.outDir, cell.id);
    if (o.resume && existsSync(join(dir, 'summary.json'))) {
      outcomes.set(cell.id, { code: 0, wall_s: null });
      progress.cells.done++;
    } else pending.push(cell);
  }
  if (o.cells.length - pending.length > 0)
    o.log.info(`${o.cells.length - pending.length} cell(s) already done; ${pending.length} to run`);

  const running = new Map<string, Cell>();
  const inFlightAt = (endpoint: string) =>
    [...running.values()].filter((c) => c.endpoint === endpoint).reduce((s, c) => s + c.inFlight, 0);
  const fits = (cell: Cell) => {
    const used = inFlightAt(cell.endpoint);
    return used === 0 || used + cell.inFlight <= budget;
  };

  await new Promise<void>((resolve) => {
    const pump = () => {
      for (let i = 0; i < pending.length && running.size < cellsAtOnce; ) {
        const cell = pending[i] as Cell;
        if (!fits(cell)) {
          i++;
          continue;
        }
        pending.splice(i, 1);
        start(cell);
      }
      if (running.size === 0 && pending.length === 0) resolve();
    };
    const start = (cell: Cell) => {
      running.set(cell.id, cell);
      progress.cells.running = running.size;
      const dir = join(o.outDir, cell.id);
      const resume = o.resume === true && existsSync(join(dir, 'journal.jsonl'));
      const t0 = Date.now();
      o.log.info(`cell ${cell.id}: started`);
      o.runCell(
        cell,
        { out: dir, resume },
        {
          onProgress: (p) => {
            perCell.set(cell.id, p);
            report();
          },
        },
      )
        .catch((e: unknown): CellOutcome => {
          // Its folder full or read-only: said naming the folder and the fix (the journal keeps what was answered).
          const refused = writeRefusal(e);
          if (refused)
            return {
              code: 2,
              error: `cannot write into ${refused.path ?? dir} (${refused.why}); ${refused.full ? 'free some space there' : 'make it writable'}, then run again with --out ${o.outDir} --resume`,
            };
          return { code: 70, error: e instanceof Error ? e.message : String(e) };
        })
        .then((outcome) => {
          running.delete(cell.id);
          const wall = (Date.now() - t0) / 1000;
          outcomes.set(cell.id, { ...outcome, wall_s: wall });
          if (outcome.code === 0) progress.cells.done++;
          else progress.cells.failed++;
          progress.cells.running = running.size;
          const how =
            outcome.code === 0
              ? 'done'
              : `failed (exit ${outcome.code})${outcome.error ? `: ${outcome.error}` : ''}`;
          (outcome.code === 0 ? o.log.info : o.log.warn)(
            `cell ${cell.id}: ${how} in ${wall.toFixed(1)} s (${progress.cells.done + progress.cells.failed}/${progress.cells.total})`,
          );
          report();
          pump();
        });
    };
    pump();
  });

  const summary: PlanSummary = {
    schema_version: PLAN_RUN_VERSION,
    kind: 'plan',
    name: o.plan.name,
    plan_file: o.plan.file,
    plan_sha256: planSha,
    cells: o.cells.map((cell) => rowOf(cell, join(o.outDir, cell.id), outcomes.get(cell.id))),
  };
  writePlanSummary(o.outDir, summary);
  return summary;
}

/** A cell's row of the plan summary, read from its run folder (a local run's, or one a worker finished). */
export function rowOf(
  cell: Pick<Cell, 'id' | 'model' | 'provider' | 'axes' | 'settings'>,
  dir: string,
  outcome: (CellOutcome & { wall_s: number | null }) | undefined,
): PlanRow {
  const base = {
    cell: cell.id,
    model: cell.model,
    provider: cell.provider,
    axes: cell.axes,
    settings: cell.settings,
    dir,
  };
  const empty = {
    overall: null,
    overall_ci: null,
    tasks: {},
    unparsed_rate: null,
    tokens: null,
    cost: null,
    wall_s: outcome?.wall_s ?? null,
  };
  if (outcome?.code !== 0)
    return { ...base, ...empty, status: 'failed', ...(outcome?.error ? { error: outcome.error } : {}) };
  let folder: ReturnType<typeof readRunLog>;
  try {
    folder = readRunLog(dir);
  } catch (e) {
    return { ...base, ...empty, status: 'failed', error: (e as RumedbenchError).message };
  }
  const s = folder.summary;
  const evaluation = s.kind === 'llm' ? s : s.evaluation;
  const tasks: PlanRow['tasks'] = {};
  for (const [t, v] of Object.entries(evaluation?.tasks ?? {}))
    tasks[t] = { score: v.score, score_ci: v.score_ci, metrics: v.metrics };
  let unparsed: number | null = null;
  let tokens: PlanRow['tokens'] = null;
  let cost: number | null = null;
  let wall = outcome.wall_s;
  if (s.kind === 'llm') {
    const figures = Object.values(s.llm.tasks);
    const samples = figures.reduce((a, f) => a + f.samples, 0);
    unparsed = samples > 0 ? figures.reduce((a, f) => a + f.unparsed, 0) / samples : null;
    if (s.llm.usage)
      tokens = { prompt: s.llm.usage.prompt_tokens, completion: s.llm.usage.completion_tokens };
    cost = s.llm.cost ?? null;
    wall ??= s.llm.requests?.wall_s ?? null;
  }
  return {
    ...base,
    ...(outcome.submission ? { submission: outcome.submission } : {}),
    status: 'done',
    overall: evaluation?.overall ?? null,
    overall_ci: evaluation?.overall_ci ?? null,
    tasks,
    unparsed_rate: unparsed,
    tokens,
    cost,
    wall_s: wall,
  };
}

/** The one writer of a plan run's summary.json (atomically: a full disk leaves the old file or none). */
export function writePlanSummary(dir: string, summary: PlanSummary): void {
  writeFileAtomic(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
}

/**
 * A plan run's plan.json, for `--resume`. Written atomically since this release; one an older release left empty or
 * cut short (its disk full) is said in one line with the way on: the cells' own folders keep what they answered.
 */
function readState(
  file: string,
  outDir: string,
): { cells: { id: string; spec?: RunSpec; argv?: string[] }[] } {
  const text = readFileSync(file, 'utf8');
  try {
    const state = JSON.parse(text) as { cells?: unknown };
    if (Array.isArray(state.cells)) return state as { cells: { id: string; spec?: RunSpec }[] };
  } catch {
    // Said below.
  }
  throw new RumedbenchError(
    'STORAGE_REFUSED',
    `${file} is ${text.length === 0 ? 'empty' : 'cut short or not a plan run state'} (a disk that filled up while an older rumedbench wrote it?): remove it and run the plan again with --out ${outDir} --resume; every cell's own folder keeps what it answered`,
  );
}
