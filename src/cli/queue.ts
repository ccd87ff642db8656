/**
 * A plan spread over many machines (src/workers/): `plan submit|status|cancel|export --db postgres://…`, the
 * `worker` (its own module, ./worker.ts, for a lighter start), and `serve endpoint add|list|remove`, the platform's allow-list of servers.
 * A queued cell is the same run spec as a local plan's cell; a worker hands it to the engine.
 */
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { providerFlag } from '../engine/llm-flags.js';
import { baseUrlOf, providerRecord } from '../engine/providers/registry.js';
import { UsageError } from '../errors.js';
import { renderTable } from '../report/table.js';
import type { PlanStatus } from '../workers/plans.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT, writeRefusal } from './io.js';
import { dbFlag, withQueue } from './queue-db.js';

/** The queue's modules (pg-boss, pg) load when a queue command runs, not at the start of every command. */
async function queue() {
  const [endpoints, plans, store, submit, worker] = await Promise.all([
    import('../workers/endpoints.js'),
    import('../workers/plans.js'),
    import('../workers/store.js'),
    import('../workers/submit.js'),
    import('../workers/worker.js'),
  ]);
  return { ...endpoints, ...plans, ...store, ...submit, ...worker };
}

export const PLAN_SUBMIT_FLAGS = {
  db: dbFlag(),
  jobSize: flag.count('--job-size <n>', 'requests per job at most', { min: 1, default: 200 }),
  json: flag.jsonFlag('print {id, jobs, requests} as one JSON object'),
} satisfies FlagTable;

export const PLAN_STATUS_FLAGS = {
  db: dbFlag(),
  json: flag.jsonFlag('print the status as one JSON object'),
  watch: flag.on(
    '--watch',
    'refresh every 2 s until the plan ends (exit 0 done, 1 failed, 3 cancelled); not on a terminal, print only what changed',
  ),
} satisfies FlagTable;

export const PLAN_CANCEL_FLAGS = { db: dbFlag() } satisfies FlagTable;

export const PLAN_MIGRATE_FLAGS = { db: dbFlag() } satisfies FlagTable;

/** `plan migrate`: brings the queue's schema to this release's version (stop the older workers first). */
export async function runPlanMigrate(flags: FlagsOf<typeof PLAN_MIGRATE_FLAGS>, io: CliIo): Promise<number> {
  const { QUEUE_SCHEMA_VERSION } = await queue();
  await withQueue(flags.db, async () => {}, { log: io.log });
  io.log.info(`the queue is at schema version ${QUEUE_SCHEMA_VERSION}`);
  return EXIT.ok;
}

export const PLAN_EXPORT_FLAGS = {
  db: dbFlag(),
  out: flag.text(
    '--out <dir>',
    'plan folder: <model>/<axis=value,…>/ per finished cell, summary.json, report.html',
    {
      required: true,
    },
  ),
  submit: flag.text(
    '--submit <url>',
    'send each finished cell to this leaderboard as `submit` does (token from $RUMEDBENCH_TOKEN)',
  ),
  overwrite: flag.on(
    '--overwrite',
    "write into an --out that is not empty (the files of the plan's cells are replaced; others stay)",
  ),
  json: flag.jsonFlag('print the plan summary as one JSON object'),
} satisfies FlagTable;

export const ENDPOINT_ADD_FLAGS = {
  db: dbFlag(),
  provider: providerFlag(),
  baseUrl: flag.text(
    '--base-url <url>',
    "the server, e.g. http://gpu-1:8000/v1 (a provider's own address where it has one, such as Anthropic's, unless given; none for a local model)",
  ),
  model: flag.text('--model <name>', 'the model as the server knows it, or the .gguf path on the workers', {
    required: true,
  }),
  apiKeyEnv: flag.text(
    '--api-key-env <name>',
    'environment variable that holds the key on the workers, who send it only if their --endpoint-keys names it; never one of their own (DATABASE_URL, PGPASSWORD, AWS_…, GOOGLE_…, AZURE_…, RUMEDBENCH_…) nor one that looks like a secret of the host (*PASSWORD*, *SECRET*, *TOKEN*, *_URL, NODE_OPTIONS, HF_…, …)',
  ),
  team: flag.text(
    '--team <name>',
    "the team that owns the model: the platform's entries of it are credited to it",
  ),
  allowPrivate: flag.on(
    '--allow-private',
    "allow a server on this machine or a private network (refused by default, by every address its name resolves to: metadata services live there); workers connect there only with --allow-private too; a cloud's metadata or platform address (169.254.169.254, 168.63.129.16, fd00:ec2::254, …) and port 0 stay refused",
  ),
} satisfies FlagTable;

export const ENDPOINT_LIST_FLAGS = {
  db: dbFlag(),
  json: flag.jsonFlag('print the list as JSON'),
} satisfies FlagTable;

export async function runPlanSubmit(
  file: string,
  flags: FlagsOf<typeof PLAN_SUBMIT_FLAGS>,
  io: CliIo,
): Promise<number> {
  const { plan, queued, notes } = await (await queue()).queuedCells(file, io.log);
  for (const n of notes) io.log.info(n);
  const sha = createHash('sha256').update(readFileSync(plan.file)).digest('hex');
  const r = await withQueue(flags.db, (db) =>
    queue().then((q) =>
      q.enqueuePlan(db, {
        name: plan.name,
        file: plan.file,
        sha256: sha,
        maxInFlight: plan.maxInFlight ?? 32,
        ...(plan.retryRounds !== undefined ? { retryRounds: plan.retryRounds } : {}),
        ...(plan.retryDelayS !== undefined ? { retryDelayS: plan.retryDelayS } : {}),
        cells: queued,
        jobSize: flags.jobSize,
      }),
    ),
  );
  if (flags.json) io.out(`${JSON.stringify(r)}\n`);
  else {
    io.log.info(
      `plan ${plan.name}: ${queued.length} cell(s), ${r.requests} requests in ${r.jobs} job(s) queued`,
    );
    io.out(`${r.id}\n`);
  }
  return EXIT.ok;
}

const duration = (s: number | null) =>
  s === null
    ? '–'
    : s >= 3600
      ? `${(s / 3600).toFixed(1)} h`
      : s >= 60
        ? `${Math.round(s / 60)} min`
        : `${Math.round(s)} s`;

export function renderStatus(s: PlanStatus): string {
  const rows = s.cells.map((c) => [
    c.cell,
    c.status,
    `${c.requests.done}/${c.requests.total}`,
    c.requests.failed > 0 ? String(c.requests.failed) : '',
    c.rate > 0 ? `${c.rate.toFixed(1)}/s` : '–',
    duration(c.eta_s),
    c.workers.join(', '),
    c.overall === null ? '' : c.overall.toFixed(2),
  ]);
  const lines = [
    `plan ${s.name} (${s.id}): ${s.status}`,
    '',
    renderTable(['cell', 'status', 'requests', 'failed', 'rate', 'left', 'workers', 'overall'], rows, 2),
  ];
  for (const c of s.cells) {
    if (c.error) lines.push(`${c.cell}: ${c.error}`);
    for (const b of c.batches ?? [])
      lines.push(
        `${c.cell}: batch ${b.id}, ${b.requests} requests: ${b.collected ? `collected (${b.status ?? 'ended'})` : (b.status ?? 'submitted')}`,
      );
    for (const f of c.failures.slice(0, 3)) lines.push(`${c.cell}: ${f.n}× ${f.reason}`);
  }
  return lines.join('\n');
}

export async function runPlanStatus(
  id: string,
  flags: FlagsOf<typeof PLAN_STATUS_FLAGS>,
  io: CliIo,
): Promise<number> {
  if (flags.watch) return watchStatus(id, flags, io);
  const s = await withQueue(flags.db, async (db) => (await queue()).planStatus(db, id), { log: io.log });
  io.out(flags.json ? `${JSON.stringify(s)}\n` : `${renderStatus(s)}\n`);
  return EXIT.ok;
}

/** How often `plan status --watch` reads the plan again. */
export const WATCH_EVERY_MS = 2000;

/** What a watch compares between two reads: the states and counts, not the rate and time left (they move always). */
const watchKey = (s: PlanStatus) =>
  JSON.stringify([s.status, s.cells.map((c) => [c.cell, c.status, c.requests, c.error])]);

/** One line per cell that changed since `before` (all of them the first time), and the plan's when it changed. */
function changedLines(s: PlanStatus, before: PlanStatus | undefined): string[] {
  const time = new Date().toISOString();
  const was = new Map(before?.cells.map((c) => [c.cell, c]));
  const lines = s.cells
    .filter((c) => {
      const b = was.get(c.cell);
      return (
        !b ||
        b.status !== c.status ||
        b.requests.done !== c.requests.done ||
        b.requests.failed !== c.requests.failed
      );
    })
    .map(
      (c) =>
        `${time} ${c.cell}: ${c.status} ${c.requests.done}/${c.requests.total}${c.requests.failed > 0 ? `, ${c.requests.failed} failed` : ''}${c.error ? ` (${c.error})` : ''}`,
    );
  if (before?.status !== s.status) lines.push(`${time} plan ${s.name} (${s.id}): ${s.status}`);
  return lines;
}

/**
 * `plan status --watch`: reads the plan every WATCH_EVERY_MS until it ends. On a terminal the table is drawn again in
 * place; elsewhere (a log, a CI job) only what changed is printed, a line each, so the output is a history. A database
 * outage is waited out (said once), as a worker does.
 */
async function watchStatus(id: string, flags: FlagsOf<typeof PLAN_STATUS_FLAGS>, io: CliIo): Promise<number> {
  const tty = process.stdout.isTTY === true && !flags.json;
  const { DbWait } = await import('../workers/db-wait.js');
  return withQueue(
    flags.db,
    async (db) => {
      const { planStatus } = await queue();
      const location = db.location;
      const wait = new DbWait({ waitS: 300, log: io.log, location, who: 'plan status --watch', flag: '' });
      let before: PlanStatus | undefined;
      for (;;) {
        const s = await wait.retry(() => planStatus(db, id));
        if (tty) io.out(`\x1b[H\x1b[2J${renderStatus(s)}\n`);
        else if (before === undefined || watchKey(s) !== watchKey(before)) {
          if (flags.json) io.out(`${JSON.stringify(s)}\n`);
          else for (const l of changedLines(s, before)) io.out(`${l}\n`);
        }
        before = s;
        if (s.status === 'done') return EXIT.ok;
        if (s.status === 'failed') return EXIT.submissionErrors;
        if (s.status === 'cancelled') return EXIT.incomplete;
        await new Promise((r) => setTimeout(r, WATCH_EVERY_MS));
      }
    },
    { log: io.log },
  );
}

export async function runPlanCancel(
  id: string,
  flags: FlagsOf<typeof PLAN_CANCEL_FLAGS>,
  io: CliIo,
): Promise<number> {
  const r = await withQueue(flags.db, async (db) => (await queue()).cancelPlan(db, id), { log: io.log });
  if (r.cancelled)
    io.log.info(
      `plan ${id} cancelled: its waiting jobs are dropped, its workers stop at their next heartbeat`,
    );
  else io.log.warn(`plan ${id} is already ${r.status}; nothing to cancel`);
  return EXIT.ok;
}

export const PLAN_RETRY_FLAGS = {
  db: dbFlag(),
  cells: flag.text(
    '--cells <list>',
    'comma-separated failed cells to ask again (default: every failed cell)',
  ),
} satisfies FlagTable;

/** `plan retry`: a failed cell's unanswered requests go back to the queue (after the cause is fixed). */
export async function runPlanRetry(
  id: string,
  flags: FlagsOf<typeof PLAN_RETRY_FLAGS>,
  io: CliIo,
): Promise<number> {
  const cells = flags.cells
    ?.split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  const r = await withQueue(flags.db, async (db) => (await queue()).retryPlan(db, id, cells), {
    log: io.log,
  });
  if (r.cells.length === 0) {
    io.log.warn(`plan ${id} has no failed cell; nothing to ask again`);
    return EXIT.ok;
  }
  for (const c of r.cells)
    io.log.info(`${c.cell}: ${c.requests} request(s) back in the queue in ${c.jobs} job(s)`);
  io.out(`${id}\n`);
  return EXIT.ok;
}

export async function runPlanExport(
  id: string,
  flags: FlagsOf<typeof PLAN_EXPORT_FLAGS>,
  io: CliIo,
): Promise<number> {
  const out = resolve(flags.out);
  // Refused before anything is read or written: a folder that holds something (another export, another run) is
  // written into only when asked; one that cannot be written to is said in one line, not a stack trace.
  if (existsSync(out) && !statSync(out).isDirectory())
    throw new UsageError(
      `plan export: cannot write into ${out} (a file stands there, not a folder); choose another --out`,
    );
  const held = existsSync(out) ? readdirSync(out) : [];
  if (held.length > 0 && !flags.overwrite)
    throw new UsageError(
      `--out ${out} is not empty (${held.length} entr${held.length === 1 ? 'y' : 'ies'}, e.g. ${held.sort()[0]}): export into an empty or new folder, or pass --overwrite to replace the plan's files there`,
    );
  try {
    mkdirSync(out, { recursive: true });
    accessSync(out, constants.W_OK);
    return await exportInto(id, out, flags, io);
  } catch (e) {
    const refused = writeRefusal(e);
    if (refused === undefined) throw e;
    throw new UsageError(
      `plan export: cannot write into ${out} (${refused.why}${refused.path ? `: ${refused.path}` : ''}); ${refused.full ? 'free some space, or choose another --out' : 'choose another --out, or make it writable'}`,
    );
  }
}

async function exportInto(
  id: string,
  out: string,
  flags: FlagsOf<typeof PLAN_EXPORT_FLAGS>,
  io: CliIo,
): Promise<number> {
  const summary = await withQueue(flags.db, async (db) => (await queue()).exportPlan(db, id, out), {
    log: io.log,
  });
  const done = summary.cells.filter((c) => c.status === 'done');
  if (flags.submit) {
    // Loaded here, not with this module: a worker's start loads neither `plan`'s modules nor the YAML parser.
    const { submitCell } = await import('./plan.js');
    for (const c of done) c.submission = await submitCell(c.dir, flags.submit, c.cell, io);
    (await import('../plans/run.js')).writePlanSummary(out, summary);
  }
  if (done.length > 0) {
    const { runReport } = await import('../report/run.js');
    await runReport(
      done.map((c) => c.dir),
      { out: resolve(out, 'report.html'), names: done.map((c) => c.cell), title: `Plan ${summary.name}` },
    );
  }
  if (flags.json) io.out(`${JSON.stringify(summary)}\n`);
  else
    io.out(
      `${renderTable(
        ['cell', 'status', 'overall'],
        summary.cells.map((c) => [c.cell, c.status, c.overall === null ? '–' : c.overall.toFixed(2)]),
        2,
      )}\n`,
    );
  const unfinished = summary.cells.filter((c) => c.status !== 'done' && c.status !== 'failed');
  const failed = summary.cells.filter((c) => c.status === 'failed');
  if (unfinished.length > 0)
    io.log.warn(
      `${unfinished.length} of ${summary.cells.length} cell(s) not finished yet, not exported: ${unfinished.map((c) => `${c.cell} (${c.status})`).join(', ')}; export again once \`plan status ${id}\` says done`,
    );
  if (failed.length > 0)
    io.log.warn(`${failed.length} of ${summary.cells.length} cell(s) failed: see plan status ${id}`);
  // Still under way: incomplete (3), what is finished is there. Failed with nothing done: 1.
  return done.length === summary.cells.length
    ? EXIT.ok
    : done.length === 0 && unfinished.length === 0
      ? EXIT.submissionErrors
      : EXIT.incomplete;
}

export async function runEndpointAdd(
  name: string,
  flags: FlagsOf<typeof ENDPOINT_ADD_FLAGS>,
  io: CliIo,
): Promise<number> {
  const baseUrl = flags.baseUrl ?? baseUrlOf(flags.provider)?.default;
  if (!providerRecord(flags.provider).local && baseUrl === undefined)
    throw new UsageError(`--provider ${flags.provider} needs --base-url`);
  const wanted = {
    name,
    provider: flags.provider,
    base_url: baseUrl ?? null,
    model: flags.model,
    api_key_env: flags.apiKeyEnv ?? null,
    team: flags.team ?? null,
  };
  const options = { allowPrivate: flags.allowPrivate };
  // Refused before the database is opened: the key's variable and every address the server's name resolves to.
  await (await queue()).vetEndpoint(wanted, options);
  const e = await withQueue(flags.db, (db) => queue().then((q) => q.addEndpoint(db, wanted, options)));
  io.log.info(
    `endpoint ${e.name}: ${e.provider} ${e.base_url ?? ''} model ${e.model} on the allow-list${e.allow_private ? ' (a private address allowed)' : ''}`,
  );
  return EXIT.ok;
}

export async function runEndpointList(
  flags: FlagsOf<typeof ENDPOINT_LIST_FLAGS>,
  io: CliIo,
): Promise<number> {
  const list = await withQueue(flags.db, async (db) => (await queue()).listEndpoints(db), { log: io.log });
  if (flags.json) io.out(`${JSON.stringify(list)}\n`);
  else
    io.out(
      `${renderTable(
        ['name', 'provider', 'base url', 'model', 'key from', 'private'],
        list.map((e) => [
          e.name,
          e.provider,
          e.base_url ?? '',
          e.model,
          e.api_key_env ?? '',
          e.allow_private ? 'allowed' : '',
        ]),
        2,
      )}\n`,
    );
  return EXIT.ok;
}

export async function runEndpointRemove(
  name: string,
  flags: FlagsOf<typeof PLAN_CANCEL_FLAGS>,
  io: CliIo,
): Promise<number> {
  const gone = await withQueue(flags.db, async (db) => (await queue()).removeEndpoint(db, name), {
    log: io.log,
  });
  if (!gone) throw new UsageError(`no endpoint "${name}" on the allow-list`);
  io.log.info(`endpoint ${name} removed from the allow-list`);
  return EXIT.ok;
}
