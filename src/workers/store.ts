/**
 * The queue's database: PostgreSQL, the leaderboard's engine. pg-boss (its own schema, `pgboss`) holds the jobs and
 * hands each to one worker (SKIP LOCKED); our schema, `rumedbench_runs`, holds what pg-boss does not: the plans and
 * their cells, which requests each job asks, every answer as it arrives, the workers' heartbeats and claims, the
 * finished cells' run folders, and the platform's allow-list of model servers. Secrets are never stored: a cell's
 * run spec names the environment variable of its key, and each worker reads its own.
 *
 * Our schema evolves by numbered migrations (MIGRATIONS), recorded in `schema_version`; every process checks the
 * version when it opens the queue, so that a worker of another release stops with one line instead of failing
 * mid-job. This module and the modules beside it that take a `QueueDb` are the only ones that write its SQL.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { RumedbenchError } from '../errors.js';
import { createLogger, type Logger, redactUrl } from '../log.js';
import { VERSION } from '../version.js';
import { withAdvice } from './db-advice.js';
import { DbWait, isServerFull } from './db-wait.js';

export const SCHEMA = 'rumedbench_runs';

/**
 * The migrations, in order; a database is at the highest version applied. Version 1 is the schema of release 0.1.0
 * (made with IF NOT EXISTS, so a database that release created, with no version table, is read as version 1).
 */
export const MIGRATIONS: readonly { version: number; what: string; sql: string }[] = [
  {
    version: 1,
    what: 'plans, cells (as command lines), jobs, answers, files, workers, claims, endpoints',
    sql: `
CREATE SCHEMA IF NOT EXISTS ${SCHEMA};
CREATE TABLE IF NOT EXISTS ${SCHEMA}.plans (
  id text PRIMARY KEY,
  name text NOT NULL,
  kind text NOT NULL DEFAULT 'plan',
  plan_file text NOT NULL,
  plan_sha256 text NOT NULL,
  status text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  error text,
  max_in_flight integer NOT NULL,
  meta text NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.cells (
  plan_id text NOT NULL REFERENCES ${SCHEMA}.plans(id) ON DELETE CASCADE,
  cell_id text NOT NULL,
  position integer NOT NULL,
  model text NOT NULL,
  provider text NOT NULL,
  axes text NOT NULL,
  settings text NOT NULL,
  argv text NOT NULL,
  endpoint text NOT NULL,
  queue text NOT NULL,
  in_flight integer NOT NULL,
  total integer NOT NULL,
  data_sha256 text NOT NULL,
  status text NOT NULL,
  started_at timestamptz,
  finished_at timestamptz,
  described text,
  summary text,
  error text,
  finisher text,
  PRIMARY KEY (plan_id, cell_id)
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.chunks (
  plan_id text NOT NULL,
  cell_id text NOT NULL,
  chunk integer NOT NULL,
  keys text NOT NULL,
  job_id uuid,
  done boolean NOT NULL DEFAULT false,
  PRIMARY KEY (plan_id, cell_id, chunk),
  FOREIGN KEY (plan_id, cell_id) REFERENCES ${SCHEMA}.cells(plan_id, cell_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.answers (
  plan_id text NOT NULL,
  cell_id text NOT NULL,
  key text NOT NULL,
  status text NOT NULL,
  entry text NOT NULL,
  worker text NOT NULL,
  asked integer NOT NULL DEFAULT 1,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (plan_id, cell_id, key),
  FOREIGN KEY (plan_id, cell_id) REFERENCES ${SCHEMA}.cells(plan_id, cell_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS answers_at ON ${SCHEMA}.answers (plan_id, cell_id, at);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.files (
  plan_id text NOT NULL,
  cell_id text NOT NULL,
  path text NOT NULL,
  content bytea NOT NULL,
  PRIMARY KEY (plan_id, cell_id, path),
  FOREIGN KEY (plan_id, cell_id) REFERENCES ${SCHEMA}.cells(plan_id, cell_id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.workers (
  id text PRIMARY KEY,
  name text NOT NULL,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_seen timestamptz NOT NULL DEFAULT now(),
  lapse_s real NOT NULL,
  status text NOT NULL
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.claims (
  id bigserial PRIMARY KEY,
  worker_id text NOT NULL,
  endpoint text NOT NULL,
  queue text NOT NULL,
  in_flight integer NOT NULL,
  job_id uuid,
  plan_id text,
  cell_id text,
  chunk integer,
  at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ${SCHEMA}.endpoints (
  name text PRIMARY KEY,
  provider text NOT NULL,
  base_url text,
  model text NOT NULL,
  api_key_env text,
  created_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 2,
    what: 'cells hold run specs (JSON), not command lines',
    sql: `
ALTER TABLE ${SCHEMA}.cells ADD COLUMN IF NOT EXISTS spec text;
ALTER TABLE ${SCHEMA}.cells ALTER COLUMN argv DROP NOT NULL;
`,
  },
  {
    version: 3,
    what: 'endpoints name the team that owns the model (platform entries are credited to it)',
    sql: `ALTER TABLE ${SCHEMA}.endpoints ADD COLUMN IF NOT EXISTS team text;`,
  },
  {
    version: 4,
    what: 'failed requests go back to the queue: plans set rounds and a first delay, chunks count their round',
    sql: `
ALTER TABLE ${SCHEMA}.plans ADD COLUMN IF NOT EXISTS retry_rounds integer NOT NULL DEFAULT 3;
ALTER TABLE ${SCHEMA}.plans ADD COLUMN IF NOT EXISTS retry_delay_s integer NOT NULL DEFAULT 60;
ALTER TABLE ${SCHEMA}.chunks ADD COLUMN IF NOT EXISTS round integer NOT NULL DEFAULT 0;
`,
  },
  {
    version: 5,
    what: "batch cells: each provider batch a worker submitted, recorded before it waits (a killed worker's successor collects it)",
    sql: `
CREATE TABLE IF NOT EXISTS ${SCHEMA}.batches (
  plan_id text NOT NULL,
  cell_id text NOT NULL,
  id text NOT NULL,
  provider text NOT NULL,
  keys text NOT NULL,
  input_file_id text,
  collected boolean NOT NULL DEFAULT false,
  status text,
  answered integer,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (plan_id, cell_id, id)
);
`,
  },
  {
    version: 6,
    what: 'endpoints record whether the admin allowed a private address (--allow-private); workers check at connection',
    sql: `ALTER TABLE ${SCHEMA}.endpoints ADD COLUMN IF NOT EXISTS allow_private boolean NOT NULL DEFAULT false;`,
  },
  {
    version: 7,
    what: 'batch intents: a batch about to be created, recorded before the creating call (an unanswered call is looked up at the provider, never repeated blindly)',
    sql: `
CREATE TABLE IF NOT EXISTS ${SCHEMA}.batch_intents (
  plan_id text NOT NULL,
  cell_id text NOT NULL,
  tag text NOT NULL,
  provider text NOT NULL,
  keys text NOT NULL,
  at text NOT NULL,
  outcome text,
  PRIMARY KEY (plan_id, cell_id, tag)
);
`,
  },
  {
    version: 8,
    what: "a lost worker's requests may still be running at the model server: its claims' share of the budget is held until they must have ended, or it comes back",
    sql: `
CREATE TABLE IF NOT EXISTS ${SCHEMA}.lingering (
  worker_id text NOT NULL,
  endpoint text NOT NULL,
  in_flight integer NOT NULL,
  until timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lingering_endpoint ON ${SCHEMA}.lingering (endpoint);
`,
  },
  {
    version: 9,
    what: 'plans record their job size: what plan retry and the retry rounds put back is cut into jobs of it, so every worker can take a share (a plan queued before has none: DEFAULT_JOB_SIZE)',
    sql: `ALTER TABLE ${SCHEMA}.plans ADD COLUMN IF NOT EXISTS job_size integer;`,
  },
  {
    version: 10,
    what: "cells keep their money: what the server's token counts say was spent, and what the requests in flight have reserved of max_cost, so that every worker of a cell spends from one budget",
    sql: `
ALTER TABLE ${SCHEMA}.cells ADD COLUMN IF NOT EXISTS spent_usd double precision NOT NULL DEFAULT 0;
ALTER TABLE ${SCHEMA}.cells ADD COLUMN IF NOT EXISTS reserved_usd double precision NOT NULL DEFAULT 0;
`,
  },
];

/** Requests per job when the plan does not say (`plan submit --job-size`, the platform's evaluations). */
export const DEFAULT_JOB_SIZE = 200;

/**
 * A cell's keys cut into jobs of at most `size`, in order; a batch cell (`inFlight` 0: no request slots, it uploads
 * its requests and waits) is one job whatever its size, since its requests go as few batches as the provider allows.
 */
export function jobsOf<T>(keys: readonly T[], size: number, inFlight: number): T[][] {
  if (inFlight === 0 || keys.length <= size) return [[...keys]];
  const out: T[][] = [];
  for (let i = 0; i < keys.length; i += size) out.push(keys.slice(i, i + size));
  return out;
}

/** The schema version this release reads and writes. */
export const QUEUE_SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/** The version a database is at: 0 when empty, 1 when release 0.1.0 made it (no version table). */
async function versionOf(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ versioned: boolean; legacy: boolean }>(
    `SELECT to_regclass('${SCHEMA}.schema_version') IS NOT NULL AS versioned,
            to_regclass('${SCHEMA}.cells') IS NOT NULL AS legacy`,
  );
  if (!rows[0]?.versioned) return rows[0]?.legacy ? 1 : 0;
  const v = await client.query<{ v: number | null }>(
    `SELECT max(version) AS v FROM ${SCHEMA}.schema_version`,
  );
  return v.rows[0]?.v ?? 0;
}

/**
 * Brings the database to this release's version, or refuses: a database of a newer release is never touched, and
 * with `migrate: false` (workers) only an empty one is made, so that a worker of another release than the database
 * stops before taking a job.
 */
async function migrate(client: pg.PoolClient, location: string, allowUpgrade: boolean): Promise<void> {
  const at = await versionOf(client);
  if (at === QUEUE_SCHEMA_VERSION) return;
  if (at > QUEUE_SCHEMA_VERSION)
    throw new RumedbenchError(
      'QUEUE_SCHEMA_MISMATCH',
      `the queue at ${location} is at schema version ${at}, newer than this rumedbench ${VERSION} knows (${QUEUE_SCHEMA_VERSION}): upgrade rumedbench on this machine`,
    );
  if (at > 0 && !allowUpgrade)
    throw new RumedbenchError(
      'QUEUE_SCHEMA_MISMATCH',
      `the queue at ${location} is at schema version ${at}, older than this rumedbench ${VERSION} needs (${QUEUE_SCHEMA_VERSION}): stop the older workers, then run \`rumedbench plan migrate --db …\` once`,
    );
  await client.query('BEGIN');
  try {
    for (const m of MIGRATIONS) if (m.version > at) await client.query(m.sql);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA}.schema_version (version integer PRIMARY KEY, what text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const m of MIGRATIONS)
      await client.query(
        `INSERT INTO ${SCHEMA}.schema_version (version, what) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING`,
        [m.version, m.what],
      );
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/** The pg-boss queue of an endpoint's jobs: workers fetch from the queues whose endpoint has room in its budget. */
export const queueNameOf = (endpoint: string, batch = false): string =>
  `rumedbench_${createHash('sha256').update(endpoint).digest('hex').slice(0, 16)}${batch ? '_batch' : ''}`;

export interface QueueDb {
  pool: pg.Pool;
  boss: PgBoss;
  /** The URL without its password. */
  location: string;
  /**
   * A database that came back empty (dropped and created again) under a running process: our schema and pg-boss's
   * made again, under the same advisory lock as at a start, so that workers and servers doing it at once make them
   * once. The schema version made, or undefined where there was nothing to do (another process made them first).
   */
  migrateIfEmpty(): Promise<number | undefined>;
  close(): Promise<void>;
}

export interface OpenQueueOptions {
  supervise?: boolean;
  migrate?: boolean;
  /**
   * How our connections name themselves to PostgreSQL (`application_name`, as `pg_stat_activity` shows it):
   * `PGAPPNAME` where set, else this (`rumedbench-worker`, `rumedbench-cli`, …), else `rumedbench`.
   */
  appName?: string;
  /** Where the wait for a server that is away or full is said. */
  log?: Logger;
  /** Seconds to wait for the first connection while the server is away or has no free slot (default 30). */
  connectWaitS?: number;
  /** The option that sets that bound, for the messages ('' when none does). */
  connectWaitFlag?: string;
}

/** How long a command waits for the database to let it in (restarting, or at max_connections) by default. */
export const CONNECT_WAIT_S = 30;

/**
 * Connects, checks and migrates our schema (under an advisory lock: many workers start at once), and starts
 * pg-boss (which migrates its own). `migrate: false` (workers) refuses a database of an older version. A server
 * restarting, or at max_connections, is waited for (`connectWaitS`), said once.
 */
export async function openQueue(url: string, o: OpenQueueOptions = {}): Promise<QueueDb> {
  if (!/^postgres(ql)?:\/\//i.test(url))
    throw new RumedbenchError(
      'DATABASE_FAILED',
      `--db: the queue lives in PostgreSQL; expected a postgres:// URL, got "${url.slice(0, 80)}"`,
    );
  const location = redactUrl(url);
  const application_name = process.env.PGAPPNAME || o.appName || 'rumedbench';
  const pool = new pg.Pool({
    connectionString: url,
    max: 8,
    connectionTimeoutMillis: 10_000,
    application_name,
  });
  pool.on('error', () => {});
  // A checked-out client whose server goes away between two queries emits 'error' with no listener of the pool's:
  // unheard, it would end the process with a stack. The next query on it fails, and is waited out, as any other.
  pool.on('connect', (client) => client.on('error', () => {}));
  const wait = new DbWait({
    waitS: o.connectWaitS ?? CONNECT_WAIT_S,
    log: o.log ?? createLogger('silent'),
    location,
    who: application_name,
    flag: o.connectWaitFlag ?? '',
    // A server at max_connections, or still starting, lets us in soon; one that refuses or is not there may be a
    // wrong --db: said at once.
    retryIf: (e) => isServerFull(e) || (e as { code?: unknown })?.code === '57P03',
  });
  /** Our schema brought to this release's under the advisory lock; whether it was empty before. */
  const migrateLocked = async (client: pg.PoolClient): Promise<boolean> => {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [SCHEMA]);
    try {
      const empty = (await versionOf(client)) === 0;
      await migrate(client, location, o.migrate ?? true);
      return empty;
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SCHEMA]);
    }
  };
  try {
    const client = await wait.retry(() => pool.connect());
    try {
      await migrateLocked(client);
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(() => {});
    if (e instanceof RumedbenchError) throw e;
    throw new RumedbenchError(
      'DATABASE_FAILED',
      withAdvice(`cannot open the queue's database at ${location}: ${(e as Error).message}`, e, location),
      { cause: e },
    );
  }
  // pg-boss's maintenance (expiring, archiving) runs where `supervise` is on: in workers, not in one-shot commands.
  // A pg-boss that failed to start cannot start again: each try makes a new one.
  let boss: PgBoss;
  try {
    boss = await wait.retry(async () => {
      const b = new PgBoss({
        connectionString: url,
        application_name,
        max: 4,
        supervise: o.supervise ?? false,
        schedule: false,
      });
      b.on('error', () => {});
      try {
        await b.start();
        return b;
      } catch (e) {
        await b.stop({ graceful: false, wait: true }).catch(() => {});
        throw e;
      }
    });
  } catch (e) {
    await pool.end().catch(() => {});
    throw new RumedbenchError(
      'DATABASE_FAILED',
      withAdvice(`cannot start the queue at ${location}: ${(e as Error).message}`, e, location),
      {
        cause: e,
      },
    );
  }
  return {
    pool,
    boss,
    location,
    async migrateIfEmpty() {
      const client = await pool.connect();
      let made: boolean;
      try {
        made = await migrateLocked(client);
      } finally {
        client.release();
      }
      // pg-boss makes its schema at a start where it is missing (its own advisory lock, a race tolerated): a
      // short-lived instance does it; the running one's queries find the tables again.
      const b = new PgBoss({
        connectionString: url,
        application_name,
        max: 1,
        supervise: false,
        schedule: false,
      });
      b.on('error', () => {});
      try {
        await b.start();
      } finally {
        await b.stop({ graceful: false, wait: true }).catch(() => {});
      }
      return made ? QUEUE_SCHEMA_VERSION : undefined;
    },
    async close() {
      await boss.stop({ graceful: false, wait: true }).catch(() => {});
      await pool.end().catch(() => {});
    },
  };
}

/** Runs `f` in a transaction on one connection: committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(db: QueueDb, f: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    const out = await f(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

/** Options every queue of ours is made with: a released job is taken at once, and may be released many times. */
export const QUEUE_OPTIONS = {
  retryLimit: 1000,
  retryDelay: 0,
  retryBackoff: false,
  // Most of a day (pg-boss allows 24 hours at most): a job is released by a lapsed heartbeat long before; this bounds one that nothing released.
  expireInSeconds: 23 * 3600,
} as const;

export async function ensureQueue(db: QueueDb, name: string): Promise<void> {
  const existing = await db.boss.getQueue(name);
  if (!existing) {
    try {
      await db.boss.createQueue(name, { name, policy: 'standard', ...QUEUE_OPTIONS });
    } catch (e) {
      // Another process made it first.
      if (!(await db.boss.getQueue(name))) throw e;
    }
  }
}

/**
 * Job ids that sort in the order they are made (UUID version 7: the time in milliseconds, then a counter, then 48
 * random bits). pg-boss hands out a queue's jobs by creation time, then by id, and a plan's jobs are all created in
 * one statement: with random ids the workers took them in random order across cells, so every cell finished at the
 * very end of a plan, all at once (#64's tail); in the plan's order a cell is finished while the next runs.
 */
export function orderedJobIds(): () => string {
  let ms = 0;
  let n = 0;
  return () => {
    const now = Date.now();
    if (now > ms) {
      ms = now;
      n = 0;
    } else if (++n >= 2 ** 26) {
      // 67 million ids in one millisecond: the next millisecond's, still after every earlier one.
      ms++;
      n = 0;
    }
    const hex = (x: number, digits: number) => x.toString(16).padStart(digits, '0');
    // The counter's 26 bits: 12 after the version digit, 14 after the variant's two bits.
    const rand = randomBytes(6).toString('hex');
    const t = hex(ms, 12);
    return `${t.slice(0, 8)}-${t.slice(8)}-7${hex(n >>> 14, 3)}-${hex(0x8000 | (n & 0x3fff), 4)}-${rand}`;
  };
}

/** A plan id: short, unguessable enough to share, and typed by hand. */
export const newPlanId = (): string => `p-${randomBytes(6).toString('hex')}`;
