/**
 * The boards' queries: a board's scored rows (all, or some by id), what its ranking needs of them, the per-item counts
 * kept per entry and the replicate rows kept per task (db/shared.ts has what other concerns read too).
 */

import { type Kysely, SqliteAdapter, sql } from 'kysely';
import type { BoardName, Database, ListedRow } from '../db/schema.js';
import { inChunks, LISTED, type Q } from '../db/shared.js';

// The submission rows other concerns read too.
export { getSubmission, getSubmissionFiles } from '../db/shared.js';

/** Scored submissions of a board (what its page shows): visible ones, or all for the admin. */
export async function listBoard(
  db: Q,
  board: BoardName,
  options: { includeHidden?: boolean } = {},
): Promise<ListedRow[]> {
  let q = db
    .selectFrom('submissions')
    .select(LISTED)
    .where('board', '=', board)
    .where('status', '=', 'scored');
  if (!options.includeHidden) q = q.where('hidden', '=', 0);
  return q.orderBy('created_at', 'desc').execute();
}

/** Some rows of a board, if they are visible and scored (the rows of new uploads). */
export async function listBoardRows(db: Q, board: BoardName, ids: readonly string[]): Promise<ListedRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('submissions')
    .select(LISTED)
    .where('board', '=', board)
    .where('status', '=', 'scored')
    .where('hidden', '=', 0)
    .where('id', 'in', ids)
    .execute();
}

/** The per-item counts of some entries (null: not kept yet). */
export async function itemStatsOf(
  db: Q,
  ids: readonly string[],
): Promise<{ id: string; item_stats: string | null }[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('submissions').select(['id', 'item_stats']).where('id', 'in', ids).execute();
}

/** Keeps an entry's per-item counts (filled in for entries scored before they were kept). */
export async function setItemStats(db: Q, id: string, itemStats: string): Promise<void> {
  await db.updateTable('submissions').set({ item_stats: itemStats }).where('id', '=', id).execute();
}

/** The kept replicate rows of one task of some entries. */
export async function replicateRowsOf(
  db: Q,
  task: string,
  ids: readonly string[],
): Promise<{ submission_id: string; key: string; data: string }[]> {
  const chunks = await inChunks(ids, 500, (chunk) =>
    db
      .selectFrom('replicate_rows')
      .select(['submission_id', 'key', 'data'])
      .where('task', '=', task)
      .where('submission_id', 'in', chunk)
      .execute(),
  );
  return chunks.flat();
}

/** Keeps replicate rows, replacing an entry's earlier row of the same task. */
export async function saveReplicateRows(
  db: Q,
  rows: readonly { submission_id: string; task: string; key: string; data: string }[],
): Promise<void> {
  await inChunks(rows, 100, (chunk) =>
    db
      .insertInto('replicate_rows')
      .values(chunk)
      .onConflict((oc) =>
        oc.columns(['submission_id', 'task']).doUpdateSet((eb) => ({
          key: eb.ref('excluded.key'),
          data: eb.ref('excluded.data'),
        })),
      )
      .execute(),
  );
}

/** Drops one task's replicate rows of entries no longer ranked (deleted, hidden, rejected). */
export async function dropReplicateRows(db: Q, task: string, ids: readonly string[]): Promise<void> {
  await inChunks(ids, 200, (chunk) =>
    db.deleteFrom('replicate_rows').where('task', '=', task).where('submission_id', 'in', chunk).execute(),
  );
}

/**
 * A number that moves whenever another connection (another process) commits to the database, and only then: SQLite's
 * `PRAGMA data_version` (https://sqlite.org/pragma.html#pragma_data_version; this connection's own commits leave it
 * as it is). Null on PostgreSQL, which has no such counter: there a board is read again whenever its cache expires.
 */
export async function dataVersion(db: Kysely<Database>): Promise<number | null> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return null;
  const { rows } = await sql<{ data_version: number }>`pragma data_version`.execute(db);
  return rows[0]?.data_version ?? null;
}
