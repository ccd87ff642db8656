/**
 * `rumedbench worker`: claims jobs from the queue, opens the queue's store of each job's cell (./queue-store.ts: its
 * answers, batches, money and the rest of a cell's work, with their SQL) and calls the engine (../engine/queued.ts):
 * `runChunk` plans the cell once, checks its data and sends the chunk through the one loop `llm` runs (`sendRun`), and
 * whoever completes a cell's last job calls `finishCell`, which writes its run folder with `llm`'s writer and stores
 * it for `plan export`. This module keeps what is the worker's own: when to claim, beat, fence and release (their SQL
 * in ./claims.ts), its request slots, and writing every answer to the database the moment it arrives.
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
 * - A cell this worker cannot finish for a fault of its own disk is handed back, once, for another to finish.
 */
import { hostname } from 'node:os';
import pLimit from 'p-limit';
import type { QueryResult, QueryResultRow } from 'pg';
import { cleanText } from '../data/clean-text.js';
import type { Resolve } from '../data/public-address.js';
import type { LlmRunPhases } from '../engine/llm.js';
import { CellPlans, type ChunkAnswers, failQueuedCell, finishCell, runChunk } from '../engine/queued.js';
import type { LlmSpec } from '../engine/spec.js';
import { RumedbenchError } from '../errors.js';
import type { JournalEntry } from '../llm/journal.js';
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
import { providerAccess } from './endpoints.js';
import { cellTempDir, localFault } from './local-disk.js';
import { type CellStore, cellStore } from './queue-store.js';
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

export class Worker {
  readonly id: string;
  readonly name: string;
  private readonly db: QueueDb;
  private readonly jobs: number;
  private readonly concurrency: number;
  private readonly heartbeatS: number;
  private readonly gate: ReturnType<typeof pLimit>;
  private readonly active = new Map<string, Active>();
  /** The cells this worker runs, each planned once (../engine/queued.ts). */
  private readonly plans: CellPlans;
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
  /** No claim while it scores a cell, no scoring while a claim is under way (#64). */
  private readonly aside = new ClaimsAside(() => this.wake?.());
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
  /** How it opens a cell's provider: the keys it gives, the addresses it may reach (./endpoints.ts). */
  private readonly connect: ReturnType<typeof providerAccess>;

  constructor(private readonly o: WorkerOptions) {
    this.db = o.db;
    this.name = o.name ?? `${hostname()}-${process.pid}`;
    this.id = `${this.name}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    this.jobs = Math.max(1, o.jobs ?? 1);
    this.concurrency = Math.max(1, o.concurrency ?? 8);
    this.heartbeatS = o.heartbeatS ?? 5;
    this.gate = pLimit(this.concurrency);
    this.plans = new CellPlans({
      who: `worker ${this.name}`,
      log: o.log,
      ...(o.dataDir !== undefined ? { dataDir: o.dataDir } : {}),
      ...(o.prepare ? { prepare: o.prepare } : {}),
    });
    this.connect = providerAccess(o);
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
          if (this.active.size < this.jobs && this.aside.free)
            took = await this.aside.claim(() => this.claim());
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
      await this.plans.close();
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

  /**
   * One job: the engine runs its chunk (../engine/queued.ts `runChunk`) with the cell's store, this worker's request
   * slots, its fences and its answer writes; then the job's claim is ended and, once every request is asked, the cell
   * finished if this job was its last.
   */
  private async process(a: Active, inFlight: number, claimMs: number): Promise<void> {
    const { plan, cell, chunk } = a.data;
    const store = this.cellOf(plan, cell);
    const r = await runChunk({
      store,
      plans: this.plans,
      plan,
      cell,
      chunk,
      keys: JSON.parse(a.keys ?? 'null') as string[] | null,
      round: a.round,
      inFlight,
      concurrency: this.concurrency,
      connect: this.connect,
      answers: this.answersOf(a),
      fence: () => this.fence(a),
      retryFence: () => this.fence(),
      slot: (send) => this.slot(send),
      signal: a.abort.signal,
      who: `worker ${this.name}`,
      log: this.o.log,
    });
    if (r.end === 'stopped') return;
    if (r.end === 'unwritten') return this.unwrittenAnswers(a, r.error);
    const t0 = performance.now();
    await store.jobEnded({ claim: a.claim, chunk, queue: a.queue, id: a.jobId }, r.chunkDone);
    if (!r.answered) return;
    this.queueMs.push(claimMs + r.queueMs + (performance.now() - t0));
    await this.finishIfDone(plan, cell);
  }

  /**
   * One of this worker's request slots, shared by its jobs. No request goes out while as many of its writes as
   * request slots are pending, over all its jobs, so a worker killed at any moment has at most `concurrency` requests
   * in flight and as many answers unwritten: those, and only those, are asked again.
   */
  private slot<T>(send: () => Promise<T>): Promise<T> {
    const asked = performance.now();
    return this.gate(async () => {
      while (this.unwritten.size >= this.concurrency) await Promise.race(this.unwritten);
      if (this.slotWaitMs.length < 100_000) this.slotWaitMs.push(performance.now() - asked);
      return send();
    });
  }

  /**
   * A job's answers, each written as it arrives (in the writer's next batch) without holding its request slot: the
   * next request goes out while the row is written. The job is done only once every write has landed.
   */
  private answersOf(a: Active): ChunkAnswers {
    const { plan, cell } = a.data;
    const worker = this.name;
    const writes = new Set<Promise<void>>();
    let writeError: unknown;
    const online = (entry: JournalEntry) => {
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
    return {
      online: { append: online },
      // A batch's answers are written before it is marked collected: one that cannot be written fails the job, and
      // the batch is collected again by whoever takes it.
      batch: {
        append: (entry) => {
          this.answered++;
          return this.answers.write({ plan, cell, entry, worker });
        },
      },
      landed: async () => {
        // The job's last answers need not wait for others to share their INSERT: the job is done once they land.
        this.answers.flushNow();
        await Promise.all(writes);
        return writeError;
      },
    };
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

  private failCell(plan: string, cell: string, e: unknown): Promise<void> {
    return failQueuedCell(this.cellOf(plan, cell), plan, cell, e, this.o.log);
  }

  /** Cells whose every job is done but that nobody finished (their finisher lost): finished here. */
  private async finishReady(): Promise<void> {
    for (const r of await this.rows.unfinished(this.handedBack))
      await this.finishIfDone(r.plan_id, r.cell_id);
  }

  /** Whether a plan has work left: none, only cells being finished, or more. */
  private workLeft(): Promise<'none' | 'finishing' | 'more'> {
    return this.rows.workLeft();
  }

  /** Finishes a cell whose jobs are all done, if no other worker is finishing it (../engine/queued.ts `finishCell`). */
  private async finishIfDone(plan: string, cell: string): Promise<void> {
    if (this.handedBack.has(`${plan}\n${cell}`)) return;
    await finishCell({
      store: this.cellOf(plan, cell),
      plans: this.plans,
      plan,
      cell,
      finisher: this.id,
      tempDir: cellTempDir,
      failed: (e) => this.finishFailed(plan, cell, e),
      alone: () => this.aside.finishing(),
      log: this.o.log,
    });
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
}

/**
 * A claim's transaction holds its endpoint's lock over three round trips, and scoring a cell holds the process (300 ms
 * of CPU for 800 answers): a claim under way then kept every other worker's claims on that endpoint waiting as long.
 * So a worker claims nothing while it scores a cell, and starts scoring once its claim under way has ended.
 */
class ClaimsAside {
  private claiming: Promise<unknown> | undefined;
  private scoring = 0;
  /** `done`: once no cell is being scored, the worker may claim again (its loop is woken). */
  constructor(private readonly done: () => void) {}

  get free(): boolean {
    return this.scoring === 0;
  }

  async claim<T>(take: () => Promise<T>): Promise<T> {
    const p = take();
    this.claiming = p;
    try {
      return await p;
    } finally {
      this.claiming = undefined;
    }
  }

  /** Resolves once no claim is under way, to what ends the scoring. */
  async finishing(): Promise<() => void> {
    this.scoring++;
    await this.claiming?.catch(() => {});
    return () => {
      this.scoring--;
      this.done();
    };
  }
}

/** Milliseconds between looks at the queue of an idle worker that waits only for others to finish their cells. */
const FINISHING_POLL_MS = 100;

/** How long a stopped worker lets the requests in flight of its released jobs land before it returns. */
const STOP_GRACE_MS = 2000;

/** Seconds a stop waits for the database (releasing its jobs, its last status): a stop ends within 5 s. */
export const STOP_DB_WAIT_S = 2;

/** A PostgreSQL error about the data sent (SQLSTATE classes 22 data exception, 23 constraint, 54 limits). */
function refusedData(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}
