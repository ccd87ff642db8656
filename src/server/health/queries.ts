/** The probes' and metrics' reads: the board's database (kysely) and, on PostgreSQL, the queue's tables. */
import { type Kysely, sql } from 'kysely';
import type { QueueDb } from '../../workers/store.js';
import { SCHEMA } from '../../workers/store.js';
import type { Database } from '../db/schema.js';

export const ping = async (db: Kysely<Database>): Promise<void> => {
  await sql`SELECT 1`.execute(db);
};

export const appliedMigrations = async (db: Kysely<Database>): Promise<Set<string>> =>
  new Set(
    (await sql<{ name: string }>`SELECT name FROM kysely_migration`.execute(db)).rows.map((r) => r.name),
  );

export const submissionCounts = async (db: Kysely<Database>) =>
  (
    await sql<{ board: string; status: string; n: number }>`
      SELECT board, status, count(*) AS n FROM submissions GROUP BY board, status ORDER BY board, status`.execute(
      db,
    )
  ).rows;

/** The queue's figures: cells by state, jobs by pg-boss state, claimed requests per endpoint, workers' beats. */
export async function queueFigures(queue: QueueDb) {
  const q = async <R extends Record<string, unknown>>(text: string) => (await queue.pool.query<R>(text)).rows;
  return {
    cells: await q<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${SCHEMA}.cells GROUP BY status ORDER BY status`,
    ),
    jobs: await q<{ state: string; n: number }>(
      `SELECT state::text, count(*)::int AS n FROM pgboss.job WHERE name LIKE 'rumedbench\\_%' GROUP BY state ORDER BY state`,
    ),
    inFlight: await q<{ endpoint: string; n: number }>(
      `SELECT endpoint, sum(in_flight)::int AS n FROM ${SCHEMA}.claims GROUP BY endpoint ORDER BY endpoint`,
    ),
    workers: await q<{ name: string; status: string; age: number }>(
      `SELECT name, status, extract(epoch FROM now() - last_seen)::float AS age FROM ${SCHEMA}.workers
       WHERE status = 'running' OR last_seen > now() - interval '1 hour' ORDER BY name`,
    ),
  };
}
