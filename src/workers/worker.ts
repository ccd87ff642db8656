/**
 * `rumedbench worker`: claims jobs from the queue and runs each through the engine's one loop (../engine/loop.ts
 * `sendRun`, the one `llm` runs) with the queue's store of its cell (./queue-store.ts: its answers, batches, money and
 * the rest of a cell's work, with their SQL), writing every answer to the database the moment it arrives. This module
 * keeps what is the worker's own: when to claim, beat and fence (their SQL in ./claims.ts).
 *
 * - A job is claimed from an endpoint's queue only while that endpoint has room in its in-flight budget, counted
 *   over the live claims of every worker on every machine (under an advisory lock per endpoint).
 * - Each worker beats every `heartbeatS`; a worker silent for three beats is lost: any worker then releases its
 *   claimed jobs to the queue, and whoever takes one over asks only what has no answer yet.
 * - `stop()` (SIGTERM) releases this worker's jobs at once, lets the requests in flight land for a moment
 *   (STOP_GRACE_MS), and returns: a hung request does not hold the process.
 * - A worker that learns it was declared lost (frozen with SIGSTOP, cut off) stops its jobs, says so in one line and
 *   registers again. It never sends a request while it might have been declared lost without knowing it: past two
 *   beats without a heartbeat that landed, it beats first (a lapse is three).
 * - Whoever completes a cell's last job finishes the cell: its answers become a run folder exactly as `llm` writes
 *   one (`finish`), stored in the database for `plan export`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { QueryResult, QueryResultRow } from 'pg';
import { cleanText } from '../data/clean-text.js';
import { type ConnectGuard, publicOnly, type Resolve } from '../data/public-address.js';
import { batchApiOf, type LlmRunPhases, llmRunPhases } from '../engine/llm.js';
import { sendRun } from '../engine/loop.js';
import { recordOf } from '../engine/providers/registry.js';
import { batchSettingsOf, type LlmSpec, makeRunSpec } from '../engine/spec.js';
import { RumedbenchError } from '../errors.js';
import { Journal, type JournalEntry } from '../llm/journal.js';
import type { Provider } from '../llm/provider.js';
import type { LlmRequest } from '../llm/requests.js';
import { pricesOf } from '../llm/run.js';
import { type Logger, silentLogger } from '../log.js';
import { AnswerWriter } from './answers.js';
import {
  type JobData,
  type QueueRow,
  releaseLost,
  type Taken,
  takeJobs,
  type WorkerRows,
  workerRows,
} from './claims.js';
import { DbWait, DbWaitAbandoned, DEFAULT_DB_WAIT_S, MAX_DB_BACKOFF_MS } from './db-wait.js';
import { checkAllowed } from './endpoints.js';
import { keysEnv, keysProblem } from './keys.js';
import { cellTempDir, localFault } from './local-disk.js';
import { type CellStore, cellStore, queueRunStore } from './queue-store.js';
import type { QueueDb } from './store.js';

/** A queued cell as this worker runs it: the engine's view of its spec (options, model, provider). */
export type CellRunner = LlmRunPhases;

export interface WorkerOptions {
  db: QueueDb;
  name?: string;
  /** Jobs at once (default 1). */
  jobs?: number;
  /** Requests in flight on this worker, across its jobs (default 8). */
  concurrency?: number;
  /** Seconds between heartbeats (default 5); a worker is lost after three missed. */
  heartbeatS?: number;
  /** Return once no plan has work left (instead of waiting for more). */
  exitWhenIdle?: boolean;
  /** Milliseconds between looks at the queue when there was nothing to take (default 500). */
  pollMs?: number;
  /** Builds a cell's runner from its spec (default: the engine's, with the spec's data folder). */
  prepare?(spec: LlmSpec): Promise<CellRunner>;
  /** This machine's data folder, in place of the specs'. */
  dataDir?: string;
  /** Seconds a database outage is waited out before the worker stops (default 300). */
  dbWaitS?: number;
  /**
   * May connect to model servers at private addresses (`--allow-private`): a plan's servers, and a platform
   * evaluation's when its endpoint was added with `--allow-private` too. Without it (the default) every connection
   * goes to a public address, checked as it is made.
   */
  allowPrivate?: boolean;
  /**
   * The environment variables whose values this worker sends as model servers' keys and headers (`--endpoint-keys`;
   * default none): a cell that reads another fails before any request.
   */
  endpointKeys?: readonly string[];
  /** Resolves model servers' host names at each connection (the system's resolver by default; tests inject one). */
  resolve?: Resolve;
  log: Logger;
}

/** How long the list of queues with work is used before it is read again (sooner once a queue gives no job). */
const QUEUES_TTL_MS = 2000;

interface Active {
  claim: string;
  queue: string;
  jobId: string;
  data: JobData;
  /** Its chunk's keys as stored (JSON; `null` for the cell's every request) and round, read with the claim. */
  keys: string | null;
  round: number;
  /** The requests its claim holds of a model server's budget (0 for a batch job or this machine's model). */
  holds: number;
  abort: AbortController;
  done: Promise<void>;
}

interface Prepared {
  runner: CellRunner;
  planned: Awaited<ReturnType<CellRunner['requests']>>;
  byKey: Map<string, LlmRequest>;
  provider?: Provider | undefined;
  /** Whether `provider` may connect to private addresses. */
  allowPrivate?: boolean;
  /** max_cost: each request's ceiling, USD, by key (counted once per worker). */
  ceilings?: Promise<Map<string, number>>;
}

export class Worker {
  readonly id: string;
  readonly name: string;
  private readonly db: QueueDb;
  private readonly jobs: number;
  private readonly concurrency: number;
  private readonly heartbeatS: number;
  private readonly gate: ReturnType<typeof pLimit>;
  private readonly active = new Map<string, Active>();
  private readonly cells = new Map<string, Promise<Prepared>>();
  /** The queues with work, as last read. */
  private queues: { at: number; rows: QueueRow[] } | undefined;
  /** This worker's answers not yet written, over all its jobs. */
  private readonly unwritten = new Set<Promise<void>>();
  /** Answers on their way to the database, in batches. */
  private readonly answers: AnswerWriter;
  private stopping = false;
  private beat?: NodeJS.Timeout;
  private beating: Promise<void> | undefined;
  /** When the last heartbeat that landed was sent (performance.now()): others may declare this worker lost a lapse later. */
  private beatSentAt = performance.now();
  /** Declared lost by another worker: its jobs are stopped, then it registers again. */
  private lost = false;
  /** After stop()'s grace: answers still arriving are not written (the database is closing). */
  private closed = false;
  /** The database stayed away longer than --db-wait: the worker stops, and says so once. */
  private gaveUp: RumedbenchError | undefined;
  /** Answers that arrived but were never written (the database gone for good, or after stop()'s grace). */
  dropped = 0;
  /** This worker's rows of the queue (./claims.ts), read and written through `q`. */
  private readonly rows: WorkerRows;
  /** Every call to the queue goes through it: a database outage is waited out, not a reason to exit. */
  private readonly dbw: DbWait;
  /** The calls of a stop (releasing its jobs, its last status): bounded by STOP_DB_WAIT_S whatever --db-wait says. */
  private readonly stopDbw: DbWait;
  /** Jobs a stop could not hand back (the database away): the lost-worker rule gives them back. */
  unreleased = 0;
  /** Cells this worker handed back because it could not finish them here (its temporary folder): left to others. */
  private readonly handedBack = new Set<string>();
  private wake?: () => void;
  /** Requests this worker asked, for its closing line. */
  answered = 0;
  /** Per job, milliseconds spent on the queue (claiming, reading its keys, recording it done), not on requests. */
  readonly queueMs: number[] = [];
  /**
   * Per request, milliseconds from being asked to going out: the wait for one of the worker's request slots and for
   * room among its unwritten answers (bench:workers reads the median from the closing line). The first 100,000 only:
   * a worker that runs for weeks keeps a bounded sample.
   */
  readonly slotWaitMs: number[] = [];
  /** Every connection this worker makes to a model server goes to a checked public address, unless allowed. */
  private readonly guard: ConnectGuard;
  private readonly privateGuard: ConnectGuard;
  /** The only environment its providers read keys and header values from. */
  private readonly keysEnv: NodeJS.ProcessEnv;

  constructor(private readonly o: WorkerOptions) {
    this.db = o.db;
    this.name = o.name ?? `${hostname()}-${process.pid}`;
    this.id = `${this.name}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    this.jobs = Math.max(1, o.jobs ?? 1);
    this.concurrency = Math.max(1, o.concurrency ?? 8);
    this.heartbeatS = o.heartbeatS ?? 5;
    this.gate = pLimit(this.concurrency);
    this.guard = publicOnly({
      ...(o.resolve ? { resolve: o.resolve } : {}),
      hint: `a worker connects only to public addresses: start it with --allow-private if the model server really is on this machine or its network (and, for the platform's evaluations, add its endpoint with --allow-private)`,
    });
    // With --allow-private, a private server is reached; a cloud's metadata or platform service never is.
    this.privateGuard = publicOnly({
      ...(o.resolve ? { resolve: o.resolve } : {}),
      allowPrivate: true,
    });
    this.keysEnv = keysEnv(o.endpointKeys ?? []);
    this.rows = workerRows((text, values) => this.q(text, values), this.id);
    // A batch of answers goes once half as many wait as the worker has request slots: at all of them no request
    // goes out until it lands, and the worker fell into lock-step (8 out, 8 back, one INSERT; #64's bench).
    this.answers = new AnswerWriter((text, values) => this.q(text, values), refusedData, {
      flushRows: Math.ceil(this.concurrency / 2),
    });
    this.dbw = new DbWait({
      waitS: o.dbWaitS ?? DEFAULT_DB_WAIT_S,
      log: o.log,
      location: o.db.location,
      who: `worker ${this.name}`,
      emptyAdvice: 'it is migrated once it answers',
      // Dropped and created again empty (#60 item 5): the queue made again here, as at a start, and said in one
      // line; the jobs under way belong to plans that are gone, and are dropped at the next beat (declaredLost).
      onEmpty: async () => {
        const version = await this.db.migrateIfEmpty();
        return version === undefined
          ? undefined
          : `came back empty (dropped and created again?): the queue was migrated (schema version ${version}); the plans it held are gone, and the ${this.active.size} job(s) this worker had of them are dropped`;
      },
    });
    this.stopDbw = new DbWait({
      waitS: Math.min(STOP_DB_WAIT_S, o.dbWaitS ?? DEFAULT_DB_WAIT_S),
      // The stop says in its own one line what it could not hand back.
      log: silentLogger,
      location: o.db.location,
      who: `worker ${this.name} (stopping)`,
      flag: '',
    });
  }

  /** A query of the queue, waiting out an outage of the database. */
  private q<R extends QueryResultRow = QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<QueryResult<R>> {
    return this.dbw.retry(() => this.db.pool.query<R>(text, values));
  }

  /** Runs until `stop()`, or (with `exitWhenIdle`) until no plan has work left. */
  async run(): Promise<void> {
    try {
      await this.rows.register(this.name, 3 * this.heartbeatS);
    } catch (e) {
      // Stopped while its registration waited for the database (a SIGTERM during an outage, just after the start): it
      // holds nothing yet, so it just ends; uncaught, this was an internal error (seen once in worker-faults.test.ts).
      if (e instanceof DbWaitAbandoned) return;
      throw e;
    }
    this.o.log.info(
      `worker ${this.name}: ${this.jobs} job(s) at once, ${this.concurrency} request(s) in flight, on ${this.db.location}`,
    );
    if (this.jobs > this.concurrency)
      this.o.log.warn(
        `worker ${this.name}: --jobs ${this.jobs} with --concurrency ${this.concurrency}: at most ${this.concurrency} job(s) at once on model servers, since each holds at least one of the worker's request slots (batch jobs hold none)`,
      );
    this.beatSentAt = performance.now();
    this.beat = setInterval(() => void this.beatNow(), this.heartbeatS * 1000);
    try {
      while (!this.stopping) {
        let soon = false;
        try {
          if (this.lost) {
            await this.rejoin();
            continue;
          }
          let took = false;
          if (this.active.size < this.jobs) took = await this.claim();
          if (took || this.lost) continue;
          await this.finishReady();
          if (this.o.exitWhenIdle && this.active.size === 0) {
            const left = await this.workLeft();
            if (left === 'none') break;
            // Only cells being finished by others: looked at again soon, to leave as soon as they are done.
            soon = left === 'finishing';
          }
        } catch (e) {
          if (!this.giveUp(e)) throw e;
          break;
        }
        await new Promise<void>((r) => {
          this.wake = r;
          setTimeout(r, soon ? Math.min(FINISHING_POLL_MS, this.o.pollMs ?? 500) : (this.o.pollMs ?? 500));
        });
      }
      // Stopped, the jobs are released: their requests in flight may land for a moment, not for a hung request's timeout.
      const drained = Promise.all([...this.active.values()].map((a) => a.done));
      if (this.stopping)
        await Promise.race([drained, new Promise((r) => setTimeout(r, STOP_GRACE_MS).unref())]);
      else await drained;
      this.closed = this.active.size > 0;
    } finally {
      clearInterval(this.beat);
      // A beat still on its way must not read the 'stopped' below as "declared lost" (heartbeat checks stopping).
      this.stopping = true;
      // Bounded: a stop during an outage leaves the registration to the lost-worker rule.
      await this.stopDbw
        .retry(() => workerRows((text, values) => this.db.pool.query(text, values), this.id).stopped())
        .catch(() => {});
      for (const p of this.cells.values()) await (await p.catch(() => undefined))?.provider?.close?.();
    }
    if (this.gaveUp)
      throw new RumedbenchError(
        'DATABASE_FAILED',
        `${this.gaveUp.message}; the worker stopped: ${this.dropped} answer(s) that arrived could not be written and are asked again by whoever takes their jobs; start it again once the database is back`,
        { cause: this.gaveUp },
      );
  }

  /**
   * The database stayed away past --db-wait (`e` says so): the worker stops its jobs and, once they settle, leaves
   * with one line (run() throws it). False for any other error.
   */
  private giveUp(e: unknown): boolean {
    // Stopped while it waited for the database: the stop says what it left.
    if (e instanceof DbWaitAbandoned) return true;
    if (!(e instanceof RumedbenchError && e.code === 'DATABASE_FAILED' && /longer than/.test(e.message)))
      return false;
    if (this.gaveUp) return true;
    this.gaveUp = e;
    this.stopping = true;
    for (const a of this.active.values()) a.abort.abort();
    this.wake?.();
    return true;
  }

  /**
   * SIGTERM: nothing more is taken or sent; this worker's jobs go back to the queue at once. The database is given
   * STOP_DB_WAIT_S, not --db-wait: a stop during an outage leaves what it could not hand back to the lost-worker
   * rule (its claims, its registration), as a kill would, and says so in one line. Never rejects.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.wake?.();
    for (const a of this.active.values()) a.abort.abort();
    const list = [...this.active.values()];
    // The loop and the jobs stop waiting for the database: only the release below does, and for a bounded time.
    this.dbw.abandon();
    try {
      const released = await this.release(list, `worker ${this.name} stopped`, this.stopDbw);
      if (released > 0) this.o.log.info(`worker ${this.name}: ${released} job(s) released to the queue`);
    } catch (e) {
      this.unreleased = list.length;
      this.o.log.warn(
        `worker ${this.name}: could not hand back its ${list.length} job(s) (${(e as Error).message.split('\n')[0]}); they go back to the queue once its heartbeat lapses (${3 * this.heartbeatS} s), as after a kill`,
      );
    }
  }

  private async release(list: readonly Active[], reason: string, dbw = this.dbw): Promise<number> {
    let n = 0;
    for (const a of list) {
      const gone = await dbw.retry(() =>
        workerRows((text, values) => this.db.pool.query(text, values), this.id).unclaim(a.claim),
      );
      if (!gone) continue;
      await dbw.retry(() => this.db.boss.fail(a.queue, a.jobId, { reason }));
      n++;
    }
    return n;
  }

  /** One beat at a time: during an outage a beat waits for the database, and callers share it. */
  private beatNow(): Promise<void> {
    this.beating ??= this.heartbeat()
      .catch((e: unknown) => {
        if (!this.giveUp(e)) this.o.log.warn(`heartbeat: ${(e as Error).message}`);
      })
      .finally(() => {
        this.beating = undefined;
      });
    return this.beating;
  }

  /**
   * Before a request goes out: past two beats since the last heartbeat that landed (others declare a worker lost
   * after three), beat first; a job stopped meanwhile (declared lost, SIGTERM, cancelled) sends nothing more.
   */
  private async fence(a?: Active): Promise<void> {
    if (performance.now() - this.beatSentAt > 2 * this.heartbeatS * 1000) await this.beatNow();
    // A retry's job is not known to the provider that retries it: this worker must still hold its jobs.
    if (a ? a.abort.signal.aborted : this.lost || this.stopping)
      throw new Error(`job stopped before its request went out`);
  }

  /** Another worker declared this one lost: its claims are gone and its jobs back in the queue. Stop them here. */
  private declaredLost(silentS: number): void {
    if (this.lost || this.stopping) return;
    this.lost = true;
    for (const a of this.active.values()) a.abort.abort();
    this.wake?.();
    const recreated =
      (this.dbw.lastAbsence === 'dropped' || this.dbw.lastAbsence === 'empty') &&
      Date.now() - this.dbw.backAt < 60_000;
    if (recreated)
      this.o.log.warn(
        `worker ${this.name}: the queue's database was ${this.dbw.lastAbsence === 'empty' ? 'created again' : 'dropped'} while this worker waited and no longer knows it: its ${this.active.size} job(s) of plans that are gone are dropped here, then it registers again`,
      );
    else
      this.o.log.warn(
        `worker ${this.name}: another worker declared this worker lost (no heartbeat for ${silentS.toFixed(0)} s: was the process stopped or cut off?); its ${this.active.size} job(s) went back to the queue for others: stopping them here without asking more, then registering again`,
      );
  }

  /** Back from being declared lost: once its stopped jobs have settled, the worker registers again and goes on. */
  private async rejoin(): Promise<void> {
    await Promise.all([...this.active.values()].map((a) => a.done));
    const sentAt = performance.now();
    // Its requests have landed or ended by now: what they held of the budgets is free again.
    await this.rows.rejoin(this.name, 3 * this.heartbeatS);
    this.beatSentAt = sentAt;
    this.lost = false;
  }

  private async heartbeat(): Promise<void> {
    if (this.stopping || this.lost) return;
    const sentAt = performance.now();
    if (!(await this.rows.beat())) {
      // Its own stop wrote 'stopped' while this beat was on its way: not lost.
      if (this.stopping) return;
      this.declaredLost((sentAt - this.beatSentAt) / 1000);
      return;
    }
    this.beatSentAt = sentAt;
    // Just after an outage every worker's last beat is old, and another worker may still be in a wait of its own
    // before it beats again: nobody is taken for lost until all have had time to.
    if (Date.now() - this.dbw.backAt < 3 * this.heartbeatS * 1000 + 2 * MAX_DB_BACKOFF_MS) return;
    // Lost workers' jobs back to the queue, and what they held of the budgets let go once it must have ended.
    await releaseLost(this.db, this.q.bind(this), (call) => this.dbw.retry(call), this.o.log);
    await this.dropCancelled();
  }

  /**
   * Cancelled plans: their jobs stop here at this beat. `plan cancel` deleted their claims (their share of the
   * endpoints' budgets is free at once) and cancelled their jobs: nothing is released, nothing more asked.
   */
  private async dropCancelled(): Promise<void> {
    const plans = [...new Set([...this.active.values()].map((a) => a.data.plan))];
    if (plans.length === 0) return;
    const ids = await this.rows.cancelled(plans);
    for (const a of this.active.values())
      if (ids.has(a.data.plan) && !a.abort.signal.aborted) {
        a.abort.abort();
        this.o.log.info(`${a.data.plan} ${a.data.cell} #${a.data.chunk}: plan cancelled, job dropped`);
      }
  }

  /**
   * Takes jobs from a queue whose endpoint has room, if any: as many as this worker has free job slots (one at a time
   * on this machine's model or a batch queue), in one transaction with their claims.
   */
  private async claim(): Promise<boolean> {
    const now = performance.now();
    if (!this.queues || now - this.queues.at > QUEUES_TTL_MS) {
      this.queues = { at: now, rows: await this.rows.queues() };
    }
    for (const q of [...this.queues.rows].sort(() => Math.random() - 0.5)) {
      const local = q.endpoint === 'this machine';
      if (local && [...this.active.values()].some((a) => a.queue === q.queue)) continue;
      const t0 = performance.now();
      // A batch cell's job uploads its requests and waits: it holds none of the endpoint's request slots. Jobs on
      // model servers share this worker's --concurrency: their claims together hold no more of the endpoints'
      // budgets than the worker can have in flight.
      const batch = q.queue.endsWith('_batch');
      let want = batch ? 0 : 1;
      if (!batch && !local) {
        want = this.concurrency - this.reserved();
        if (want < 1) continue;
      }
      const took = await this.take(q, want, batch || local ? 1 : this.jobs - this.active.size);
      if (took === 'lost') {
        this.declaredLost((performance.now() - this.beatSentAt) / 1000);
        return false;
      }
      if (took.length === 0) {
        // Empty, or its endpoint full: looked up again once no queue gives a job.
        this.queues.rows = this.queues.rows.filter((r) => r !== q);
        continue;
      }
      // The claim's time is shared by the jobs it took.
      const share = (performance.now() - t0) / took.length;
      for (const t of took) this.start(q, t, share);
      return true;
    }
    this.queues = undefined;
    return false;
  }

  /** The requests this worker's jobs on model servers hold of their endpoints' budgets. */
  private reserved(): number {
    let n = 0;
    for (const a of this.active.values()) n += a.holds;
    return n;
  }

  /** Starts a job this worker holds (its claim recorded). */
  private start(q: QueueRow, t: Taken, claimMs: number) {
    const queue = q.queue;
    const job = t.job;
    const abort = new AbortController();
    const a: Active = {
      claim: t.claim,
      queue,
      jobId: job.id,
      data: job.data,
      keys: t.keys,
      round: t.round,
      holds: q.endpoint === 'this machine' ? 0 : t.inFlight,
      abort,
      done: Promise.resolve(),
    };
    a.done = this.process(a, t.inFlight, claimMs)
      .catch(async (e: unknown) => {
        if (this.giveUp(e) || this.closed || a.abort.signal.aborted) return;
        this.o.log.error(
          `${job.data.plan} ${job.data.cell} #${job.data.chunk}: ${cleanText((e as Error).message, 2000)}`,
        );
        // Whatever else ended the job (the database refused what it wrote, this machine's disk, a bug): no retry
        // here fixes it, and a job left claimed by a live worker would hold its cell for good. The cell fails with
        // the reason (`plan retry` once fixed) and this worker goes on; failing that, the job goes back.
        const local = localFault(e);
        await this.failCell(job.data.plan, job.data.cell, local ? new Error(local) : e).catch(() =>
          this.release([a], `worker ${this.name}: ${(e as Error).message}`).catch(() => 0),
        );
        await this.release([a], `worker ${this.name}: job ended by an error`).catch(() => 0);
      })
      .finally(() => {
        this.active.delete(job.id);
        this.wake?.();
      });
    this.active.set(job.id, a);
  }

  /** Up to `slots` jobs of a queue with room on its endpoint (./claims.ts `takeJobs`), claimed by this worker. */
  private take(q: QueueRow, want: number, slots: number): Promise<Taken[] | 'lost'> {
    return this.dbw.retry(() => takeJobs(this.db, this.id, q, want, slots));
  }

  /** A cell's runner and its planned requests, checked against the data the plan was queued with. */
  private prepared(plan: string, cell: string, stored: string | null, dataSha: Record<string, string>) {
    const key = `${plan}\n${cell}`;
    let p = this.cells.get(key);
    if (!p) {
      p = (async () => {
        const spec = specOfRow(stored, `${plan}/${cell}`);
        const runner = this.o.prepare
          ? await this.o.prepare(spec)
          : llmRunPhases(spec, {
              log: this.o.log,
              ...(this.o.dataDir !== undefined ? { dataDir: this.o.dataDir } : {}),
            });
        const planned = await runner.requests();
        const differ = Object.entries(dataSha).filter(([f, sha]) => planned.dataFiles[f] !== sha);
        if (differ.length > 0)
          throw new RumedbenchError(
            'DATA_INVALID',
            `worker ${this.name}: its data differ from those the plan was queued with (${differ.map(([f]) => f).join(', ')}; data folder ${runner.options.dataDir}); give the worker the same files (--data)`,
          );
        return { runner, planned, byKey: new Map(planned.requests.map((j) => [j.key, j])) };
      })();
      this.cells.set(key, p);
      p.catch(() => this.cells.delete(key));
    }
    return p;
  }

  private async process(a: Active, inFlight: number, claimMs: number): Promise<void> {
    // Queue time: the claim, this job's reads before its requests, and its completion; the cell's planning aside.
    let t0 = performance.now();
    const { plan, cell, chunk } = a.data;
    // null: the cell's every request, planned here (the queueing machine could not: the platform's closed tests).
    const stored = JSON.parse(a.keys ?? 'null') as string[] | null;
    const store = this.cellOf(plan, cell);
    const row = await store.jobRow(stored ?? []);
    // `chunkDone`: the chunk is marked done in the same statement (whoever holds the job now finds it answered).
    const done = async (chunkDone = false) => {
      await store.jobEnded({ claim: a.claim, chunk, queue: a.queue, id: a.jobId }, chunkDone);
    };
    if (!row || row.plan_status === 'cancelled' || row.status === 'done' || row.status === 'failed')
      return done();
    let prepared: Prepared;
    let provider: Provider;
    const planning = performance.now();
    try {
      const spec = specOfRow(row.spec, `${plan}/${cell}`);
      // A private address needs both the worker's --allow-private and, for the platform's evaluations (whose
      // servers teams registered), the endpoint's.
      let allowPrivate = this.o.allowPrivate ?? false;
      if (row.kind === 'evaluation') {
        const endpoint = await checkAllowed(this.db, spec);
        allowPrivate = allowPrivate && endpoint.allow_private === true;
      }
      const refused = keysProblem(spec.provider, this.o.endpointKeys ?? []);
      if (refused) throw new RumedbenchError('ENDPOINT_KEY_REFUSED', refused);
      prepared = await this.prepared(
        plan,
        cell,
        row.spec,
        JSON.parse(row.data_sha256) as Record<string, string>,
      );
      // The endpoint's allowance may have changed since this cell's provider was opened: it is opened again.
      if (!recordOf(spec.provider).local && prepared.allowPrivate !== allowPrivate)
        prepared.provider = undefined;
      prepared.allowPrivate = allowPrivate;
      prepared.provider ??= await prepared.runner.provider({
        env: this.keysEnv,
        guard: allowPrivate ? this.privateGuard : this.guard,
      });
      provider = prepared.provider;
    } catch (e) {
      // This worker cannot run the cell as queued (its data, a key it lacks, a server not allowed): the cell fails
      // with the reason, for `plan status` to show; nothing is asked.
      await this.failCell(plan, cell, e);
      return done();
    }
    t0 += performance.now() - planning;
    const round = a.round;
    const keys = stored ?? prepared.planned.requests.map((j) => j.key);
    let answered = new Set(row.answered);
    if (stored === null) {
      await store.total(new Set(keys).size);
      answered = await store.okKeys(keys);
    }
    const pending = keys.filter((k) => !answered.has(k)).map((k) => prepared.byKey.get(k));
    if (pending.some((j) => j === undefined)) {
      await this.failCell(
        plan,
        cell,
        new Error(
          `worker ${this.name} plans other requests than the plan was queued with (another rumedbench version?)`,
        ),
      );
      return done();
    }
    // The cell and plan marked running, once: a running cell has its start and its model's description already.
    if (row.status === 'queued' || row.plan_status === 'queued' || row.undescribed)
      await store.started(provider.describe());
    const before = performance.now() - t0;
    this.o.log.info(`${plan} ${cell} #${chunk}: ${pending.length} of ${keys.length} request(s) to ask`);
    const batch = batchSettingsOf(prepared.runner.spec);
    // Each answer is written as it arrives (in the writer's next batch), without holding its request slot: the next
    // request goes out while the row is written. The job is done only once every write has landed. No request goes
    // out while as many of this worker's writes as request slots are pending, over all its jobs, so a worker killed
    // at any moment has at most `concurrency` requests in flight and as many answers unwritten: those, and only
    // those, are asked again.
    const writes = new Set<Promise<void>>();
    const room = async () => {
      while (this.unwritten.size >= this.concurrency) await Promise.race(this.unwritten);
    };
    if (!batch) {
      provider.limitInFlight?.(this.concurrency);
      // A retry passes the same fence as a first request: a worker woken from a freeze learns it was declared lost
      // before a timed-out request of a job no longer its own goes out again.
      provider.checkBeforeRetry?.(() => this.fence());
      // The server's breaker may still be open from an outage this process saw (a job failed "is down" seconds ago):
      // waited out, the job's first request tries the server. Failing at once would spend a retry round, or a
      // `plan retry` made once the cause was fixed, without a request sent.
      const cool = provider.breakerWaitMs?.() ?? 0;
      if (cool > 0) await sleep(cool, undefined, { signal: a.abort.signal }).catch(() => {});
    }
    const worker = this.name;
    let writeError: unknown;
    const write = (entry: JournalEntry) => {
      // A stopped job's failures are not answers (a request not sent, one cut off): whoever has the job asks them.
      if (a.abort.signal.aborted && entry.status !== 'ok') return;
      if (this.closed || this.gaveUp) {
        this.dropped++;
        return;
      }
      this.answered++;
      // Waited out through an outage: the answer is kept in memory until it is written, and since no request goes
      // out while as many writes as request slots are pending, sending pauses meanwhile.
      const w: Promise<void> = this.answers
        .write({ plan, cell, entry, worker })
        .then(
          () => {},
          (e: unknown) => {
            this.dropped++;
            if (!this.giveUp(e)) writeError ??= e;
          },
        )
        .finally(() => {
          writes.delete(w);
          this.unwritten.delete(w);
        });
      writes.add(w);
      this.unwritten.add(w);
    };
    // A batch's answers are written before it is marked collected: one that cannot be written fails the job, and the
    // batch is collected again by whoever takes it.
    const writeBatch = (entry: JournalEntry) => {
      this.answered++;
      return this.answers.write({ plan, cell, entry, worker });
    };
    // A batch job's files live in a folder of its own; its batches are recorded in the cell's rows the moment the
    // provider names them, so that whoever takes the job over collects them instead of sending them again.
    const scratch = batch ? mkdtempSync(join(tmpdir(), 'rumedbench-batch-job-')) : tmpdir();
    const run = queueRunStore(store, {
      plan,
      cell,
      all: prepared.planned.requests,
      ceilings: prepared,
      maxTokens: prepared.runner.options.params.maxTokens,
      answers: { append: batch ? writeBatch : write },
      scratch,
      ...(batch
        ? {}
        : {
            fence: () => this.fence(a),
            slot: <T>(send: () => Promise<T>) => {
              const asked = performance.now();
              return this.gate(async () => {
                await room();
                if (this.slotWaitMs.length < 100_000) this.slotWaitMs.push(performance.now() - asked);
                return send();
              });
            },
          }),
    });
    const { maxCost, params } = prepared.runner.options;
    // A batch cell pays the batch price, as `llm --batch` reckons it.
    const prices = pricesOf({ prices: prepared.runner.options.prices, batch });
    try {
      await sendRun({
        store: run,
        provider,
        all: prepared.planned.requests,
        pending: pending as LlmRequest[],
        params,
        concurrency: batch ? prepared.runner.options.concurrency : Math.min(inFlight, row.in_flight),
        ...(maxCost !== undefined ? { maxCost } : {}),
        ...(prices ? { prices } : {}),
        way: batch
          ? {
              kind: 'batch',
              api: batchApiOf(provider),
              pollS: batch.pollS,
              ...(batch.deadlineH !== undefined ? { deadlineH: batch.deadlineH } : {}),
            }
          : { kind: 'online' },
        signal: a.abort.signal,
        log: this.o.log,
      });
    } catch (e) {
      this.answers.flushNow();
      await Promise.all(writes);
      // Stopped (SIGTERM) or cancelled: the job was released or cancelled; what was answered stays (a batch goes to
      // whoever takes the job).
      if (a.abort.signal.aborted) return;
      const code = e instanceof RumedbenchError ? e.code : undefined;
      if (code === 'COST_LIMIT' && writeError !== undefined) return this.unwrittenAnswers(a, writeError);
      // The model server is down (the client's circuit breaker): what this job did not answer goes back to the queue,
      // for a later round, while the plan has rounds left.
      if (code === 'LLM_ENDPOINT_DOWN' && !batch) {
        // The provider's breaker stays open: the next job of this cell here starts with a fresh one.
        if (prepared.provider === provider) prepared.provider = undefined;
        const ok = await store.okKeys(keys);
        const left = keys.filter((k) => !ok.has(k));
        if (await this.requeue(plan, cell, left, round + 1, (e as Error).message.split('\n')[0] as string))
          return done(true);
      }
      // A server that refuses what no retry fixes (a key, a model name), a budget reached, or a server down past the
      // plan's rounds: the cell fails with its reason. A batch's other failures end the job (start()'s catch).
      if (batch && code !== 'COST_LIMIT') throw e;
      await this.failCell(plan, cell, e);
      return done(batch !== undefined);
    } finally {
      if (batch) rmSync(scratch, { recursive: true, force: true });
    }
    // The job's last answers need not wait for others to share their INSERT: the job is done once they land.
    this.answers.flushNow();
    await Promise.all(writes);
    if (writeError !== undefined) return this.unwrittenAnswers(a, writeError);
    // Stopped (SIGTERM) or cancelled: the job was released or cancelled; what was answered stays.
    if (a.abort.signal.aborted) return;
    t0 = performance.now();
    await done(true);
    this.queueMs.push(claimMs + before + (performance.now() - t0));
    await this.finish(plan, cell);
  }

  /** Answers that could not be written are not answers: the job goes back to the queue for them. */
  private async unwrittenAnswers(a: Active, e: unknown): Promise<void> {
    this.o.log.error(
      `${a.data.plan} ${a.data.cell} #${a.data.chunk}: answers not written: ${(e as Error).message}`,
    );
    await this.release([a], `worker ${this.name} could not write its answers`);
  }

  /** The queue's store of a cell: its cell work (answers, failure, rounds, finishing) goes through it. */
  private cellOf(plan: string, cell: string): CellStore {
    return cellStore(this.db, this.q.bind(this), plan, cell, (call) => this.dbw.retry(call));
  }

  /**
   * Puts requests of a cell back on the queue as a new chunk of round `round`, to be taken after the plan's delay
   * (doubled each round); false when the plan's rounds are spent.
   */
  private async requeue(
    plan: string,
    cell: string,
    keys: readonly string[],
    round: number,
    why: string,
  ): Promise<boolean> {
    if (keys.length === 0) return true;
    const back = await this.cellOf(plan, cell).requeue(keys, round);
    if (!back) return false;
    this.o.log.warn(
      `${plan} ${cell}: ${keys.length} request(s) go back to the queue, round ${round} of ${back.rounds}, in ${back.delayS} s (${why})`,
    );
    return true;
  }

  private async failCell(plan: string, cell: string, e: unknown): Promise<void> {
    // A model server's text may hold what PostgreSQL refuses (NUL, a lone surrogate): the cell must still fail.
    const message = cleanText(this.queueAdvice(plan, cell, e), 4000);
    this.o.log.error(`${plan} ${cell}: ${message}`);
    await this.cellOf(plan, cell).fail(message);
  }

  /** Cells whose every job is done but that nobody finished (their finisher lost): finished here. */
  private async finishReady(): Promise<void> {
    for (const r of await this.rows.unfinished(this.handedBack)) await this.finish(r.plan_id, r.cell_id);
  }

  /** Whether a plan has work left: none, only cells being finished, or more. */
  private workLeft(): Promise<'none' | 'finishing' | 'more'> {
    return this.rows.workLeft();
  }

  /** Finishes a cell whose jobs are all done, if no other worker is finishing it. */
  private async finish(plan: string, cell: string): Promise<void> {
    if (this.handedBack.has(`${plan}\n${cell}`)) return;
    const store = this.cellOf(plan, cell);
    const row = await store.finishing(this.id);
    if (!row) return;
    let dir: string | undefined;
    try {
      dir = cellTempDir();
      const prepared = await this.prepared(
        plan,
        cell,
        row.spec,
        JSON.parse(row.data_sha256) as Record<string, string>,
      );
      // The cell's journal, in the run's order: finishRun reads it as `llm` reads its own.
      const byKey = await store.answers();
      // Requests that failed for reasons that pass (the server away, busy or failing) go back to the queue for
      // another round, while the plan has rounds left; the cell is finished once they are answered.
      const transient = [
        ...new Set(
          prepared.planned.requests
            .map((j) => j.key)
            .filter((k) => {
              const entry = byKey.get(k);
              if (entry === undefined) return true;
              const e = JSON.parse(entry) as { status: string; error?: string };
              return e.status !== 'ok' && TRANSIENT.test(e.error ?? '');
            }),
        ),
      ];
      if (transient.length > 0) {
        const why = `${transient.length} failed: ${(JSON.parse(byKey.get(transient[0] as string) ?? '{}') as { error?: string }).error ?? 'not sent'}`;
        if (await this.requeue(plan, cell, transient, (await store.round()) + 1, why.slice(0, 300))) return;
      }
      const journalFile = join(dir, 'journal.jsonl');
      writeFileSync(
        journalFile,
        prepared.planned.requests
          .map((j) => byKey.get(j.key))
          .filter((e): e is string => e !== undefined)
          .map((e) => `${e}\n`)
          .join(''),
      );
      const journal = await Journal.open(journalFile);
      const batch = batchSettingsOf(prepared.runner.spec);
      const batches = batch ? await store.batchIds() : [];
      const result = await prepared.runner.finish({
        outDir: dir,
        requests: prepared.planned.requests,
        planned: prepared.planned,
        journal,
        journalFile,
        model: row.described ? (JSON.parse(row.described) as Record<string, unknown>) : {},
        sent: byKey.size,
        wallS: row.wall,
        extra: { plan_id: plan, cell: cell },
        // A batch cell's batches, for its summary (`llm.batch`) and its price at the batch discount.
        ...(batch
          ? {
              batch: {
                ids: batches.map((b) => b.id),
                discount: batch.discount,
                provider: batches[0]?.provider ?? prepared.runner.spec.provider.name,
              },
            }
          : {}),
      });
      const runDir = dir;
      await this.dbw.retry(() => store.done(runDir, result.summary));
      this.o.log.info(`${plan} ${cell}: done, ${scoresLine(result.evaluation)}`);
    } catch (e) {
      await this.finishFailed(plan, cell, e);
    } finally {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    }
    await store.closePlan();
  }

  /**
   * Finishing a cell failed after its requests were answered: it never stays `finishing` under a live worker. A
   * fault of this machine (its temporary folder or disk) hands the cell back once, named, for another worker to
   * finish, and this one leaves it alone; otherwise, or the second time, the cell fails with the reason and the
   * way out. Should even that fail (the database away for good), the cell is handed back.
   */
  private async finishFailed(plan: string, cell: string, e: unknown): Promise<void> {
    const local = localFault(e);
    const store = this.cellOf(plan, cell);
    try {
      if (local !== undefined) {
        if (await store.handBack(this.id, `worker ${this.name} could not finish it: ${local}`)) {
          this.handedBack.add(`${plan}\n${cell}`);
          this.o.log.error(
            `${plan} ${cell}: cannot finish it here (${local}); handed back to another worker`,
          );
          return;
        }
        await this.failCell(
          plan,
          cell,
          new Error(
            `${local}; once it is fixed, finish the cell: rumedbench plan retry ${plan} --cells ${cell}`,
          ),
        );
        return;
      }
      await this.failCell(plan, cell, e);
    } catch (again) {
      if (this.giveUp(again)) return;
      await store.unfinish(this.id).catch(() => {});
    }
  }

  /** What a failure says, with the advice of the queue (`plan retry`), not of a local run's journal. */
  private queueAdvice(plan: string, cell: string, e: unknown): string {
    const text = e instanceof Error ? e.message : String(e);
    const lines = text
      .split('\n')
      .filter((l) => !/--retry-errors|--resume|journal\.jsonl|Every answer so far/.test(l));
    const retryable =
      e instanceof RumedbenchError &&
      ['RUN_INCOMPLETE', 'LLM_ENDPOINT_DOWN', 'REPLIES_UNUSABLE'].includes(e.code);
    return retryable
      ? [
          ...lines,
          `Once the cause is fixed, ask the failed requests again: rumedbench plan retry ${plan} --cells ${cell}`,
        ].join('\n')
      : lines.join('\n');
  }
}

/** A finished cell's scores for its closing line: the overall where the cell has one, else each task's score. */
function scoresLine(e: {
  overall: number | null;
  tasks: Readonly<Record<string, { score: number }>>;
}): string {
  if (e.overall !== null) return `overall ${e.overall.toFixed(2)}`;
  const tasks = Object.entries(e.tasks).map(([t, r]) => `${t} ${r.score.toFixed(2)}`);
  return tasks.length > 0 ? tasks.join(', ') : 'no task scored';
}

/** Milliseconds between looks at the queue of an idle worker that waits only for others to finish their cells. */
const FINISHING_POLL_MS = 100;

/** How long a stopped worker lets the requests in flight of its released jobs land before it returns. */
const STOP_GRACE_MS = 2000;

/** Seconds a stop waits for the database (releasing its jobs, its last status): a stop ends within 5 s. */
export const STOP_DB_WAIT_S = 2;

/** Failures another round may answer: the server away, timing out, busy or failing (5xx, 429, 408). */
const TRANSIENT = /cannot reach|timed out|broke off|is down|HTTP (5\d\d|429|408)\b/;

/** A cell's spec as the queue holds it; a cell an older release queued as a command line is refused, saying so. */
function specOfRow(stored: string | null, where: string): LlmSpec {
  if (stored === null)
    throw new RumedbenchError(
      'RUN_SPEC_INVALID',
      `${where} was queued by an older rumedbench as a command line; this release runs specs: submit the plan again`,
    );
  let value: unknown;
  try {
    value = JSON.parse(stored);
  } catch {
    throw new RumedbenchError('RUN_SPEC_INVALID', `${where}: its stored spec is not JSON`);
  }
  const spec = makeRunSpec(value, where);
  if (spec.kind !== 'llm')
    throw new RumedbenchError('RUN_SPEC_INVALID', `${where}: workers run LLM specs, not ${spec.kind}`);
  return spec;
}

/** A PostgreSQL error about the data sent (SQLSTATE classes 22 data exception, 23 constraint, 54 limits). */
function refusedData(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}
