/**
 * A queued cell, run by the engine. A worker claims a job, opens the queue's store of the job's cell
 * (../workers/queue-store.ts, which holds the SQL) and calls `runChunk`: the cell's requests planned once per worker
 * (`CellPlans`) and checked against the data the plan was queued with, the chunk's unanswered requests sent through
 * the one loop (./loop.ts `sendRun`, the budget included) into the store, a server down past its breaker put back on
 * the queue for a later round. Whoever ends a cell's last job calls `finishCell`: the store's answers become a run
 * folder through `finishRun` (../llm/run.ts), the writer `runLlm` finishes a run folder with, so that the summary,
 * its cost parts and its redaction are written by one writer. The worker keeps what is its own: claims, beats,
 * fences, its request slots and answer writes, releasing and stopping.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanText } from '../data/clean-text.js';
import { RumedbenchError } from '../errors.js';
import type { BatchLedger } from '../llm/batch.js';
import type { MoneyStore } from '../llm/budget.js';
import type { AnswerSink } from '../llm/execute.js';
import { Journal } from '../llm/journal.js';
import type { Provider } from '../llm/provider.js';
import type { LlmRequest } from '../llm/requests.js';
import { pricesOf } from '../llm/run.js';
import type { Logger } from '../log.js';
import { batchApiOf, type LlmRunPhases, llmRunPhases } from './llm.js';
import { type RunStore, sendRun } from './loop.js';
import type { OpenProviderOptions } from './provider.js';
import { recordOf } from './providers/registry.js';
import { batchSettingsOf, type LlmSpec, makeRunSpec } from './spec.js';

/** A queued cell's row as a job reads it before its requests. */
export interface JobRow {
  spec: string | null;
  status: string;
  in_flight: number;
  data_sha256: string;
  undescribed: boolean;
  plan_status: string;
  kind: string;
  /** The job's keys that already have an answer that is ok (a job released, lost or stopped before). */
  answered: string[];
}

/** A queued cell's row as its finisher takes it. */
export interface FinishRow {
  spec: string | null;
  data_sha256: string;
  described: string | null;
  wall: number;
}

/** What a queued cell's job gives the engine's loop beside the cell's rows. */
export interface JobRun {
  plan: string;
  cell: string;
  /** Every request of the cell, in its order. */
  all: readonly LlmRequest[];
  /** The ceilings of the cell's requests, counted once per worker and cell (the holder keeps them). */
  ceilings: { ceilings?: Promise<Map<string, number>> };
  maxTokens: number;
  /** Where the job's answers go: the worker's writer. */
  answers: AnswerSink;
  scratch: string;
  /** The job's claim, checked before each request (../workers/worker.ts `fence`). */
  fence?(): Promise<void>;
  /** The worker's request slot, shared by its jobs. */
  slot?<T>(send: () => Promise<T>): Promise<T>;
}

/**
 * A queued cell as the engine needs it, whoever keeps it: its answers, money, batches, rounds and end. The queue's
 * store (../workers/queue-store.ts `cellStore`) keeps it in the cell's rows, for every worker of the cell at once.
 */
export interface QueuedCellStore {
  /** The cell's money: spent and reserved by every worker of the cell. */
  money: MoneyStore;
  /** The cell's batches, recorded the moment the provider names them. */
  batches: BatchLedger;
  /** The keys among `keys` that have an answer that is ok. */
  okKeys(keys: readonly string[]): Promise<Set<string>>;
  /**
   * What a job needs to start, in one read: its cell and plan, and which of its keys already have an answer that is
   * ok (a job released, lost or stopped before answered them: they are not asked again).
   */
  jobRow(keys: readonly string[]): Promise<JobRow | undefined>;
  /** The cell and its plan marked running, once, with the model's description. */
  started(described: unknown): Promise<void>;
  /** The cell's journal: every answer's entry (JSON) by its key. */
  answers(): Promise<Map<string, string>>;
  /** The cell done: its run folder's files (finished in `dir`) stored for `plan export`, its summary kept. */
  done(dir: string, summary: unknown): Promise<void>;
  /** The cell's count of requests, once a worker planned them (a chunk queued without its keys). */
  total(n: number): Promise<void>;
  /** The cell failed with `message`: its jobs left cancelled, its plan closed if that was its last cell. */
  fail(message: string): Promise<void>;
  /**
   * Requests put back on the queue as a new chunk of round `round`, taken after the plan's delay (doubled each
   * round); undefined when the plan's rounds are spent (or it is over).
   */
  requeue(keys: readonly string[], round: number): Promise<{ rounds: number; delayS: number } | undefined>;
  /** The round of the cell's latest chunk, counted from its last round-0 chunk (`plan retry` starts rounds anew). */
  round(): Promise<number>;
  /** The cell taken to finish by `finisher`, if its jobs are all done and no one else is finishing it. */
  finishing(finisher: string): Promise<FinishRow | undefined>;
  /** The cell's batches, in the order submitted. */
  batchIds(): Promise<{ id: string; provider: string }[]>;
  /** The cell's plan over once its cells are all done or failed. */
  closePlan(): Promise<void>;
  /** The cell's rows as the engine's loop keeps one job's run (./loop.ts `RunStore`). */
  run(j: JobRun): RunStore;
}

/** A queued cell as one worker runs it: its phases, its requests planned once, its provider once opened. */
export interface CellPlan {
  runner: LlmRunPhases;
  planned: Awaited<ReturnType<LlmRunPhases['requests']>>;
  byKey: Map<string, LlmRequest>;
  provider?: Provider | undefined;
  /** Whether `provider` may connect to private addresses. */
  allowPrivate?: boolean;
  /** max_cost: each request's ceiling, USD, by key (counted once per worker). */
  ceilings?: Promise<Map<string, number>>;
}

/**
 * The cells one worker runs, each planned once (its requests read from this machine's data) and checked against the
 * data the plan was queued with: a worker whose data differ refuses the cell rather than answer other questions.
 */
export class CellPlans {
  private readonly cells = new Map<string, Promise<CellPlan>>();

  constructor(
    private readonly o: {
      /** Who plans, in messages ("worker w1"). */
      who: string;
      log: Logger;
      /** This machine's data folder, in place of the specs'. */
      dataDir?: string;
      /** Builds a cell's phases from its spec (default: the engine's). */
      prepare?(spec: LlmSpec): Promise<LlmRunPhases>;
    },
  ) {}

  /** Cell `cell` of plan `plan`, from its stored spec, checked against its data's SHA-256 as queued. */
  get(plan: string, cell: string, stored: string | null, dataSha: Record<string, string>): Promise<CellPlan> {
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
            `${this.o.who}: its data differ from those the plan was queued with (${differ.map(([f]) => f).join(', ')}; data folder ${runner.options.dataDir}); give the worker the same files (--data)`,
          );
        return { runner, planned, byKey: new Map(planned.requests.map((j) => [j.key, j])) };
      })();
      this.cells.set(key, p);
      p.catch(() => this.cells.delete(key));
    }
    return p;
  }

  /** Every provider opened for these cells, closed. */
  async close(): Promise<void> {
    for (const p of this.cells.values()) await (await p.catch(() => undefined))?.provider?.close?.();
  }
}

/** A job's answers as the worker writes them. */
export interface ChunkAnswers {
  /** An online answer, kept until written (a stopped job's failures are not answers). */
  online: AnswerSink;
  /** A batch's answer, written before the batch is marked collected. */
  batch: AnswerSink;
  /** Once the answers handed over so far are written: the first error of a write, if any. */
  landed(): Promise<unknown>;
}

export interface ChunkInput {
  store: QueuedCellStore;
  plans: CellPlans;
  plan: string;
  cell: string;
  chunk: number;
  /** The chunk's keys as stored; null for the cell's every request, planned here (the platform's closed tests). */
  keys: readonly string[] | null;
  round: number;
  /** Requests in flight the job's claim holds of its endpoint's budget. */
  inFlight: number;
  /** Requests in flight on this worker, across its jobs. */
  concurrency: number;
  /**
   * How this worker opens the cell's provider (the environment its keys come from, the addresses it may reach);
   * throws to refuse the cell (a key it does not give, a server it may not reach).
   */
  connect(
    spec: LlmSpec,
    kind: string,
  ): Promise<{ allowPrivate: boolean; open: Pick<OpenProviderOptions, 'env' | 'guard'> }>;
  answers: ChunkAnswers;
  /** The job's claim, checked before each request. */
  fence(): Promise<void>;
  /** The worker's, checked before a provider's retry (whose job the provider does not know). */
  retryFence(): Promise<void>;
  /** The worker's request slot, shared by its jobs. */
  slot<T>(send: () => Promise<T>): Promise<T>;
  /** Aborted once the job is stopped (SIGTERM, declared lost, cancelled). */
  signal: AbortSignal;
  /** Who runs it, in messages ("worker w1"). */
  who: string;
  log: Logger;
}

/**
 * How a job ended: `ended` (its claim to be ended, its chunk done or not; `answered`: every request asked, the cell
 * may be finished), `stopped` (the job was stopped: whoever has it now goes on), `unwritten` (answers that could not be
 * written are not answers: the job goes back to the queue).
 */
export type ChunkEnd =
  | { end: 'ended'; chunkDone: boolean; answered: boolean; queueMs: number }
  | { end: 'stopped' }
  | { end: 'unwritten'; error: unknown };

/**
 * One job of a queued cell: what the chunk asks that has no answer yet, sent through the engine's one loop into the
 * cell's store. A cell this worker cannot run as queued fails with the reason before any request; a budget reached
 * or a server that refuses fails it; a server down past its breaker puts the chunk's rest back for a later round.
 */
export async function runChunk(i: ChunkInput): Promise<ChunkEnd> {
  // Queue time: this job's reads before its requests, the cell's planning aside.
  let t0 = performance.now();
  const { store, plan, cell, chunk, log } = i;
  const ended = (chunkDone = false, answered = false): ChunkEnd => ({
    end: 'ended',
    chunkDone,
    answered,
    queueMs: 0,
  });
  const row = await store.jobRow(i.keys ?? []);
  if (!row || row.plan_status === 'cancelled' || row.status === 'done' || row.status === 'failed')
    return ended();
  let prepared: CellPlan;
  let provider: Provider;
  const planning = performance.now();
  try {
    const spec = specOfRow(row.spec, `${plan}/${cell}`);
    const { allowPrivate, open } = await i.connect(spec, row.kind);
    prepared = await i.plans.get(plan, cell, row.spec, JSON.parse(row.data_sha256) as Record<string, string>);
    // The endpoint's allowance may have changed since this cell's provider was opened: it is opened again.
    if (!recordOf(spec.provider).local && prepared.allowPrivate !== allowPrivate)
      prepared.provider = undefined;
    prepared.allowPrivate = allowPrivate;
    prepared.provider ??= await prepared.runner.provider(open);
    provider = prepared.provider;
  } catch (e) {
    // This worker cannot run the cell as queued (its data, a key it lacks, a server not allowed): the cell fails
    // with the reason, for `plan status` to show; nothing is asked.
    await failQueuedCell(store, plan, cell, e, log);
    return ended();
  }
  t0 += performance.now() - planning;
  const keys = i.keys ?? prepared.planned.requests.map((j) => j.key);
  let answered = new Set(row.answered);
  if (i.keys === null) {
    await store.total(new Set(keys).size);
    answered = await store.okKeys(keys);
  }
  const pending = keys.filter((k) => !answered.has(k)).map((k) => prepared.byKey.get(k));
  if (pending.some((j) => j === undefined)) {
    await failQueuedCell(
      store,
      plan,
      cell,
      new Error(`${i.who} plans other requests than the plan was queued with (another rumedbench version?)`),
      log,
    );
    return ended();
  }
  // The cell and plan marked running, once: a running cell has its start and its model's description already.
  if (row.status === 'queued' || row.plan_status === 'queued' || row.undescribed)
    await store.started(provider.describe());
  const queueMs = performance.now() - t0;
  log.info(`${plan} ${cell} #${chunk}: ${pending.length} of ${keys.length} request(s) to ask`);
  const batch = batchSettingsOf(prepared.runner.spec);
  if (!batch) {
    provider.limitInFlight?.(i.concurrency);
    // A retry passes the same fence as a first request: a worker woken from a freeze learns it was declared lost
    // before a timed-out request of a job no longer its own goes out again.
    provider.checkBeforeRetry?.(i.retryFence);
    // The server's breaker may still be open from an outage this process saw (a job failed "is down" seconds ago):
    // waited out, the job's first request tries the server. Failing at once would spend a retry round, or a
    // `plan retry` made once the cause was fixed, without a request sent.
    const cool = provider.breakerWaitMs?.() ?? 0;
    if (cool > 0) await sleep(cool, undefined, { signal: i.signal }).catch(() => {});
  }
  // A batch job's files live in a folder of its own; its batches are recorded in the cell's rows the moment the
  // provider names them, so that whoever takes the job over collects them instead of sending them again.
  const scratch = batch ? mkdtempSync(join(tmpdir(), 'rumedbench-batch-job-')) : tmpdir();
  const { maxCost, params } = prepared.runner.options;
  // A batch cell pays the batch price, as `llm --batch` reckons it.
  const prices = pricesOf({ prices: prepared.runner.options.prices, batch });
  try {
    await sendRun({
      store: store.run({
        plan,
        cell,
        all: prepared.planned.requests,
        ceilings: prepared,
        maxTokens: params.maxTokens,
        answers: batch ? i.answers.batch : i.answers.online,
        scratch,
        ...(batch ? {} : { fence: i.fence, slot: i.slot }),
      }),
      provider,
      all: prepared.planned.requests,
      pending: pending as LlmRequest[],
      params,
      concurrency: batch ? prepared.runner.options.concurrency : Math.min(i.inFlight, row.in_flight),
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
      signal: i.signal,
      log,
    });
  } catch (e) {
    const writeError = await i.answers.landed();
    // Stopped (SIGTERM) or cancelled: the job was released or cancelled; what was answered stays (a batch goes to
    // whoever takes the job).
    if (i.signal.aborted) return { end: 'stopped' };
    const code = e instanceof RumedbenchError ? e.code : undefined;
    if (code === 'COST_LIMIT' && writeError !== undefined) return { end: 'unwritten', error: writeError };
    // The model server is down (the client's circuit breaker): what this job did not answer goes back to the queue,
    // for a later round, while the plan has rounds left.
    if (code === 'LLM_ENDPOINT_DOWN' && !batch) {
      // The provider's breaker stays open: the next job of this cell here starts with a fresh one.
      if (prepared.provider === provider) prepared.provider = undefined;
      const ok = await store.okKeys(keys);
      const left = keys.filter((k) => !ok.has(k));
      if (
        await requeue(
          store,
          plan,
          cell,
          left,
          i.round + 1,
          (e as Error).message.split('\n')[0] as string,
          log,
        )
      )
        return ended(true);
    }
    // A server that refuses what no retry fixes (a key, a model name), a budget reached, or a server down past the
    // plan's rounds: the cell fails with its reason. A batch's other failures end the job (the worker's).
    if (batch && code !== 'COST_LIMIT') throw e;
    await failQueuedCell(store, plan, cell, e, log);
    return ended(batch !== undefined);
  } finally {
    if (batch) rmSync(scratch, { recursive: true, force: true });
  }
  const writeError = await i.answers.landed();
  if (writeError !== undefined) return { end: 'unwritten', error: writeError };
  // Stopped (SIGTERM) or cancelled: the job was released or cancelled; what was answered stays.
  if (i.signal.aborted) return { end: 'stopped' };
  return { end: 'ended', chunkDone: true, answered: true, queueMs };
}

export interface FinishCellInput {
  store: QueuedCellStore;
  plans: CellPlans;
  plan: string;
  cell: string;
  /** Who finishes it (a worker's id): the cell is taken in its row, so that one finisher finishes it. */
  finisher: string;
  /** A folder of this machine for the run folder while it is written (removed after). */
  tempDir(): string;
  /** Finishing failed after the cell was taken (the worker hands it back or fails it). */
  failed(e: unknown): Promise<void>;
  /**
   * Called once the cell is taken, before its answers are read and scored; resolves, when the caller may start that
   * work, to what ends it. The worker waits there for a claim it has under way: scoring holds the process for a while
   * (300 ms of CPU for 800 answers), and a claim's transaction held the endpoint's lock for all of it, keeping every
   * other worker's claims on that endpoint waiting (#64).
   */
  alone?(): Promise<() => void>;
  log: Logger;
}

/**
 * Finishes a cell whose jobs are all done, if no one else is finishing it: its requests that failed for reasons that
 * pass go back for another round while the plan has rounds; otherwise its answers, in the run's order, become a run
 * folder exactly as `llm` writes one (`finishRun`), stored in the cell's rows.
 */
export async function finishCell(f: FinishCellInput): Promise<void> {
  const { store, plan, cell, log } = f;
  const row = await store.finishing(f.finisher);
  if (!row) return;
  let dir: string | undefined;
  const done = (await f.alone?.()) ?? (() => {});
  try {
    dir = f.tempDir();
    const prepared = await f.plans.get(
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
      if (await requeue(store, plan, cell, transient, (await store.round()) + 1, why.slice(0, 300), log))
        return;
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
    await store.done(dir, result.summary);
    log.info(`${plan} ${cell}: done, ${scoresLine(result.evaluation)}`);
  } catch (e) {
    await f.failed(e);
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    done();
  }
  await store.closePlan();
}

/** The cell failed with what `e` says, and the queue's way out (`plan retry`), not a local run's. */
export async function failQueuedCell(
  store: QueuedCellStore,
  plan: string,
  cell: string,
  e: unknown,
  log: Logger,
): Promise<void> {
  // A model server's text may hold what PostgreSQL refuses (NUL, a lone surrogate): the cell must still fail.
  const message = cleanText(queueAdvice(plan, cell, e), 4000);
  log.error(`${plan} ${cell}: ${message}`);
  await store.fail(message);
}

/**
 * Puts requests of a cell back on the queue as a new chunk of round `round`, to be taken after the plan's delay
 * (doubled each round); false when the plan's rounds are spent.
 */
async function requeue(
  store: QueuedCellStore,
  plan: string,
  cell: string,
  keys: readonly string[],
  round: number,
  why: string,
  log: Logger,
): Promise<boolean> {
  if (keys.length === 0) return true;
  const back = await store.requeue(keys, round);
  if (!back) return false;
  log.warn(
    `${plan} ${cell}: ${keys.length} request(s) go back to the queue, round ${round} of ${back.rounds}, in ${back.delayS} s (${why})`,
  );
  return true;
}

/** What a failure says, with the advice of the queue (`plan retry`), not of a local run's journal. */
function queueAdvice(plan: string, cell: string, e: unknown): string {
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

/** A finished cell's scores for its closing line: the overall where the cell has one, else each task's score. */
function scoresLine(e: {
  overall: number | null;
  tasks: Readonly<Record<string, { score: number }>>;
}): string {
  if (e.overall !== null) return `overall ${e.overall.toFixed(2)}`;
  const tasks = Object.entries(e.tasks).map(([t, r]) => `${t} ${r.score.toFixed(2)}`);
  return tasks.length > 0 ? tasks.join(', ') : 'no task scored';
}

/** Failures another round may answer: the server away, timing out, busy or failing (5xx, 429, 408). */
const TRANSIENT = /cannot reach|timed out|broke off|is down|HTTP (5\d\d|429|408)\b/;

/** A cell's spec as the queue holds it; a cell an older release queued as a command line is refused, saying so. */
export function specOfRow(stored: string | null, where: string): LlmSpec {
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
