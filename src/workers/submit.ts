/**
 * `plan submit`: a checked plan's cells into the queue. Each cell's requests (their keys, in the run's order) are cut
 * into jobs of at most `jobSize`; the plan, its cells, which keys each job asks and the pg-boss jobs go in with one
 * transaction, so a plan is queued whole or not at all.
 */
import { randomUUID } from 'node:crypto';
import type { Cell } from '../plans/cells.js';
import { ensureQueue, newPlanId, QUEUE_OPTIONS, type QueueDb, queueOf, SCHEMA } from './store.js';

export interface QueuedCell {
  cell: Cell;
  /** The cell's request keys, in the order the run asks them. */
  keys: readonly string[];
  /** sha256 of each data file the cell reads: a worker with other data refuses the cell's jobs. */
  dataSha256: Record<string, string>;
}

export interface EnqueueInput {
  name: string;
  file: string;
  sha256: string;
  /** Requests in flight per endpoint across every worker. */
  maxInFlight: number;
  cells: readonly QueuedCell[];
  jobSize: number;
  /** `plan`, or `evaluation` (queued by the platform; its cells may only ask the allow-listed servers). */
  kind?: 'plan' | 'evaluation';
  meta?: Record<string, unknown>;
}

export interface Enqueued {
  id: string;
  jobs: number;
  requests: number;
}

export async function enqueuePlan(db: QueueDb, input: EnqueueInput): Promise<Enqueued> {
  const id = newPlanId();
  const queues = [...new Set(input.cells.map((c) => queueOf(c.cell.endpoint)))];
  for (const q of queues) await ensureQueue(db, q);
  const client = await db.pool.connect();
  let jobs = 0;
  try {
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO ${SCHEMA}.plans (id, name, kind, plan_file, plan_sha256, status, max_in_flight, meta) VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7)`,
      [
        id,
        input.name,
        input.kind ?? 'plan',
        input.file,
        input.sha256,
        input.maxInFlight,
        JSON.stringify(input.meta ?? {}),
      ],
    );
    const inserts: { id: string; name: string; data: object }[] = [];
    for (const [position, q] of input.cells.entries()) {
      const c = q.cell;
      const queue = queueOf(c.endpoint);
      await client.query(
        `INSERT INTO ${SCHEMA}.cells (plan_id, cell_id, position, model, provider, axes, settings, argv, endpoint, queue, in_flight, total, data_sha256, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'queued')`,
        [
          id,
          c.id,
          position,
          c.model,
          c.provider,
          JSON.stringify(c.axes),
          JSON.stringify(c.settings),
          JSON.stringify(c.argv),
          c.endpoint,
          queue,
          Number.isFinite(c.inFlight) ? c.inFlight : 1,
          q.keys.length,
          JSON.stringify(q.dataSha256),
        ],
      );
      for (let from = 0, chunk = 0; from < q.keys.length; from += input.jobSize, chunk++) {
        const jobId = randomUUID();
        await client.query(
          `INSERT INTO ${SCHEMA}.chunks (plan_id, cell_id, chunk, keys, job_id) VALUES ($1, $2, $3, $4, $5)`,
          [id, c.id, chunk, JSON.stringify(q.keys.slice(from, from + input.jobSize)), jobId],
        );
        inserts.push({ id: jobId, name: queue, data: { plan: id, cell: c.id, chunk } });
      }
    }
    // pg-boss writes the jobs inside our transaction: they exist exactly when the plan does.
    const tx = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
    for (const q of queues) {
      const mine = inserts.filter((j) => j.name === q).map((j) => ({ ...j, ...QUEUE_OPTIONS }));
      if (mine.length > 0) await db.boss.insert(mine, { db: tx });
    }
    jobs = inserts.length;
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
  return { id, jobs, requests: input.cells.reduce((n, c) => n + c.keys.length, 0) };
}
