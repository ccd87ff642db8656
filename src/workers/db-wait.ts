/**
 * Waiting out the database. A restart or a failover of PostgreSQL takes seconds; a worker or a board that dies with it
 * turns seconds into a page to a human. Every call to the queue goes through `DbWait.retry`: an error that means the
 * database went away (not that it refused what was sent) is retried with growing waits for up to `waitS` seconds,
 * said once on stderr when the outage starts and once when the database is back; past the bound it is thrown, as
 * `DATABASE_FAILED`, with one line. pg's pool drops a dead connection on its own and opens a new one on the next call.
 */
import { RumedbenchError } from '../errors.js';
import type { Logger } from '../log.js';
import { fullAdvice } from './db-advice.js';

/** The default bound of a wait: a restart is seconds, a failover a minute or two. */
export const DEFAULT_DB_WAIT_S = 300;
/** The longest wait between two tries: a database back is seen within about this long. */
export const MAX_DB_BACKOFF_MS = 2000;

/**
 * PostgreSQL's codes for a server going or gone (class 08 connection exception; 57P01-57P03 shut down, crashed,
 * cannot connect now), the system's codes for a dropped or refused socket, and node-postgres's own messages for a
 * connection that ended under a query.
 */
export function isConnectionError(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | undefined;
  const code = typeof err?.code === 'string' ? err.code : '';
  // 53300: every connection slot taken (max_connections, or a role's or database's limit): one frees soon.
  if (/^08/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return true;
  if (
    ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(
      code,
    )
  )
    return true;
  const message = typeof err?.message === 'string' ? err.message : '';
  return /Connection terminated|connection error|too many clients|too many connections|timeout exceeded when trying to connect|the database system is (shutting down|starting up|in recovery mode)|terminating connection due to administrator command|Client was closed|not queryable/i.test(
    message,
  );
}

/** Every connection slot of the server taken (SQLSTATE 53300), rather than the server gone. */
export const isServerFull = (e: unknown): boolean => {
  const err = e as { code?: unknown; message?: unknown } | undefined;
  return err?.code === '53300' || /too many (clients|connections)/i.test(String(err?.message ?? ''));
};

/**
 * How the database is away: `unreachable` (stopped, restarting, cut off), `full` (no free connection), `dropped`
 * (SQLSTATE 3D000: the server answers, the database is not there), `empty` (42P01, 3F000: it is there without our
 * tables: dropped and created again empty). Undefined for an error that is the query's own.
 */
export type Absence = 'unreachable' | 'full' | 'dropped' | 'empty';

export function absence(e: unknown): Absence | undefined {
  if (isServerFull(e)) return 'full';
  if (isConnectionError(e)) return 'unreachable';
  const code = (e as { code?: unknown } | undefined)?.code;
  if (code === '3D000') return 'dropped';
  if (code === '42P01' || code === '3F000') return 'empty';
  return undefined;
}

/** The database gone in any way `absence` names: waited out, answered 503, never a stack trace. */
export const isDatabaseAway = (e: unknown): boolean => absence(e) !== undefined;

/** "is unreachable", "does not exist (dropped?)", …: how a server's lines name an absence. */
export function awayInWords(kind: Absence): string {
  return {
    unreachable: 'is unreachable',
    full: 'has no free connection',
    dropped: 'does not exist (dropped?): restore it',
    empty:
      'has no rumedbench tables (dropped and created again empty?): serve migrates it within seconds; restore a backup instead to keep what it held',
  }[kind];
}

/** Thrown by `DbWait.retry` once `abandon()` was called (a stop): the caller stops instead of waiting on. */
export class DbWaitAbandoned extends Error {
  constructor(who: string) {
    super(`${who}: stopped while waiting for the database`);
  }
}

const GONE_FOR: Record<Absence, string> = {
  unreachable: 'has been unreachable',
  full: 'has had no free connection',
  dropped: 'has not existed',
  empty: 'has had no rumedbench tables',
};

export class DbWait {
  private downSince: number | undefined;
  private readonly waitMs: number;
  /** When the last outage ended (0: none yet). */
  backAt = 0;
  /** How the database was away in the last outage (undefined: none yet). */
  lastAbsence: Absence | undefined;
  /** The migration of a database that came back empty under way, shared by the calls that found it. */
  private migrating: Promise<boolean> | undefined;
  /** Set by abandon(): every wait ends at once, with it. */
  private abandoned: DbWaitAbandoned | undefined;
  /** Wakes the waits sleeping between two tries. */
  private readonly sleepers = new Set<() => void>();

  constructor(
    private readonly o: {
      /** Seconds an outage is waited out; 0 never waits. */
      waitS: number;
      log: Logger;
      /** The database, as messages name it (no password). */
      location: string;
      /** Who waits, for the messages ("worker gpu1-123", "serve"). */
      who: string;
      /** The option that sets the bound, as messages name it (default `--db-wait`; none for a fixed bound). */
      flag?: string;
      /** Which errors are waited out (default: isDatabaseAway). */
      retryIf?: (e: unknown) => boolean;
      /** What the operator does when the database is there without our tables (`empty`): who migrates it. */
      emptyAdvice?: string;
      /**
       * The database there without our tables (`empty`: dropped and created again): migrates it, and returns the
       * one line that says so, or undefined where another process did it first. The call is then tried again at
       * once. Without it, an empty database is waited out like a stopped one.
       */
      onEmpty?: () => Promise<string | undefined>;
    },
  ) {
    this.waitMs = o.waitS * 1000;
  }

  /** A stop: the waits under way, and any later, end at once (DbWaitAbandoned) instead of lasting up to the bound. */
  abandon(): void {
    this.abandoned ??= new DbWaitAbandoned(this.o.who);
    for (const wake of this.sleepers) wake();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  /** Whether an outage is going on (the board answers writes with 503 meanwhile). */
  get down(): boolean {
    return this.downSince !== undefined;
  }

  /** Runs `f`, retrying it while the database is away, for up to the bound counted from the outage's start. */
  async retry<T>(f: () => Promise<T>): Promise<T> {
    // Migrated once per call: a table missing after it is not an empty database (waited out, not migrated in a loop).
    let migrated = false;
    for (let attempt = 0; ; attempt++) {
      try {
        const out = await f();
        this.back();
        return out;
      } catch (e) {
        if (!(this.o.retryIf ?? isDatabaseAway)(e)) throw e;
        if (this.abandoned) throw this.abandoned;
        if (this.o.onEmpty && !migrated && absence(e) === 'empty') {
          migrated = await this.migrateEmpty();
          if (migrated) continue;
        }
        const since = this.noteDown(e);
        const waited = Date.now() - since;
        if (waited >= this.waitMs)
          throw new RumedbenchError(
            'DATABASE_FAILED',
            `${this.o.who}: the database at ${this.o.location} ${GONE_FOR[absence(e) ?? 'unreachable']} for ${Math.round(waited / 1000)} s, longer than ${this.bound()} (${(e as Error).message})${isServerFull(e) ? `; ${fullAdvice((e as Error).message)}` : ''}`,
            { cause: e },
          );
        const backoff = Math.min(MAX_DB_BACKOFF_MS, 250 * 2 ** Math.min(attempt, 5));
        await this.sleep(Math.min(this.waitMs - waited, backoff * (0.5 + Math.random() / 2)));
        if (this.abandoned) throw this.abandoned;
      }
    }
  }

  /** "--db-wait 300 s", or "300 s" where no option sets it. */
  private bound(): string {
    return this.o.flag === '' ? `${this.o.waitS} s` : `${this.o.flag ?? '--db-wait'} ${this.o.waitS} s`;
  }

  /** "300 s (--db-wait)", or "300 s". */
  private upTo(): string {
    return this.o.flag === '' ? `${this.o.waitS} s` : `${this.o.waitS} s (${this.o.flag ?? '--db-wait'})`;
  }

  /** Runs `onEmpty` (at most one at a time); whether the call should be tried again at once. */
  private async migrateEmpty(): Promise<boolean> {
    this.downSince ??= Date.now();
    this.lastAbsence = 'empty';
    this.migrating ??= (this.o.onEmpty as () => Promise<string | undefined>)()
      .then((line) => {
        if (line) this.o.log.warn(`${this.o.who}: the database at ${this.o.location} ${line}`);
        return true;
      })
      .catch((e: unknown) => {
        // Away again while migrating (dropped once more, restarted): waited out as any absence.
        if (isDatabaseAway(e)) return false;
        throw e;
      })
      .finally(() => {
        this.migrating = undefined;
      });
    return this.migrating;
  }

  private noteDown(e: unknown): number {
    const kind = absence(e) ?? 'unreachable';
    // A new kind of absence (dropped, then created again empty) is said too: the fix differs.
    if (this.downSince === undefined || kind !== this.lastAbsence) {
      this.downSince ??= Date.now();
      this.lastAbsence = kind;
      const message = (e as Error).message;
      this.o.log.warn(
        kind === 'full'
          ? `${this.o.who}: the database at ${this.o.location} has no free connection (${message}); waiting for one, up to ${this.upTo()}`
          : kind === 'dropped'
            ? `${this.o.who}: the database at ${this.o.location} does not exist (dropped?) (${message}); waiting for it to be restored, up to ${this.upTo()}`
            : kind === 'empty'
              ? `${this.o.who}: the database at ${this.o.location} has no rumedbench tables (dropped and created again empty?) (${message}); ${this.o.emptyAdvice ?? 'restore it'}; waiting, up to ${this.upTo()}`
              : `${this.o.who}: the database at ${this.o.location} is unreachable (${message}); waiting for it, up to ${this.upTo()}`,
      );
    }
    return this.downSince;
  }

  private back(): void {
    if (this.downSince === undefined) return;
    const s = (Date.now() - this.downSince) / 1000;
    this.downSince = undefined;
    this.backAt = Date.now();
    this.o.log.warn(`${this.o.who}: the database at ${this.o.location} is back after ${s.toFixed(1)} s`);
  }
}
