/**
 * Opening the leaderboard's database: an SQLite file (better-sqlite3, the default) or PostgreSQL (`postgres://…`),
 * both behind one Kysely query layer; the migrations run before anything else.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { RumedbenchError } from '../../errors.js';
import { redactUrl } from '../../log.js';
import { withAdvice } from '../../workers/db-advice.js';
import { MIGRATIONS } from './migrations.js';
import type { Database } from './schema.js';

export type Engine = 'sqlite' | 'postgres';

export interface Db {
  db: Kysely<Database>;
  engine: Engine;
  /** The file, or the URL without its password. */
  location: string;
  close(): Promise<void>;
}

const isPostgresUrl = (target: string): boolean => /^postgres(ql)?:\/\//i.test(target);

/** Opens (creating an SQLite file where needed) and migrates to the latest schema. */
export async function openDatabase(target: string): Promise<Db> {
  let db: Kysely<Database>;
  let engine: Engine;
  let location: string;
  if (isPostgresUrl(target)) {
    engine = 'postgres';
    location = redactUrl(target);
    const pool = new pg.Pool({ connectionString: target, max: 10, connectionTimeoutMillis: 10_000 });
    // An idle connection cut by a restart or a failover is an 'error' event on the pool: without a listener it ends
    // the process. The pool drops that connection on its own and opens another for the next query; queries made
    // while the database is away fail, and the app answers them with 503 (app.tsx).
    pool.on('error', () => {});
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  } else {
    engine = 'sqlite';
    location = resolve(target);
    mkdirSync(dirname(location), { recursive: true });
    const sqlite = new SQLite(location);
    // WAL lets pages read while an upload is written. NORMAL syncs at checkpoints, not at each commit: an answered
    // upload survives a killed server process, not a power cut (docs/leaderboard.md: PostgreSQL for that).
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  }
  try {
    await sql`select 1`.execute(db);
  } catch (e) {
    await db.destroy();
    throw new RumedbenchError(
      'DATABASE_FAILED',
      engine === 'postgres'
        ? withAdvice(`cannot open the database ${location}: ${(e as Error).message}`, e, location)
        : `cannot open the database ${location}: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  try {
    await migrateBoard(db, location);
  } catch (e) {
    await db.destroy();
    throw e;
  }
  return { db, engine, location, close: () => db.destroy() };
}

/**
 * Brings the schema to the latest (Kysely's migrator takes a lock: servers doing it at once run each migration
 * once): at a start, and when a PostgreSQL database comes back empty under a running server. How many it ran.
 */
export async function migrateBoard(db: Kysely<Database>, location: string): Promise<number> {
  const { error, results } = await new Migrator({ db, provider: MIGRATIONS }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new RumedbenchError(
      'DATABASE_FAILED',
      withAdvice(`${location}: migration ${failed} failed: ${(error as Error).message}`, error, location),
      {
        cause: error,
      },
    );
  }
  return results?.filter((r) => r.status === 'Success').length ?? 0;
}
