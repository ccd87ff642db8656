/**
 * The worker's own rows of the queue, as SQL: its registration and heartbeats (`workerRows`), the jobs it claims
 * (`takeJobs`: an endpoint's in-flight budget counted over every live worker's claims) and the sweep of workers found
 * lost (`releaseLost`: their jobs back to the queue, what their requests held of an endpoint's budget kept until
 * those requests must have ended). `Worker` (./worker.ts) decides when; a cell's work is in ./queue-store.ts.
 */
import { hostname } from 'node:os';
import type { QueryResult } from 'pg';
import type PgBoss from 'pg-boss';
import { LLM_DEFAULTS } from '../engine/spec.js';
import type { Logger } from '../log.js';
import type { Query } from './queue-store.js';
import { type QueueDb, SCHEMA } from './store.js';

/** A queue with jobs waiting, its endpoint and the in-flight budget of its plans. */
export interface QueueRow {
  queue: string;
  endpoint: string;
  budget: number;
}

/** A job taken with its claim, and its chunk's keys and round. */
export interface Taken {
  claim: string;
  job: PgBoss.Job<JobData>;
  inFlight: number;
  keys: string | null;
  round: number;
}

/** Whether a process of this machine is still there (stopped or not): signal 0 checks without sending anything. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface JobData {
  plan: string;
  cell: string;
  chunk: number;
}

/**
 * Up to `slots` jobs of a queue with room on its endpoint, counted over every live worker's claims: on a model
 * server `want` requests shared among the jobs taken (at least one each), else `want` each (one on this machine's
 * model, none for a batch job). The budget's check, the fetch and the claims are one transaction,
 * so a worker that dies at any point holds either claimed jobs (released when its heartbeat lapses) or none.
 */
export async function takeJobs(
  db: QueueDb,
  worker: string,
  q: QueueRow,
  want: number,
  slots: number,
): Promise<Taken[] | 'lost'> {
  const client = await db.pool.connect();
  let broken: Error | undefined;
  try {
    // One round trip, three statements (each reads what was committed before it began): the transaction, the
    // endpoint's lock, and, once it is held, the budget used: every registered worker's claims (a silent one's
    // too: its requests may still be at the server, and once it is declared lost they linger), and what lost
    // workers left lingering. Only a worker still registered takes a job; the
    // claim counts as a beat (a worker declared lost meanwhile waits for this transaction, and then finds the
    // beat fresh).
    const me = client.escapeLiteral(worker);
    const endpoint = client.escapeLiteral(q.endpoint);
    const results = (await client.query(
      `BEGIN; SELECT pg_advisory_xact_lock(hashtext(${endpoint}));
       WITH me AS (UPDATE ${SCHEMA}.workers SET last_seen = now() WHERE id = ${me} AND status = 'running' RETURNING id)
       SELECT (SELECT count(*) FROM me)::int AS me,
         (SELECT coalesce(sum(c.in_flight), 0) FROM ${SCHEMA}.claims c JOIN ${SCHEMA}.workers w ON w.id = c.worker_id
          WHERE c.endpoint = ${endpoint} AND w.status = 'running')::int
         + (SELECT coalesce(sum(l.in_flight), 0) FROM ${SCHEMA}.lingering l
            WHERE l.endpoint = ${endpoint} AND l.until > now())::int AS used`,
    )) as unknown as QueryResult<{ me: number; used: number }>[];
    const rows = results[2]?.rows ?? [];
    if (!rows[0]?.me) {
      await client.query('ROLLBACK');
      return 'lost' as const;
    }
    // On a model server, `want` is what the worker has free over the jobs it takes, shared out evenly among the
    // jobs the queue gives (one job taken alone holds all of it); elsewhere it is each job's own.
    const remote = q.endpoint !== 'this machine' && want > 0;
    const total = remote ? Math.min(want, q.budget - rows[0].used) : want;
    const count = remote ? Math.max(0, Math.min(slots, total)) : slots;
    const jobs =
      count === 0
        ? []
        : await db.boss.fetch<JobData>(q.queue, {
            batchSize: count,
            db: { executeSql: (text, values) => client.query(text, values) },
          });
    const rooms = jobs.map((_, i) =>
      remote ? Math.floor(total / jobs.length) + (i < total % jobs.length ? 1 : 0) : want,
    );
    // The claims and the COMMIT in one round trip (a simple query, so its values are literals, each escaped).
    const text = (xs: readonly string[]) =>
      `ARRAY[${xs.map((x) => client.escapeLiteral(x)).join(', ')}]::text[]`;
    const ints = (xs: readonly number[]) =>
      `ARRAY[${xs.map((x) => String(Math.trunc(x))).join(', ')}]::int[]`;
    const claims =
      jobs.length === 0
        ? []
        : ((
            (await client.query(
              `WITH claimed AS (
                 INSERT INTO ${SCHEMA}.claims (worker_id, endpoint, queue, in_flight, job_id, plan_id, cell_id, chunk)
                 SELECT ${me}, ${endpoint}, ${client.escapeLiteral(q.queue)}, * FROM unnest(${ints(rooms)},
                   ${text(jobs.map((j) => j.id))}::uuid[], ${text(jobs.map((j) => j.data.plan))},
                   ${text(jobs.map((j) => j.data.cell))}, ${ints(jobs.map((j) => j.data.chunk))})
                 RETURNING id, job_id, plan_id, cell_id, chunk)
               SELECT c.id, c.job_id, k.keys, k.round FROM claimed c
                 LEFT JOIN ${SCHEMA}.chunks k ON k.plan_id = c.plan_id AND k.cell_id = c.cell_id AND k.chunk = c.chunk;
               COMMIT`,
            )) as unknown as QueryResult<{
              id: string;
              job_id: string;
              keys: string | null;
              round: number | null;
            }>[]
          )[0]?.rows ?? []);
    if (jobs.length === 0) await client.query('COMMIT');
    const byJob = new Map(claims.map((c) => [c.job_id, c]));
    return jobs.map((job, i) => {
      const c = byJob.get(job.id);
      // A chunk that is not there (its plan deleted) has nothing to ask.
      return {
        claim: String(c?.id),
        job,
        inFlight: rooms[i] as number,
        keys: c ? c.keys : '[]',
        round: c?.round ?? 0,
      };
    });
  } catch (e) {
    broken = e as Error;
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release(broken);
  }
}

/**
 * Lost workers: their claims are deleted by whoever sees it first (DELETE … RETURNING gives each to one), and their
 * jobs released to the queue; a job taken but never claimed is released after a minute; a cell whose finisher was
 * lost waits for another.
 */
export async function releaseLost(
  db: QueueDb,
  q: Query,
  retry: <T>(call: () => Promise<T>) => Promise<T>,
  log: Logger,
): Promise<void> {
  // A lost worker may only be frozen or cut off, its requests still running at the model server: the share of the
  // endpoint's budget its claims held stays held (lingering) until those requests must have ended (the worker's
  // lapse, within which it sent the last of them, plus one attempt's timeout), or until it comes back and they have
  // landed. Where the lost worker ran on this machine and its process is gone, its sockets closed with it: nothing
  // lingers.
  const lost = await q<{
    job_id: string | null;
    queue: string;
    name: string;
    worker_id: string;
    host: string | null;
    pid: number | null;
    lost: boolean;
  }>(
    `WITH gone AS (
       UPDATE ${SCHEMA}.workers SET status = 'lost'
       WHERE status = 'running' AND last_seen < now() - make_interval(secs => lapse_s)
         -- A database just restarted left every worker's last beat old: none is lost for that.
         AND pg_postmaster_start_time() < now() - make_interval(secs => 2 * lapse_s + 10)
       RETURNING id, name, host, pid),
     released AS (
       DELETE FROM ${SCHEMA}.claims c USING ${SCHEMA}.workers w
       WHERE c.worker_id = w.id AND (w.status <> 'running' OR w.id IN (SELECT id FROM gone))
       RETURNING c.job_id, c.queue, c.endpoint, c.in_flight, c.plan_id, c.cell_id, w.id AS worker_id, w.name,
         w.last_seen, w.lapse_s),
     held AS (
       INSERT INTO ${SCHEMA}.lingering (worker_id, endpoint, in_flight, until)
       SELECT r.worker_id, r.endpoint, r.in_flight, r.last_seen + make_interval(secs => r.lapse_s
         + coalesce((cl.spec::jsonb #>> '{provider,timeout_ms}')::float8 / 1000, ${LLM_DEFAULTS.timeoutMs / 1000}))
       FROM released r LEFT JOIN ${SCHEMA}.cells cl ON cl.plan_id = r.plan_id AND cl.cell_id = r.cell_id
       WHERE r.in_flight > 0 AND r.endpoint <> 'this machine' AND r.worker_id IN (SELECT id FROM gone)),
     ended AS (DELETE FROM ${SCHEMA}.lingering WHERE until <= now())
     SELECT r.job_id, r.queue, r.name, r.worker_id, g.host, g.pid, g.id IS NOT NULL AS lost
     FROM released r LEFT JOIN gone g ON g.id = r.worker_id`,
  );
  const here = hostname();
  const dead = new Set<string>();
  for (const r of lost.rows)
    if (r.host === here && r.pid !== null && !processAlive(r.pid)) dead.add(r.worker_id);
  if (dead.size > 0)
    await q(`DELETE FROM ${SCHEMA}.lingering WHERE worker_id = ANY($1::text[])`, [[...dead]]);
  for (const r of lost.rows) {
    const job = r.job_id;
    if (!job) continue;
    await retry(() =>
      db.boss.fail(r.queue, job, {
        reason: r.lost ? `worker ${r.name} lost (no heartbeat)` : `worker ${r.name} stopped`,
      }),
    );
    // A worker that stopped (its status written) but left a claim is not lost: said as it is.
    log.warn(
      r.lost
        ? `worker ${r.name} is lost: its job went back to the queue`
        : `worker ${r.name} stopped holding a job: it went back to the queue`,
    );
  }
  // A job taken but never claimed (its worker died between the two) is released after a minute.
  const orphans = await q<{ id: string; name: string }>(
    `SELECT j.id, j.name FROM pgboss.job j
     WHERE j.name LIKE 'rumedbench\\_%' AND j.state = 'active' AND j.started_on < now() - interval '60 seconds'
       AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.claims c WHERE c.job_id = j.id)`,
  );
  for (const r of orphans.rows)
    await retry(() => db.boss.fail(r.name, r.id, { reason: 'taken but never claimed' }));
  // A cell whose finisher was lost is finished by another.
  await q(
    `UPDATE ${SCHEMA}.cells c SET status = 'running', finisher = NULL
     WHERE c.status = 'finishing' AND NOT EXISTS (
       SELECT 1 FROM ${SCHEMA}.workers w WHERE w.id = c.finisher AND w.status = 'running')`,
  );
}

/** A worker's own rows: its registration and beats, its claims, and what it reads of the queue to find work. */
export interface WorkerRows {
  register(name: string, lapseS: number): Promise<void>;
  /** Stopped cleanly: never taken for lost. */
  stopped(): Promise<void>;
  /** Still registered and running: false once another worker declared it lost. */
  beat(): Promise<boolean>;
  /** Back from being declared lost: registered again, what its requests held of the budgets let go. */
  rejoin(name: string, lapseS: number): Promise<void>;
  /** A claim deleted; false where it was no longer there (taken away). */
  unclaim(claim: string): Promise<boolean>;
  /** Which of `plans` were cancelled. */
  cancelled(plans: readonly string[]): Promise<Set<string>>;
  /** The queues with work, each with its endpoint and its plans' in-flight budget. */
  queues(): Promise<QueueRow[]>;
  /** Cells whose every job is done but that nobody finished, but those in `skip` (`plan\ncell`). */
  unfinished(skip: ReadonlySet<string>): Promise<{ plan_id: string; cell_id: string }[]>;
  /** Whether a plan has work left: none, only cells being finished, or more. */
  workLeft(): Promise<'none' | 'finishing' | 'more'>;
}

/** The rows of worker `id`, read and written through `q`. */
export function workerRows(q: Query, id: string): WorkerRows {
  return {
    async register(name, lapseS) {
      await q(
        `INSERT INTO ${SCHEMA}.workers (id, name, host, pid, lapse_s, status) VALUES ($1, $2, $3, $4, $5, 'running')`,
        [id, name, hostname(), process.pid, lapseS],
      );
    },
    async stopped() {
      await q(`UPDATE ${SCHEMA}.workers SET status = 'stopped', last_seen = now() WHERE id = $1`, [id]);
    },
    async beat() {
      const alive = await q(
        `UPDATE ${SCHEMA}.workers SET last_seen = now() WHERE id = $1 AND status = 'running' RETURNING id`,
        [id],
      );
      return (alive.rowCount ?? 0) > 0;
    },
    async rejoin(name, lapseS) {
      // An upsert: a queue created again empty (restored, or `plan migrate`) no longer knows this worker.
      await q(
        `WITH back AS (DELETE FROM ${SCHEMA}.lingering WHERE worker_id = $1)
         INSERT INTO ${SCHEMA}.workers (id, name, host, pid, lapse_s, status) VALUES ($1, $2, $3, $4, $5, 'running')
         ON CONFLICT (id) DO UPDATE SET status = 'running', last_seen = now()`,
        [id, name, hostname(), process.pid, lapseS],
      );
    },
    async unclaim(claim) {
      const gone = await q(`DELETE FROM ${SCHEMA}.claims WHERE id = $1 RETURNING id`, [claim]);
      return (gone.rowCount ?? 0) > 0;
    },
    async cancelled(plans) {
      const { rows } = await q<{ id: string }>(
        `SELECT id FROM ${SCHEMA}.plans WHERE id = ANY($1::text[]) AND status = 'cancelled'`,
        [plans],
      );
      return new Set(rows.map((r) => r.id));
    },
    async queues() {
      const { rows } = await q<QueueRow>(
        `SELECT c.queue, c.endpoint, max(p.max_in_flight)::int AS budget
         FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id
         WHERE p.status IN ('queued', 'running') AND c.status IN ('queued', 'running')
           AND EXISTS (SELECT 1 FROM ${SCHEMA}.chunks k WHERE k.plan_id = c.plan_id AND k.cell_id = c.cell_id AND NOT k.done)
         GROUP BY c.queue, c.endpoint`,
      );
      return rows;
    },
    async unfinished(skip) {
      const { rows } = await q<{ plan_id: string; cell_id: string }>(
        `SELECT c.plan_id, c.cell_id FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id
         WHERE p.status IN ('queued', 'running') AND c.status IN ('queued', 'running')
           AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.chunks k WHERE k.plan_id = c.plan_id AND k.cell_id = c.cell_id AND NOT k.done)
           AND NOT (c.plan_id || E'\n' || c.cell_id = ANY($1::text[]))
         LIMIT 4`,
        [[...skip]],
      );
      return rows;
    },
    async workLeft() {
      const { rows } = await q<{ more: boolean | null }>(
        `SELECT bool_or(c.status <> 'finishing') AS more FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id
         WHERE p.status IN ('queued', 'running') AND c.status NOT IN ('done', 'failed')`,
      );
      const more = rows[0]?.more;
      return more === null || more === undefined ? 'none' : more ? 'more' : 'finishing';
    },
  };
}
