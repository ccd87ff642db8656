/**
 * `rumedbench plan check|run PLAN`: flags in, a plan (src/plans/: read, checked and expanded into run specs there)
 * out to the engine, side by side; nothing here reads a plan's settings.
 */
import { resolve } from 'node:path';
import { commandLineOf } from '../engine/command-line.js';
import { runEvaluation } from '../engine/run.js';
import { parseShard, resolveShard } from '../engine/short-forms.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { type CellCheck, checkCell, totalCost } from '../plans/check.js';
import { loadPlan } from '../plans/file.js';
import { type CellOutcome, type PlanProgress, type PlanRow, runPlan } from '../plans/run.js';
import { renderTable } from '../report/table.js';
import { submitRun } from '../submit/client.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT, exitCodeOf } from './io.js';

export const PLAN_CHECK_FLAGS = {
  json: flag.jsonFlag('print the cells as one JSON object'),
} satisfies FlagTable;

export const PLAN_RUN_FLAGS = {
  out: flag.text('--out <dir>', 'plan folder: <model>/<axis=value,…>/ per cell, summary.json, report.html', {
    required: true,
  }),
  resume: flag.on('--resume', 'finish a plan run in --out: done cells are kept, journaled ones continue'),
  cellsAtOnce: flag.count('--cells-at-once <n>', 'cells run at once', { min: 1, default: 4 }),
  // The old name, kept so that scripts keep working: "job" is a queue chunk now (docs/development.md's words).
  jobs: flag.count('--jobs <n>', 'deprecated: the old name of --cells-at-once', { min: 1 }),
  maxInFlight: flag.count(
    '--max-in-flight <n>',
    "requests in flight per endpoint across its cells (default: the plan's max_in_flight, else 32)",
    { min: 1 },
  ),
  shard: flag.custom(
    '--shard <i/n>',
    "run shard I of N of every LLM cell's requests (auto/N: from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX); encoder cells run in shard 1",
    parseShard,
  ),
  submit: flag.text(
    '--submit <url>',
    'send each finished cell to this leaderboard as `submit` does (token from $RUMEDBENCH_TOKEN)',
  ),
  progress: flag.on('--no-progress', 'no progress line'),
  json: flag.jsonFlag('print the plan summary as one JSON object'),
  proxy: flag.proxyFlag(),
} satisfies FlagTable;

export async function runPlanCheck(
  file: string,
  flags: FlagsOf<typeof PLAN_CHECK_FLAGS>,
  io: CliIo,
): Promise<number> {
  const { plan, cells, notes, warnings } = loadPlan(file);
  for (const w of warnings) io.log.warn(w);
  const checks: CellCheck[] = [];
  for (const c of cells) checks.push(await checkCell(c));
  if (flags.json) {
    io.out(
      `${JSON.stringify({ name: plan.name, cells: checks.map((c, i) => ({ ...c, spec: cells[i]?.spec, command: cells[i] ? commandLineOf(cells[i].spec) : undefined })), cost_estimate: totalCost(checks), notes })}\n`,
    );
    return EXIT.ok;
  }
  const rows = checks.map((c) => [
    c.cell,
    c.provider,
    c.requests === null ? '–' : String(c.requests),
    c.prompt_tokens_estimate === null ? '–' : `≈${c.prompt_tokens_estimate}`,
    c.cost_estimate ? `$${c.cost_estimate.min.toFixed(4)}–${c.cost_estimate.max.toFixed(4)}` : '–',
    c.note ?? '',
  ]);
  io.out(`plan ${plan.name}: ${cells.length} cell(s)\n\n`);
  io.out(`${renderTable(['cell', 'provider', 'requests', 'prompt tokens', 'cost', 'note'], rows, 2)}\n`);
  const total = totalCost(checks);
  if (total)
    io.out(
      `\nthe plan's cost: $${total.min.toFixed(4)}–${total.max.toFixed(4)} over ${total.cells} priced cell(s) (prompts alone – every reply at max_tokens)\n`,
    );
  // Before anything is spent: how far apart two systems must be for these items to tell them apart.
  const perTask = new Map<string, { n: number; clusters: boolean; at_20: number; at_40: number }>();
  for (const c of checks)
    for (const [task, m] of Object.entries(c.mde ?? {})) {
      const seen = perTask.get(task);
      if (!seen || m.n < seen.n) perTask.set(task, m);
    }
  if (perTask.size > 0) {
    io.out(
      `\ndetectable difference (points; paired, α 0.05, power 0.8) if two systems answer 20% / 40% of the items differently:\n\n`,
    );
    io.out(
      `${renderTable(
        ['task', 'items', 'at 20%', 'at 40%', 'note'],
        [...perTask].map(([task, m]) => [
          task,
          String(m.n),
          m.at_20.toFixed(1),
          m.at_40.toFixed(1),
          m.clusters ? 'items share clusters: up to ×√(cluster size) more' : '',
        ]),
        2,
      )}\n`,
    );
  }
  for (const n of notes) io.log.info(n);
  // A setting that drops a task drops its requests from the cell: said, never silent.
  for (const c of checks)
    for (const [task, why] of Object.entries(c.skipped ?? {}))
      io.log.warn(`${c.cell}: ${task} is left out (${why})`);
  return EXIT.ok;
}

/** One line of progress: cells, requests, rate and time left. */
function progressLine(write: (t: string) => void): (p: PlanProgress, final?: boolean) => void {
  let last = 0;
  return (p, final = false) => {
    const now = Date.now();
    if (!final && now - last < 500) return;
    last = now;
    const rate = p.requests.done / Math.max(1e-3, (now - p.startedAt) / 1000);
    const left = rate > 0 ? Math.round((p.requests.total - p.requests.done) / rate) : 0;
    write(
      `\rcells ${p.cells.done}/${p.cells.total} done, ${p.cells.running} running${p.cells.failed ? `, ${p.cells.failed} failed` : ''} · requests ${p.requests.done}/${p.requests.total} · ${rate.toFixed(1)}/s · ${left}s left   ${final ? '\n' : ''}`,
    );
  };
}

/** `plan run --submit`: a finished cell sent as `rumedbench submit` sends it; a refusal is reported, not fatal. */
export async function submitCell(
  dir: string,
  server: string,
  id: string,
  io: CliIo,
): Promise<NonNullable<CellOutcome['submission']>> {
  const token = process.env.RUMEDBENCH_TOKEN || undefined;
  try {
    const a = await submitRun(dir, { server, log: io.log, ...(token ? { token } : {}) });
    const status = String(a.body.status ?? a.status);
    if (a.status >= 300)
      io.log.warn(`${id}: the leaderboard refused it (${a.status}): ${String(a.body.error ?? status)}`);
    else io.log.info(`${id}: submitted, ${status}${a.url ? `: ${a.url}` : ''}`);
    return {
      status,
      ...(typeof a.body.id === 'string' ? { id: a.body.id } : {}),
      ...(a.url ? { url: a.url } : {}),
    };
  } catch (e) {
    if (!(e instanceof RumedbenchError)) throw e;
    io.log.warn(`${id}: not submitted: ${e.message}`);
    return { status: 'not submitted', error: e.message };
  }
}

const f2 = (x: number | null | undefined) => (x === null || x === undefined ? '–' : x.toFixed(2));

/** `--cells-at-once`, or the deprecated `--jobs` it replaced (said once on stderr); both given is a mistake. */
export function cellsAtOnceOf(flags: FlagsOf<typeof PLAN_RUN_FLAGS>, io: Pick<CliIo, 'log'>): number {
  if (flags.jobs === undefined) return flags.cellsAtOnce;
  if (flags.cellsAtOnce !== PLAN_RUN_FLAGS.cellsAtOnce.default)
    throw new UsageError('--jobs is the old name of --cells-at-once: give only --cells-at-once');
  io.log.warn('--jobs is deprecated: it is --cells-at-once now (a job is a queue chunk); --jobs still works');
  return flags.jobs;
}

export async function runPlanRun(
  file: string,
  flags: FlagsOf<typeof PLAN_RUN_FLAGS>,
  io: CliIo,
): Promise<number> {
  const loaded = loadPlan(file);
  const { plan, notes } = loaded;
  for (const w of loaded.warnings) io.log.warn(w);
  let cells = loaded.cells;
  if (flags.shard) {
    const { index, count } = resolveShard(flags.shard);
    // Every LLM cell runs the same share of its requests; an encoder cell cannot be split, and runs in shard 1.
    cells = cells
      .filter((c) => c.spec.kind === 'llm' || index === 1)
      .map((c) => (c.spec.kind === 'llm' ? { ...c, spec: { ...c.spec, shard: { index, count } } } : c));
    io.log.info(
      `shard ${index}/${count} of every LLM cell${index === 1 ? '' : '; encoder cells run in shard 1'}`,
    );
  }
  for (const n of notes) io.log.info(n);
  // The report's modules (Vega among them) load while the cells wait on their servers, not after.
  const reportModule = import('../report/run.js');
  const draw =
    flags.progress && !io.quiet && process.stderr.isTTY === true
      ? progressLine((t) => process.stderr.write(t))
      : undefined;
  const summary = await runPlan({
    plan,
    cells,
    outDir: resolve(flags.out),
    cellsAtOnce: cellsAtOnceOf(flags, io),
    log: io.log,
    ...(flags.resume ? { resume: true } : {}),
    ...(flags.maxInFlight !== undefined ? { maxInFlight: flags.maxInFlight } : {}),
    ...(draw ? { onProgress: (p: PlanProgress) => draw(p) } : {}),
    async runCell(cell, at, hooks) {
      // Notes of a cell are many and interleaved: only its warnings and errors reach the plan's stderr.
      const cellLog = createLogger('warn', (line) =>
        io.log.warn(`${cell.id}: ${line.replace(/^(warning|error): /, '').trimEnd()}`),
      );
      try {
        await runEvaluation(cell.spec, {
          out: at.out,
          log: cellLog,
          ...(at.resume ? { resume: true } : {}),
          onProgress: (p) => hooks.onProgress({ done: p.done, total: p.total }),
        });
      } catch (e) {
        if (!(e instanceof RumedbenchError)) throw e;
        return { code: exitCodeOf(e), error: e.message.split('\n')[0] as string };
      }
      return {
        code: EXIT.ok,
        ...(flags.submit ? { submission: await submitCell(at.out, flags.submit, cell.id, io) } : {}),
      };
    },
  });
  if (draw)
    draw(
      { cells: { done: 0, failed: 0, running: 0, total: 0 }, requests: { done: 0, total: 0 }, startedAt: 0 },
      true,
    );
  const done = summary.cells.filter((c) => c.status === 'done');
  if (done.length > 0) {
    const { runReport } = await reportModule;
    // Cells on gold held apart are scored on it in the report too (one folder for them all: a plan's default).
    const golds = [...new Set(cells.map((c) => (c.spec.kind === 'contamination' ? undefined : c.spec.gold)))];
    const goldDir = golds.length === 1 ? golds[0] : undefined;
    await runReport(
      done.map((c) => c.dir),
      {
        out: resolve(flags.out, 'report.html'),
        names: done.map((c) => c.cell),
        title: `Plan ${plan.name}`,
        ...(goldDir !== undefined ? { goldDir } : {}),
      },
    );
  }
  if (flags.json) io.out(`${JSON.stringify(summary)}\n`);
  else {
    const tasks = [...new Set(summary.cells.flatMap((c) => Object.keys(c.tasks)))];
    const rows = summary.cells.map((c: PlanRow) => [
      c.cell,
      c.status,
      ...tasks.map((t) => f2(c.tasks[t]?.score)),
      f2(c.overall),
      c.unparsed_rate === null ? '–' : `${(100 * c.unparsed_rate).toFixed(1)}%`,
      c.cost === null ? '–' : `$${c.cost.toFixed(4)}`,
      c.wall_s === null ? '–' : `${c.wall_s.toFixed(1)}s`,
    ]);
    io.out(`${renderTable(['cell', 'status', ...tasks, 'overall', 'unparsed', 'cost', 'wall'], rows, 2)}\n`);
  }
  const failed = summary.cells.filter((c) => c.status === 'failed');
  if (failed.length > 0) {
    io.log.error(
      `${failed.length} of ${summary.cells.length} cell(s) failed: ${failed.map((c) => c.cell).join(', ')}; fix and run again with --resume`,
    );
    return failed.length === summary.cells.length ? EXIT.submissionErrors : EXIT.incomplete;
  }
  return EXIT.ok;
}
