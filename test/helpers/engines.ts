/**
 * The database engines a server test suite runs on: SQLite always; PostgreSQL when RUMEDBENCH_TEST_PG_URL names a
 * server (`.ci/run` starts a throwaway one; so does `source .ci/postgres.sh`). With the URL set, an unreachable
 * server fails the suite; without it, the PostgreSQL suite is skipped and says so.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { migrations } from '../../src/server/db/migrations.js';

export type EngineName = 'sqlite' | 'postgres';
export const PG_URL = process.env.RUMEDBENCH_TEST_PG_URL || undefined;
export const ENGINES: EngineName[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
export const NO_PG_REASON =
  'PostgreSQL suite skipped: set RUMEDBENCH_TEST_PG_URL=postgres://… (`source .ci/postgres.sh` starts a throwaway server; `bash .ci/run` does it all)';
if (!PG_URL) console.warn(`[rumedbench tests] ${NO_PG_REASON}`);

/** A new, empty database: an SQLite file in a temporary folder, or a new PostgreSQL database on the test server. */
export async function freshDatabase(engine: EngineName): Promise<string> {
  if (engine === 'sqlite') return join(mkdtempSync(join(tmpdir(), 'rumedbench-db-')), 'board.sqlite');
  const name = `rmb_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_URL as string);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh database migrated as an older release left it: every migration named before `before`. Answers its URL
 * or path (for the server to open, which runs the rest) and a Kysely handle to fill it with old rows (destroy it first).
 */
export async function databaseBefore(
  engine: EngineName,
  before: string,
): Promise<{ target: string; db: Kysely<Record<string, Record<string, unknown>>> }> {
  const target = await freshDatabase(engine);
  const db = new Kysely<Record<string, Record<string, unknown>>>({
    dialect:
      engine === 'postgres'
        ? new PostgresDialect({ pool: new pg.Pool({ connectionString: target, max: 1 }) })
        : new SqliteDialect({ database: new SQLite(target) }),
  });
  const old = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < before));
  const r = await new Migrator({ db, provider: { getMigrations: async () => old } }).migrateToLatest();
  if (r.error) throw r.error;
  return { target, db };
}
