/**
 * A queued plan as its owner sees it: `plan status` (per cell: requests done of total, rate, time left, failed
 * requests and why, the workers on it), `plan cancel`, and `plan export` (the run folders the workers finished, and
 * the plan summary, as `plan run` writes them).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { RumedbenchError } from '../errors.js';
import {
  PLAN_RUN_VERSION,
  type PlanRow,
  type PlanSummary,
  rowOf,
  type UnfinishedState,
  writePlanSummary,
} from '../plans/run.js';
import { type RunSummaryInput, writeRunSummary } from '../scoring/run-log.js';
import {
  DEFAULT_JOB_SIZE,
  inTransaction,
  jobsOf,
  orderedJobIds,
  QUEUE_OPTIONS,
  type QueueDb,
  SCHEMA,
} from './store.js';

export interface CellStatus {
  cell: string;
  model: string;
  status: 'queued' | 'running' | 'finishing' | 'done' | 'failed' | 'cancelled';
  requests: { done: number; failed: number; total: number };
  /** Requests answered (not failed) per second over the last minute. */
  rate: number;
  /** Seconds left at that rate (null: no rate yet, or nothing left). */
  eta_s: number | null;
  /** Failed requests, by reason (the most frequent first). */
  failures: { reason: string; n: number }[];
  workers: string[];
  error: string | null;
  overall: number | null;
  /** A batch cell's batches: the provider's id, its state as last seen, whether its results are in. */
  batches?: { id: string; requests: number; status: string | null; collected: boolean }[];
}

export interface PlanStatus {
  id: string;
  name: string;
  kind: string;
  status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
  created_at: string;
  finished_at: string | null;
  cells: CellStatus[];
  /** Live workers, with the cells they are on (an admin's view). */
  workers: { name: string; host: string; last_seen: string; cells: string[] }[];
}

export async function planStatus(db: QueueDb, id: string): Promise<PlanStatus> {
  const pool = db.pool;
  const plan = await pool.query<{
    id: string;
    name: string;
    kind: string;
    status: PlanStatus['status'];
    created_at: Date;
    finished_at: Date | null;
  }>(`SELECT id, name, kind, status, created_at, finished_at FROM ${SCHEMA}.plans WHERE id = $1`, [id]);
  const p = plan.rows[0];
  if (!p) throw new RumedbenchError('PLAN_NOT_FOUND', `no plan ${id} in the queue at ${db.location}`);
  const cells = await pool.query<{
    cell_id: string;
    model: string;
    status: CellStatus['status'];
    total: number;
    error: string | null;
    summary: string | null;
  }>(
    `SELECT cell_id, model, status, total, error, summary FROM ${SCHEMA}.cells WHERE plan_id = $1 ORDER BY position`,
    [id],
  );
  const counts = await pool.query<{ cell_id: string; ok: number; failed: number; recent: number }>(
    `SELECT cell_id, count(*) FILTER (WHERE status = 'ok')::int AS ok, count(*) FILTER (WHERE status <> 'ok')::int AS failed,
       count(*) FILTER (WHERE status = 'ok' AND at > now() - interval '60 seconds')::int AS recent
     FROM ${SCHEMA}.answers WHERE plan_id = $1 GROUP BY cell_id`,
    [id],
  );
  const since = await pool.query<{ cell_id: string; span: number }>(
    `SELECT cell_id, least(60, extract(epoch FROM now() - min(at)))::float AS span FROM ${SCHEMA}.answers
     WHERE plan_id = $1 AND status = 'ok' AND at > now() - interval '60 seconds' GROUP BY cell_id`,
    [id],
  );
  const failures = await pool.query<{ cell_id: string; reason: string; n: number }>(
    `SELECT cell_id, left(coalesce(entry::json->>'error', 'failed'), 300) AS reason, count(*)::int AS n
     FROM ${SCHEMA}.answers WHERE plan_id = $1 AND status <> 'ok' GROUP BY 1, 2 ORDER BY n DESC`,
    [id],
  );
  const busy = await pool.query<{ cell_id: string; name: string; host: string; last_seen: Date }>(
    `SELECT DISTINCT c.cell_id, w.name, w.host, w.last_seen FROM ${SCHEMA}.claims c JOIN ${SCHEMA}.workers w ON w.id = c.worker_id
     WHERE c.plan_id = $1 AND w.status = 'running'`,
    [id],
  );
  const batches = await pool.query<{
    cell_id: string;
    id: string;
    requests: number;
    status: string | null;
    collected: boolean;
  }>(
    `SELECT cell_id, id, json_array_length(keys::json)::int AS requests, status, collected FROM ${SCHEMA}.batches
     WHERE plan_id = $1 ORDER BY submitted_at`,
    [id],
  );
  const byCell = <T extends { cell_id: string }>(rows: T[]) => {
    const m = new Map<string, T[]>();
    for (const r of rows) m.set(r.cell_id, [...(m.get(r.cell_id) ?? []), r]);
    return m;
  };
  const c1 = byCell(counts.rows);
  const s1 = byCell(since.rows);
  const f1 = byCell(failures.rows);
  const b1 = byCell(busy.rows);
  const k1 = byCell(batches.rows);
  const out: CellStatus[] = cells.rows.map((c) => {
    const n = c1.get(c.cell_id)?.[0];
    const span = s1.get(c.cell_id)?.[0]?.span ?? 0;
    // A finished cell has no rate and no time left; failures are no progress: the rate counts answers only, so a
    // cell whose every request fails shows none, rather than a time left computed from its failures.
    const live = c.status === 'queued' || c.status === 'running';
    const rate = live && n && span > 0 ? n.recent / Math.max(1, span) : 0;
    const left = c.total - (n?.ok ?? 0);
    const summary = c.summary ? (JSON.parse(c.summary) as { overall?: number | null }) : undefined;
    return {
      cell: c.cell_id,
      model: c.model,
      status: c.status,
      requests: { done: n?.ok ?? 0, failed: n?.failed ?? 0, total: c.total },
      rate,
      eta_s: rate > 0 && left > 0 ? left / rate : null,
      failures: (f1.get(c.cell_id) ?? []).map((f) => ({ reason: f.reason, n: f.n })),
      workers: [...new Set((b1.get(c.cell_id) ?? []).map((b) => b.name))],
      error: c.error,
      overall: summary?.overall ?? null,
      ...(k1.has(c.cell_id)
        ? {
            batches: (k1.get(c.cell_id) ?? []).map(({ cell_id: _c, ...b }) => b),
          }
        : {}),
    };
  });
  const workers = new Map<string, PlanStatus['workers'][number]>();
  for (const b of busy.rows) {
    const w = workers.get(b.name) ?? {
      name: b.name,
      host: b.host,
      last_seen: b.last_seen.toISOString(),
      cells: [],
    };
    w.cells.push(b.cell_id);
    workers.set(b.name, w);
  }
  return {
    id: p.id,
    name: p.name,
    kind: p.kind,
    status: p.status,
    created_at: p.created_at.toISOString(),
    finished_at: p.finished_at?.toISOString() ?? null,
    cells: out,
    workers: [...workers.values()],
  };
}

/** A plan in the list of /runs: its progress in requests, and the cells' errors. */
export interface ListedPlan {
  id: string;
  name: string;
  kind: string;
  status: string;
  created_at: string;
  done: number;
  total: number;
  error: string | null;
}

/** Every plan, newest first (the platform's /runs page). */
export async function listPlans(
  db: QueueDb,
  /** `before`: only plans created before this time (ISO), for paging back by time. */
  o: { kind?: string; limit?: number; before?: string } = {},
): Promise<ListedPlan[]> {
  const { rows } = await db.pool.query<{
    id: string;
    name: string;
    kind: string;
    status: string;
    created_at: Date;
    done: number;
    total: number;
    error: string | null;
  }>(
    `SELECT p.id, p.name, p.kind, p.status, p.created_at,
       (SELECT count(*) FROM ${SCHEMA}.answers a WHERE a.plan_id = p.id AND a.status = 'ok')::int AS done,
       (SELECT coalesce(sum(total), 0) FROM ${SCHEMA}.cells c WHERE c.plan_id = p.id)::int AS total,
       (SELECT string_agg(c.cell_id || ': ' || c.error, '; ') FROM ${SCHEMA}.cells c WHERE c.plan_id = p.id AND c.error IS NOT NULL) AS error
     FROM ${SCHEMA}.plans p WHERE ($1::text IS NULL OR p.kind = $1) AND ($3::timestamptz IS NULL OR date_trunc('milliseconds', p.created_at) < $3)
     ORDER BY p.created_at DESC LIMIT $2`,
    [o.kind ?? null, o.limit ?? 200, o.before ?? null],
  );
  return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() }));
}

/** Cancels a plan: its waiting jobs are cancelled in the queue, and workers on it stop at their next heartbeat. */
export async function cancelPlan(db: QueueDb, id: string): Promise<{ cancelled: boolean; status: string }> {
  const r = await db.pool.query<{ status: string }>(
    `UPDATE ${SCHEMA}.plans SET status = 'cancelled', finished_at = now() WHERE id = $1 AND status IN ('queued', 'running') RETURNING status`,
    [id],
  );
  if (r.rowCount === 0) {
    const s = await db.pool.query<{ status: string }>(`SELECT status FROM ${SCHEMA}.plans WHERE id = $1`, [
      id,
    ]);
    if (!s.rows[0])
      throw new RumedbenchError('PLAN_NOT_FOUND', `no plan ${id} in the queue at ${db.location}`);
    return { cancelled: false, status: s.rows[0].status };
  }
  const jobs = await db.pool.query<{ job_id: string; queue: string }>(
    `SELECT k.job_id, c.queue FROM ${SCHEMA}.chunks k JOIN ${SCHEMA}.cells c USING (plan_id, cell_id)
     WHERE k.plan_id = $1 AND NOT k.done`,
    [id],
  );
  const byQueue = new Map<string, string[]>();
  for (const j of jobs.rows) byQueue.set(j.queue, [...(byQueue.get(j.queue) ?? []), j.job_id]);
  for (const [q, ids] of byQueue) await db.boss.cancel(q, ids);
  // Its claims go at once, and with them their share of the endpoints' max_in_flight: the next plan on the same
  // servers runs at full speed now, not once the workers holding them restart. Those workers drop the jobs at their
  // next beat; a request of theirs still in flight then ends without being written.
  await db.pool.query(
    `WITH freed AS (DELETE FROM ${SCHEMA}.claims WHERE plan_id = $1)
     UPDATE ${SCHEMA}.cells SET status = 'cancelled', finished_at = now() WHERE plan_id = $1 AND status NOT IN ('done', 'failed')`,
    [id],
  );
  return { cancelled: true, status: 'cancelled' };
}

/**
 * `plan retry`: a failed cell's requests without an answer go back to the queue as a new chunk (round 0, taken at
 * once, with the plan's retry rounds anew); the cell is queued again and the plan running. Only failed cells (of a
 * plan not cancelled), and of those only the ones named, when `cells` is given.
 *
 * Invariant: a retried cell always ends, done or failed (its earlier chunks are closed: the new one asks all they
 * left unanswered).
 */
export async function retryPlan(
  db: QueueDb,
  id: string,
  cells?: readonly string[],
): Promise<{ cells: { cell: string; requests: number; jobs: number }[] }> {
  return inTransaction(db, async (client) => {
    const plan = await client.query<{ status: string }>(
      `SELECT status FROM ${SCHEMA}.plans WHERE id = $1 FOR UPDATE`,
      [id],
    );
    const status = plan.rows[0]?.status;
    if (status === undefined)
      throw new RumedbenchError('PLAN_NOT_FOUND', `no plan ${id} in the queue at ${db.location}`);
    if (status === 'cancelled' || status === 'pending')
      throw new RumedbenchError('USAGE', `plan ${id} is ${status}: there is nothing of it to ask again`);
    const failed = await client.query<{
      cell_id: string;
      queue: string;
      in_flight: number;
      job_size: number;
    }>(
      `SELECT c.cell_id, c.queue, c.in_flight, coalesce(p.job_size, $2)::int AS job_size
       FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id
       WHERE c.plan_id = $1 AND c.status = 'failed' ORDER BY c.position`,
      [id, DEFAULT_JOB_SIZE],
    );
    const unknown = (cells ?? []).filter((c) => !failed.rows.some((r) => r.cell_id === c));
    if (unknown.length > 0)
      throw new RumedbenchError(
        'USAGE',
        `plan ${id} has no failed cell ${unknown.map((c) => `"${c}"`).join(', ')}; its failed cells: ${failed.rows.map((r) => r.cell_id).join(', ') || 'none'}`,
      );
    const out: { cell: string; requests: number; jobs: number }[] = [];
    const tx = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
    for (const r of failed.rows.filter((c) => !cells || cells.includes(c.cell_id))) {
      const chunks = await client.query<{ keys: string; chunk: number }>(
        `SELECT keys, chunk FROM ${SCHEMA}.chunks WHERE plan_id = $1 AND cell_id = $2`,
        [id, r.cell_id],
      );
      const planned = chunks.rows.flatMap((k) => (JSON.parse(k.keys) as string[] | null) ?? []);
      const answers = await client.query<{ key: string; status: string }>(
        `SELECT key, status FROM ${SCHEMA}.answers WHERE plan_id = $1 AND cell_id = $2`,
        [id, r.cell_id],
      );
      const ok = new Set(answers.rows.filter((a) => a.status === 'ok').map((a) => a.key));
      // A cell planned on the worker (the platform's closed tests) stored no keys: its failed answers are asked.
      const keys = [
        ...new Set(
          planned.length > 0
            ? planned.filter((k) => !ok.has(k))
            : answers.rows.filter((a) => a.status !== 'ok').map((a) => a.key),
        ),
      ];
      const first = Math.max(-1, ...chunks.rows.map((k) => k.chunk)) + 1;
      // The new chunks ask every request of the cell without an answer: they stand for the cell's earlier chunks.
      // Those the failure left open (a round whose server was down, jobs cancelled with the cell) would otherwise keep
      // the cell from finishing for good, its requests all answered. They are cut to the plan's job size: one job of
      // a whole cell's failures would keep every worker but one idle.
      await client.query(`UPDATE ${SCHEMA}.chunks SET done = true WHERE plan_id = $1 AND cell_id = $2`, [
        id,
        r.cell_id,
      ]);
      const jobId = orderedJobIds();
      const jobs = jobsOf(keys, r.job_size, r.in_flight).map((part, i) => ({
        part,
        chunk: first + i,
        jobId: jobId(),
      }));
      for (const j of jobs)
        await client.query(
          `INSERT INTO ${SCHEMA}.chunks (plan_id, cell_id, chunk, keys, job_id, round) VALUES ($1, $2, $3, $4, $5, 0)`,
          [id, r.cell_id, j.chunk, JSON.stringify(j.part), j.jobId],
        );
      await client.query(
        `UPDATE ${SCHEMA}.cells SET status = 'queued', error = NULL, finished_at = NULL, finisher = NULL
         WHERE plan_id = $1 AND cell_id = $2`,
        [id, r.cell_id],
      );
      await db.boss.insert(
        jobs.map((j) => ({
          id: j.jobId,
          name: r.queue,
          data: { plan: id, cell: r.cell_id, chunk: j.chunk },
          ...QUEUE_OPTIONS,
        })),
        { db: tx },
      );
      out.push({ cell: r.cell_id, requests: keys.length, jobs: jobs.length });
    }
    if (out.length > 0)
      await client.query(`UPDATE ${SCHEMA}.plans SET status = 'running', finished_at = NULL WHERE id = $1`, [
        id,
      ]);
    return { cells: out };
  });
}

/** The files of a finished cell's run folder (what `llm` writes), as the worker that finished it stored them. */
export async function cellFiles(
  db: QueueDb,
  id: string,
  cell: string,
): Promise<{ path: string; content: Buffer }[]> {
  const { rows } = await db.pool.query<{ path: string; content: Buffer }>(
    `SELECT path, content FROM ${SCHEMA}.files WHERE plan_id = $1 AND cell_id = $2 ORDER BY path`,
    [id, cell],
  );
  return rows;
}

/** Writes a plan's finished cells into `<out>/<cell>/` and the plan's summary.json, as `plan run` does. */
export async function exportPlan(db: QueueDb, id: string, outDir: string): Promise<PlanSummary> {
  const plan = await db.pool.query<{ name: string; plan_file: string; plan_sha256: string }>(
    `SELECT name, plan_file, plan_sha256 FROM ${SCHEMA}.plans WHERE id = $1`,
    [id],
  );
  const p = plan.rows[0];
  if (!p) throw new RumedbenchError('PLAN_NOT_FOUND', `no plan ${id} in the queue at ${db.location}`);
  const cells = await db.pool.query<{
    cell_id: string;
    model: string;
    provider: string;
    axes: string;
    settings: string;
    status: string;
    error: string | null;
    wall: number | null;
  }>(
    `SELECT cell_id, model, provider, axes, settings, status, error,
       extract(epoch FROM finished_at - started_at)::float AS wall
     FROM ${SCHEMA}.cells WHERE plan_id = $1 ORDER BY position`,
    [id],
  );
  const root = resolve(outDir);
  const rows: PlanRow[] = [];
  for (const c of cells.rows) {
    const dir = join(root, c.cell_id);
    const cell = {
      id: c.cell_id,
      model: c.model,
      provider: c.provider,
      axes: JSON.parse(c.axes) as Record<string, unknown>,
      settings: JSON.parse(c.settings) as Record<string, unknown>,
    };
    if (c.status === 'done') {
      for (const f of await cellFiles(db, id, c.cell_id)) {
        const target = resolve(dir, f.path);
        // Paths come from the database: none may climb out of the cell's folder.
        if (!target.startsWith(`${dir}${sep}`))
          throw new Error(`${id}/${c.cell_id}: a stored path leaves its folder: ${f.path}`);
        mkdirSync(dirname(target), { recursive: true });
        if (f.path === 'summary.json') writeExportedSummary(f.content, dir);
        else writeFileSync(target, f.content);
      }
    }
    const row = rowOf(cell, dir, {
      code: c.status === 'done' ? 0 : 1,
      ...(c.status !== 'done' && c.error ? { error: c.error } : {}),
      wall_s: c.wall,
    });
    // A cell still under way (or cancelled) is not a failure: it keeps the queue's state, to export again later.
    rows.push(
      c.status === 'done' || c.status === 'failed' ? row : { ...row, status: c.status as UnfinishedState },
    );
  }
  mkdirSync(root, { recursive: true });
  const summary: PlanSummary = {
    schema_version: PLAN_RUN_VERSION,
    kind: 'plan',
    name: p.name,
    plan_file: p.plan_file,
    plan_sha256: p.plan_sha256,
    cells: rows,
  };
  writePlanSummary(root, summary);
  return summary;
}

/** A platform evaluation's stored meta (JSON), or undefined when the id is no evaluation. */
export async function evaluationMeta(db: QueueDb, id: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ meta: string }>(
    `SELECT meta FROM ${SCHEMA}.plans WHERE id = $1 AND kind = 'evaluation'`,
    [id],
  );
  return rows[0]?.meta;
}

/** Finished platform evaluations not yet settled (some finished cell not yet on its board). */
export async function unsettledEvaluations(db: QueueDb): Promise<{ id: string; meta: string }[]> {
  const { rows } = await db.pool.query<{ id: string; meta: string }>(
    `SELECT id, meta FROM ${SCHEMA}.plans WHERE kind = 'evaluation' AND status IN ('done', 'failed')
       AND (meta::jsonb ->> 'settled') IS NULL`,
  );
  return rows;
}

/** A plan's cells with their status and settings, in the plan's order. */
export async function planCells(
  db: QueueDb,
  id: string,
): Promise<{ cell_id: string; status: string; settings: string }[]> {
  const { rows } = await db.pool.query<{ cell_id: string; status: string; settings: string }>(
    `SELECT cell_id, status, settings FROM ${SCHEMA}.cells WHERE plan_id = $1 ORDER BY position`,
    [id],
  );
  return rows;
}

export async function setPlanMeta(db: QueueDb, id: string, meta: unknown): Promise<void> {
  await db.pool.query(`UPDATE ${SCHEMA}.plans SET meta = $2 WHERE id = $1`, [id, JSON.stringify(meta)]);
}

/**
 * A cell's summary.json as exported, through the run log's one writer (its schema checked, secrets redacted): the
 * finishing worker scored predictions in a temporary folder of its own, gone since; the summary names the exported
 * folder's predictions instead.
 */
function writeExportedSummary(content: Buffer, dir: string): void {
  const { schema_version: _, ...summary } = JSON.parse(content.toString('utf8')) as Record<string, unknown>;
  writeRunSummary(dir, {
    ...summary,
    ...(typeof summary.source === 'string' ? { source: join(dir, 'predictions') } : {}),
  } as RunSummaryInput);
}
