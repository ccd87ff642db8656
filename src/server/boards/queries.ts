/**
 * The boards' own queries (beside db/queries.ts, which holds the rest of the server's): whether another connection
 * changed the database since this one last looked.
 */
import { type Kysely, SqliteAdapter, sql } from 'kysely';
import type { Database } from '../db/schema.js';

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
