/**
 * `plan submit`: a checked plan's cells into the queue. Each cell's requests (their keys, in the run's order) are cut
 * into jobs of at most `jobSize`; the plan, its cells, which keys each job asks and the pg-boss jobs go in with one
 * transaction, so a plan is queued whole or not at all.
 */
import type { PoolClient } from 'pg';
import { planLlmSpec } from '../engine/llm.js';
import { specJson } from '../engine/spec.js';
import { UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Cell } from '../plans/cells.js';
import { loadPlan } from '../plans/file.js';
import {
  ensureQueue,
  inTransaction,
  jobsOf,
  newPlanId,
  orderedJobIds,
  QUEUE_OPTIONS,
  type QueueDb,
  queueNameOf,
  SCHEMA,
} from './store.js';

export interface QueuedCell {
  cell: Cell;
  /**
   * The cell's request keys, in the order the run asks them; null where the queueing machine cannot plan them (the
   * platform's closed tests: the workers hold the items): then the cell is one job, planned by its worker.
   */
  keys: readonly string[] | null;
  /** sha256 of each data file the cell reads: a worker with other data refuses the cell's jobs. */
  dataSha256: Record<string, string>;
}

export interface EnqueueInput {
  name: string;
  file: string;
  sha256: string;
  /** Requests in flight per endpoint across every worker. */
  maxInFlight: number;
  /** Rounds in which failed requests go back to the queue (3 when absent), and the first round's delay (60 s). */
  retryRounds?: number;
  retryDelayS?: number;
  cells: readonly QueuedCell[];
  jobSize: number;
  /** `plan`, or `evaluation` (queued by the platform; its cells may only ask the allow-listed servers). */
  kind?: 'plan' | 'evaluation';
  meta?: Record<string, unknown>;
  /** Held until approved (`releasePlan`): a team's request for an evaluation waits for the admin. */
  hold?: boolean;
}

export interface Enqueued {
  id: string;
  jobs: number;
  requests: number;
}

export async function enqueuePlan(db: QueueDb, input: EnqueueInput): Promise<Enqueued> {
  const id = newPlanId();
  // A batch cell (no request slots: it uploads its requests and waits) has a queue of its own per endpoint, whose
  // jobs are taken without a lease on the endpoint's in-flight budget.
  const queueNameOfCell = (c: QueuedCell['cell']) => queueNameOf(c.endpoint, c.inFlight === 0);
  const queues = [...new Set(input.cells.map((c) => queueNameOfCell(c.cell)))];
  for (const q of queues) await ensureQueue(db, q);
  let jobs = 0;
  const jobsOfCell = cutIntoJobs(input.cells, input.jobSize);
  await inTransaction(db, async (client) => {
    await client.query(
      `INSERT INTO ${SCHEMA}.plans (id, name, kind, plan_file, plan_sha256, status, max_in_flight, meta, retry_rounds, retry_delay_s, job_size)
       VALUES ($1, $2, $3, $4, $5, $8, $6, $7, $9, $10, $11)`,
      [
        id,
        input.name,
        input.kind ?? 'plan',
        input.file,
        input.sha256,
        input.maxInFlight,
        JSON.stringify(input.meta ?? {}),
        input.hold ? 'pending' : 'queued',
        input.retryRounds ?? 3,
        input.retryDelayS ?? 60,
        input.jobSize,
      ],
    );
    for (const [position, q] of input.cells.entries()) {
      const c = q.cell;
      const queue = queueNameOfCell(c);
      await client.query(
        `INSERT INTO ${SCHEMA}.cells (plan_id, cell_id, position, model, provider, axes, settings, spec, endpoint, queue, in_flight, total, data_sha256, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'queued')`,
        [
          id,
          c.id,
          position,
          c.model,
          c.provider,
          JSON.stringify(c.axes),
          JSON.stringify(c.settings),
          specJson(c.spec),
          c.endpoint,
          queue,
          Number.isFinite(c.inFlight) ? c.inFlight : 1,
          // Distinct requests: two identical items (RuMedNLI's test set has a pair) are one request, asked once.
          q.keys ? new Set(q.keys).size : 0,
          JSON.stringify(q.dataSha256),
        ],
      );
      for (const [chunk, { part, id: job }] of (jobsOfCell.get(q) ?? []).entries()) {
        await client.query(
          `INSERT INTO ${SCHEMA}.chunks (plan_id, cell_id, chunk, keys, job_id) VALUES ($1, $2, $3, $4, $5)`,
          [id, c.id, chunk, JSON.stringify(part), job],
        );
        jobs++;
      }
    }
    if (!input.hold) await insertJobs(db, client, id);
  });
  return { id, jobs, requests: input.cells.reduce((n, c) => n + (c.keys?.length ?? 0), 0) };
}

/**
 * Each cell's requests cut into jobs, with ids in the order the workers take them (pg-boss hands out a plan's jobs by
 * id): the largest cells first, then the plan's order, each cell's chunks in order. A cell is finished (scored,
 * written) while the next ones run, and the plan's last is among the smallest: its finishing is all that is left
 * after the last answer (#64). A cell whose requests the queueing machine could not plan (one job) counts as largest.
 */
export function cutIntoJobs(
  cells: readonly QueuedCell[],
  jobSize: number,
): Map<QueuedCell, { part: string[] | null; id: string }[]> {
  const jobId = orderedJobIds();
  const sizeOf = (q: QueuedCell) => q.keys?.length ?? Number.POSITIVE_INFINITY;
  const out = new Map<QueuedCell, { part: string[] | null; id: string }[]>();
  for (const q of [...cells].sort((a, b) => sizeOf(b) - sizeOf(a) || 0)) {
    const parts = q.keys ? jobsOf(q.keys, jobSize, q.cell.inFlight) : [null];
    out.set(
      q,
      parts.map((part) => ({ part, id: jobId() })),
    );
  }
  return out;
}

/** pg-boss writes a plan's jobs inside our transaction: they exist exactly when the plan is queued. */
async function insertJobs(db: QueueDb, client: PoolClient, id: string): Promise<void> {
  const { rows } = await client.query<{ job_id: string; queue: string; cell_id: string; chunk: number }>(
    `SELECT k.job_id, c.queue, k.cell_id, k.chunk FROM ${SCHEMA}.chunks k JOIN ${SCHEMA}.cells c USING (plan_id, cell_id)
     WHERE k.plan_id = $1 ORDER BY c.position, k.chunk`,
    [id],
  );
  const tx = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
  for (const queue of new Set(rows.map((r) => r.queue))) {
    const mine = rows
      .filter((r) => r.queue === queue)
      .map((r) => ({
        id: r.job_id,
        name: queue,
        data: { plan: id, cell: r.cell_id, chunk: r.chunk },
        ...QUEUE_OPTIONS,
      }));
    await db.boss.insert(mine, { db: tx });
  }
}

/** Queues a held plan (an approved request): its jobs go to the workers. False if it was not waiting. */
/** Refuses a plan held for approval: it is cancelled before a job of it was queued. */
export async function rejectPlan(db: QueueDb, id: string): Promise<boolean> {
  const r = await db.pool.query(
    `UPDATE ${SCHEMA}.plans SET status = 'cancelled' WHERE id = $1 AND status = 'pending' RETURNING id`,
    [id],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function releasePlan(db: QueueDb, id: string): Promise<boolean> {
  return inTransaction(db, async (client) => {
    const r = await client.query(
      `UPDATE ${SCHEMA}.plans SET status = 'queued' WHERE id = $1 AND status = 'pending' RETURNING id`,
      [id],
    );
    if (r.rowCount === 0) return false;
    await insertJobs(db, client, id);
    return true;
  });
}

/** A plan file's cells as the queue takes them. */
/** The rules of what workers run: LLM cells, each one run (no variants, no shards), with requests to ask. */
export async function queuedCells(file: string, log: Logger) {
  const { plan, cells, notes, warnings } = loadPlan(file);
  for (const w of warnings) log.warn(w);
  const refused: string[] = [];
  const queued: QueuedCell[] = [];
  for (const cell of cells) {
    const spec = cell.spec;
    if (spec.kind !== 'llm') {
      refused.push(`${cell.id}: encoder cells run with \`plan run\`, not on workers`);
      continue;
    }
    for (const [k, given] of [
      ['prompts', spec.prompts.length > 0],
      ['perturb', spec.perturb.length > 0],
      ['shard', spec.shard !== undefined],
    ] as const)
      if (given) refused.push(`${cell.id}: "${k}" is not run by workers; queue each variant as its own cell`);
    const planned = await planLlmSpec(spec, log);
    if (planned.requests.length === 0)
      refused.push(`${cell.id}: no requests (its tasks or splits have no items)`);
    queued.push({ cell, keys: planned.requests.map((j) => j.key), dataSha256: planned.dataFiles });
  }
  if (refused.length > 0) throw new UsageError(`${plan.file}: cannot be queued:\n  ${refused.join('\n  ')}`);
  return { plan, queued, notes };
}
