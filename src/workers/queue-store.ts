/**
 * A queued cell's run as the queue's database keeps it: what a run folder keeps in files (its answers, its batch
 * ledger, the money it spent and reserved), here rows of the cell, for every worker of the cell at once. A worker
 * opens one per job it processes and hands it to the engine (../engine/queued.ts `runChunk`, `finishCell`: the port
 * `QueuedCellStore`), whose loop keeps the job's run through it (`run`, `queueRunStore`); the SQL of a cell's work
 * (its answers, failing it, putting requests back for another round, finishing it) lives here, not in `Worker`.
 *
 * Money: a cell's `spent_usd` and `reserved_usd` (queue schema version 10). A reservation is one conditional UPDATE of
 * the cell's row, so that workers racing for the last dollars of a budget are ordered by the row's lock, and together
 * never reserve past it. A worker killed with requests in flight leaves their reservations counted: those requests
 * may well have been billed, and no one can learn what they cost.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { QueryResult, QueryResultRow } from 'pg';
import { cleanText } from '../data/clean-text.js';
import type { RunStore } from '../engine/loop.js';
import type { FinishRow, JobRow, JobRun, QueuedCellStore } from '../engine/queued.js';
import type { BatchLedger } from '../llm/batch.js';
import type { MoneyStore } from '../llm/budget.js';
import { formatUsd } from '../llm/cost.js';
import type { JournalEntry } from '../llm/journal.js';
import {
  DEFAULT_JOB_SIZE,
  inTransaction,
  jobsOf,
  orderedJobIds,
  QUEUE_OPTIONS,
  type QueueDb,
  SCHEMA,
} from './store.js';

/** How the store queries: the worker's, which waits out an outage of the database. */
export type Query = <R extends QueryResultRow = QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<QueryResult<R>>;

/**
 * A queued cell's rows: what the engine needs of them (../engine/queued.ts `QueuedCellStore`), and what a worker's
 * claim of a job and its finish need beside.
 */
export interface CellStore extends QueuedCellStore {
  /**
   * A job ended: its claim deleted and, with `chunkDone`, its chunk marked done in the same statement (whoever holds
   * the job now finds it answered), then the job completed; false (nothing done) when the claim was taken away.
   */
  jobEnded(
    job: { claim: string; chunk: number; queue: string; id: string },
    chunkDone: boolean,
  ): Promise<boolean>;
  /**
   * `worker` could not finish the cell for a fault of its machine (`why`): handed back for another live worker to
   * finish, once (the cell's error says it); false where no other worker runs or it was handed back before.
   */
  handBack(worker: string, why: string): Promise<boolean>;
  /** `worker`'s finish abandoned (the database away): the cell waits for another finisher. */
  unfinish(worker: string): Promise<void>;
}

/**
 * The store of cell `cell` of plan `plan`, read and written through `q`; `retry` waits out an outage of the database
 * for the calls that do not go through `q` (transactions, the queue's jobs).
 */
export function cellStore(
  db: QueueDb,
  q: Query,
  plan: string,
  cell: string,
  retry: <T>(call: () => Promise<T>) => Promise<T> = (call) => call(),
): CellStore {
  const closePlan = async () => {
    await q(
      `UPDATE ${SCHEMA}.plans p SET finished_at = now(),
         status = CASE WHEN EXISTS (SELECT 1 FROM ${SCHEMA}.cells c WHERE c.plan_id = p.id AND c.status = 'failed') THEN 'failed' ELSE 'done' END
       WHERE p.id = $1 AND p.status IN ('queued', 'running')
         AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.cells c WHERE c.plan_id = p.id AND c.status NOT IN ('done', 'failed'))`,
      [plan],
    );
  };
  const money: MoneyStore = {
    async spent() {
      const { rows } = await q<{ spent: number }>(
        `SELECT spent_usd AS spent FROM ${SCHEMA}.cells WHERE plan_id = $1 AND cell_id = $2`,
        [plan, cell],
      );
      return rows[0]?.spent ?? 0;
    },
    async reserve(usd, max) {
      const { rowCount } = await q(
        `UPDATE ${SCHEMA}.cells SET reserved_usd = reserved_usd + $3
         WHERE plan_id = $1 AND cell_id = $2 AND spent_usd + reserved_usd + $3 <= $4 * (1 + 1e-12)`,
        [plan, cell, usd, max],
      );
      return rowCount === 1;
    },
    async settle(reserved, spent) {
      const { rows } = await q<{ spent: number }>(
        `UPDATE ${SCHEMA}.cells SET reserved_usd = greatest(0, reserved_usd - $3), spent_usd = spent_usd + $4
         WHERE plan_id = $1 AND cell_id = $2 RETURNING spent_usd AS spent`,
        [plan, cell, reserved, spent],
      );
      return rows[0]?.spent ?? spent;
    },
  };
  const batches: BatchLedger = {
    read: async () =>
      (
        await q<{ id: string; provider: string; keys: string; collected: boolean; tag: string | null }>(
          `SELECT b.id, b.provider, b.keys, b.collected, i.tag FROM ${SCHEMA}.batches b
             LEFT JOIN ${SCHEMA}.batch_intents i ON i.plan_id = b.plan_id AND i.cell_id = b.cell_id AND i.outcome = b.id
            WHERE b.plan_id = $1 AND b.cell_id = $2 ORDER BY b.submitted_at`,
          [plan, cell],
        )
      ).rows.map(({ tag, ...r }) => ({
        ...r,
        keys: JSON.parse(r.keys) as string[],
        ...(tag ? { tag } : {}),
      })),
    intents: async () =>
      (
        await q<{ tag: string; provider: string; keys: string; at: string }>(
          `SELECT tag, provider, keys, at FROM ${SCHEMA}.batch_intents WHERE plan_id = $1 AND cell_id = $2 AND outcome IS NULL ORDER BY at`,
          [plan, cell],
        )
      ).rows.map((r) => ({ ...r, keys: JSON.parse(r.keys) as string[] })),
    creating: async (i) => {
      await q(
        `INSERT INTO ${SCHEMA}.batch_intents (plan_id, cell_id, tag, provider, keys, at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT DO NOTHING`,
        [plan, cell, i.tag, i.provider, JSON.stringify(i.keys), i.at],
      );
    },
    abandoned: async (tag) => {
      await q(
        `UPDATE ${SCHEMA}.batch_intents SET outcome = 'abandoned' WHERE plan_id = $1 AND cell_id = $2 AND tag = $3`,
        [plan, cell, tag],
      );
    },
    submitted: async (b) => {
      await inTransaction(db, async (client) => {
        await client.query(
          `INSERT INTO ${SCHEMA}.batches (plan_id, cell_id, id, provider, keys, input_file_id) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT DO NOTHING`,
          [plan, cell, cleanText(b.id, 200), b.provider, JSON.stringify(b.keys), b.inputFileId ?? null],
        );
        if (b.tag)
          await client.query(
            `UPDATE ${SCHEMA}.batch_intents SET outcome = $4 WHERE plan_id = $1 AND cell_id = $2 AND tag = $3`,
            [plan, cell, b.tag, cleanText(b.id, 200)],
          );
      });
    },
    collected: async (b) => {
      await q(
        `UPDATE ${SCHEMA}.batches SET collected = true, status = $4, answered = $5 WHERE plan_id = $1 AND cell_id = $2 AND id = $3`,
        [plan, cell, b.id, cleanText(b.status, 40), b.answered],
      );
    },
    seen: async (state) => {
      const c = state.counts;
      await q(
        `UPDATE ${SCHEMA}.batches SET status = $4 WHERE plan_id = $1 AND cell_id = $2 AND id = $3 AND NOT collected`,
        [plan, cell, state.id, cleanText(c ? `${state.status} ${c.completed}/${c.total}` : state.status, 80)],
      );
    },
  };
  const store: CellStore = {
    money,
    batches,
    run: (j) => queueRunStore(store, j),
    closePlan,
    async total(n) {
      await q(`UPDATE ${SCHEMA}.cells SET total = $3 WHERE plan_id = $1 AND cell_id = $2`, [plan, cell, n]);
    },
    async jobEnded(job, chunkDone) {
      // A claim taken away (this worker declared lost) leaves the job to whoever has it now.
      const mine = await q<{ mine: number }>(
        `WITH d AS (UPDATE ${SCHEMA}.chunks SET done = true WHERE $4 AND plan_id = $2 AND cell_id = $3 AND chunk = $5),
              mine AS (DELETE FROM ${SCHEMA}.claims WHERE id = $1 RETURNING id)
         SELECT count(*)::int AS mine FROM mine`,
        [job.claim, plan, cell, chunkDone, job.chunk],
      );
      if (!mine.rows[0]?.mine) return false;
      await retry(() => db.boss.complete(job.queue, job.id)).catch(() => {});
      return true;
    },
    async fail(message) {
      // The failure and the jobs it cancels are read under the plan's lock, which `plan retry` takes too: a retry
      // made the moment the cell shows failed must not have its new jobs cancelled here (its cell would wait for good).
      const rows = await retry(() =>
        inTransaction(db, async (client) => {
          await client.query(`SELECT 1 FROM ${SCHEMA}.plans WHERE id = $1 FOR UPDATE`, [plan]);
          await client.query(
            `UPDATE ${SCHEMA}.cells SET status = 'failed', error = $3, finished_at = now()
             WHERE plan_id = $1 AND cell_id = $2 AND status NOT IN ('done', 'failed', 'cancelled')`,
            [plan, cell, message],
          );
          const { rows } = await client.query<{ job_id: string; queue: string }>(
            `SELECT k.job_id, c.queue FROM ${SCHEMA}.chunks k JOIN ${SCHEMA}.cells c USING (plan_id, cell_id)
             WHERE k.plan_id = $1 AND k.cell_id = $2 AND NOT k.done`,
            [plan, cell],
          );
          return rows;
        }),
      );
      const byQueue = new Map<string, string[]>();
      for (const r of rows) byQueue.set(r.queue, [...(byQueue.get(r.queue) ?? []), r.job_id]);
      for (const [queue, ids] of byQueue) await retry(() => db.boss.cancel(queue, ids)).catch(() => {});
      await closePlan();
    },
    async requeue(keys, round) {
      const settings = await q<{ retry_rounds: number; retry_delay_s: number; job_size: number }>(
        `SELECT retry_rounds, retry_delay_s, coalesce(job_size, $2)::int AS job_size FROM ${SCHEMA}.plans
         WHERE id = $1 AND status IN ('queued', 'running')`,
        [plan, DEFAULT_JOB_SIZE],
      );
      const p = settings.rows[0];
      if (!p || round > p.retry_rounds) return undefined;
      const delayS = p.retry_delay_s * 2 ** (round - 1);
      await retry(() =>
        inTransaction(db, async (client) => {
          // One chunk number per cell at a time: several workers may put back chunks of one cell at once.
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${plan}\n${cell}`]);
          const { rows } = await client.query<{ next: number; queue: string; in_flight: number }>(
            `SELECT (SELECT coalesce(max(chunk), -1) + 1 FROM ${SCHEMA}.chunks WHERE plan_id = $1 AND cell_id = $2)::int AS next,
               queue, in_flight FROM ${SCHEMA}.cells WHERE plan_id = $1 AND cell_id = $2`,
            [plan, cell],
          );
          const next = rows[0]?.next ?? 0;
          // Cut to the plan's job size: what a finishing cell puts back may be many jobs' worth, for every worker.
          const jobId = orderedJobIds();
          const jobs = jobsOf(keys, p.job_size, rows[0]?.in_flight ?? 1).map((part, i) => ({
            part,
            chunk: next + i,
            jobId: jobId(),
          }));
          for (const j of jobs)
            await client.query(
              `INSERT INTO ${SCHEMA}.chunks (plan_id, cell_id, chunk, keys, job_id, round) VALUES ($1, $2, $3, $4, $5, $6)`,
              [plan, cell, j.chunk, JSON.stringify(j.part), j.jobId, round],
            );
          await client.query(
            `UPDATE ${SCHEMA}.cells SET status = 'running', finisher = NULL
             WHERE plan_id = $1 AND cell_id = $2 AND status IN ('queued', 'running', 'finishing')`,
            [plan, cell],
          );
          const tx = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
          const startAfter = new Date(Date.now() + delayS * 1000);
          await db.boss.insert(
            jobs.map((j) => ({
              id: j.jobId,
              name: rows[0]?.queue as string,
              data: { plan, cell, chunk: j.chunk },
              startAfter,
              ...QUEUE_OPTIONS,
            })),
            { db: tx },
          );
        }),
      );
      return { rounds: p.retry_rounds, delayS };
    },
    async round() {
      const { rows } = await q<{ round: number }>(
        `SELECT coalesce(max(round), 0)::int AS round FROM ${SCHEMA}.chunks WHERE plan_id = $1 AND cell_id = $2
           AND chunk > (SELECT max(chunk) FROM ${SCHEMA}.chunks WHERE plan_id = $1 AND cell_id = $2 AND round = 0)`,
        [plan, cell],
      );
      return rows[0]?.round ?? 0;
    },
    async finishing(worker) {
      const { rows } = await q<FinishRow>(
        `UPDATE ${SCHEMA}.cells SET status = 'finishing', finisher = $3
         WHERE plan_id = $1 AND cell_id = $2 AND status IN ('queued', 'running')
           AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.chunks k WHERE k.plan_id = $1 AND k.cell_id = $2 AND NOT k.done)
         RETURNING spec, data_sha256, described, extract(epoch FROM now() - coalesce(started_at, now()))::float AS wall`,
        [plan, cell, worker],
      );
      return rows[0];
    },
    async handBack(worker, why) {
      const { rows } = await q<{ handed: boolean }>(
        `UPDATE ${SCHEMA}.cells SET status = 'running', finisher = NULL, error = $4
         WHERE plan_id = $1 AND cell_id = $2 AND finisher = $3 AND error IS NULL
           AND EXISTS (SELECT 1 FROM ${SCHEMA}.workers w WHERE w.status = 'running' AND w.id <> $3)
         RETURNING true AS handed`,
        [plan, cell, worker, cleanText(why, 4000)],
      );
      return rows[0]?.handed === true;
    },
    async unfinish(worker) {
      await q(
        `UPDATE ${SCHEMA}.cells SET status = 'running', finisher = NULL WHERE plan_id = $1 AND cell_id = $2 AND finisher = $3`,
        [plan, cell, worker],
      );
    },
    async batchIds() {
      const { rows } = await q<{ id: string; provider: string }>(
        `SELECT id, provider FROM ${SCHEMA}.batches WHERE plan_id = $1 AND cell_id = $2 ORDER BY submitted_at`,
        [plan, cell],
      );
      return rows;
    },
    async jobRow(keys) {
      const { rows } = await q<JobRow>(
        `SELECT c.spec, c.status, c.in_flight, c.data_sha256, c.described IS NULL AS undescribed, p.status AS plan_status,
           p.kind, ARRAY(SELECT a.key FROM ${SCHEMA}.answers a
             WHERE a.plan_id = $1 AND a.cell_id = $2 AND a.status = 'ok' AND a.key = ANY($3)) AS answered
         FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id WHERE c.plan_id = $1 AND c.cell_id = $2`,
        [plan, cell, keys],
      );
      return rows[0];
    },
    async started(described) {
      await q(
        `WITH c AS (UPDATE ${SCHEMA}.cells SET status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
           started_at = coalesce(started_at, now()), described = coalesce(described, $3)
         WHERE plan_id = $1 AND cell_id = $2)
         UPDATE ${SCHEMA}.plans SET status = 'running' WHERE id = $1 AND status = 'queued'`,
        [plan, cell, JSON.stringify(described)],
      );
    },
    async answers() {
      const { rows } = await q<{ key: string; entry: string }>(
        `SELECT key, entry FROM ${SCHEMA}.answers WHERE plan_id = $1 AND cell_id = $2`,
        [plan, cell],
      );
      return new Map(rows.map((r) => [r.key, r.entry]));
    },
    async done(dir, summary) {
      // One transaction, not a query of `q`: the whole of it is what waits out an outage.
      await retry(() =>
        inTransaction(db, async (client) => {
          for (const file of walk(dir))
            await client.query(
              `INSERT INTO ${SCHEMA}.files (plan_id, cell_id, path, content) VALUES ($1, $2, $3, $4)
             ON CONFLICT (plan_id, cell_id, path) DO UPDATE SET content = EXCLUDED.content`,
              [plan, cell, relative(dir, file), readFileSync(file)],
            );
          await client.query(
            `UPDATE ${SCHEMA}.cells SET status = 'done', summary = $3, error = NULL, finished_at = now() WHERE plan_id = $1 AND cell_id = $2`,
            [plan, cell, JSON.stringify(summary)],
          );
        }),
      );
    },
    async okKeys(keys) {
      const { rows } = await q<{ key: string }>(
        `SELECT key FROM ${SCHEMA}.answers WHERE plan_id = $1 AND cell_id = $2 AND status = 'ok' AND key = ANY($3)`,
        [plan, cell, keys],
      );
      return new Set(rows.map((r) => r.key));
    },
  };
  return store;
}

/** A folder's files, in order, to store them. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/**
 * A queued cell as the engine's loop keeps it (../engine/loop.ts `RunStore`): its answers and batches in its rows, its
 * money in its row for every worker at once, and what must fit its budget the whole cell's requests not answered yet
 * (another worker's job may be sending the rest), each at the ceiling counted once per worker.
 */
export function queueRunStore(store: CellStore, j: JobRun): RunStore {
  const { plan, cell, all } = j;
  return {
    answers: j.answers,
    batches: store.batches,
    money: store.money,
    async kept(keys) {
      const answers = await store.answers();
      return keys.map((k) => {
        const e = answers.get(k);
        return e === undefined ? undefined : (JSON.parse(e) as JournalEntry);
      });
    },
    async left(_pending, count) {
      j.ceilings.ceilings ??= count(all).then((e) => new Map(all.map((r, i) => [r.key, e.each[i] ?? 0])));
      const ceilings = await j.ceilings.ceilings;
      const ok = await store.okKeys(all.map((r) => r.key));
      const left = [...new Set(all.map((r) => r.key).filter((k) => !ok.has(k)))];
      const usd = left.reduce((n, k) => n + (ceilings.get(k) ?? 0), 0);
      return {
        ceilings,
        usd,
        said: `up to ${formatUsd(usd)} for the ${left.length} request(s) of ${cell} not answered yet (every reply at max_tokens ${j.maxTokens})`,
      };
    },
    scratch: j.scratch,
    ...(j.fence ? { fence: j.fence } : {}),
    ...(j.slot ? { slot: j.slot } : {}),
    words: {
      flag: 'max_cost',
      what: cell,
      spentBy: `the cell's workers have spent`,
      here: "this worker's",
      rest: "by the cell's other jobs and workers, as the queue counts",
      advice: `What was spent stays spent: raise max_cost (or lower max_tokens) in the plan and submit it again.`,
      stopped: async () =>
        `What was spent stays spent: raise max_cost in the plan and submit it again (plan ${plan})`,
    },
  };
}
