/**
 * The engine's run loop of an LLM run, written once. `sendRun` is the loop every door sends through: the budget
 * checked and watched (../llm/budget.ts), the requests asked (online, as batches, or read from a results file:
 * ../llm/execute.ts), each answer handed to a store as it lands, a run the budget stopped ended with COST_LIMIT. What
 * differs between a run folder and the queue is the store (`RunStore`): the folder's here (`folderStore`), the
 * queue's in ../workers/queue-store.ts. `runLlm` runs a run folder around it: the folder locked, the journal opened
 * (`--resume`, `--retry-errors`), the requests planned (this shard's), then the run folder written and scored
 * (../llm/run.ts `finishRun`); `llm`, `run`, `plan run`, the server's runs and the library reach it through
 * `runEvaluation`. A queue worker calls `sendRun` for each job it claims, with the cell's store.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { RumedbenchError, UsageError } from '../errors.js';
import {
  BATCH_DEFAULTS,
  type BatchApi,
  type BatchLedger,
  type BatchResult,
  folderLedger,
  readBatchLedger,
  readIntents,
} from '../llm/batch.js';
import { type Budget, type BudgetOptions, type MoneyStore, memoryMoney, openBudget } from '../llm/budget.js';
import {
  type CostEstimate,
  describeEstimate,
  estimateCost,
  estimatedUsage,
  formatUsd,
  type Prices,
  spentOn,
} from '../llm/cost.js';
import { type AnswerSink, type Executed, executeRequests, type RequestExecutor } from '../llm/execute.js';
import { Journal, type JournalEntry } from '../llm/journal.js';
import { isCorrect, readAnswer } from '../llm/outputs.js';
import type { Provider, SamplingParams } from '../llm/provider.js';
import type { LlmRequest } from '../llm/requests.js';
import { checkResumeSettings, recordSettings, requestSettingsOf } from '../llm/resume-settings.js';
import {
  checkLoglikTasks,
  finishRun,
  type LlmRunOptions,
  type LlmRunResult,
  pricesOf,
  requestsOfRun,
  shardOf,
} from '../llm/run.js';
import { lockRunFolder } from '../llm/run-lock.js';
import { newProgress, type RunProgress } from '../llm/send.js';
import { type Logger, silentLogger } from '../log.js';

export async function runLlm(options: LlmRunOptions): Promise<LlmRunResult> {
  mkdirSync(options.outDir, { recursive: true });
  const release = lockRunFolder(options.outDir);
  try {
    return await runLocked(options);
  } finally {
    release();
  }
}

async function runLocked(options: LlmRunOptions): Promise<LlmRunResult> {
  const log = options.logger ?? silentLogger;
  const mode = options.mode;
  const resuming = options.resume || options.retryErrors;
  const journalFile = join(options.outDir, 'journal.jsonl');
  if (existsSync(journalFile) && !resuming) {
    throw new UsageError(
      `${options.outDir} already holds a run; --resume continues it, --retry-errors re-asks its failures, or choose another --out`,
    );
  }
  if (mode === 'loglik') {
    if (!options.provider.loglik)
      throw new UsageError('this provider cannot score by log-likelihood; use --mode generate');
    await options.provider.checkLoglik?.();
  }
  mkdirSync(options.outDir, { recursive: true });
  options.provider.limitInFlight?.(options.concurrency);
  const journal = await Journal.open(
    journalFile,
    options.maxReplyBytes !== undefined ? { maxReplyChars: options.maxReplyBytes } : {},
  );
  if (journal.oversized > 0)
    log.warn(
      `${journalFile}: ${journal.oversized} answer(s) with a reply too long to keep are counted as failed; --resume or --retry-errors asks them again`,
    );
  if (journal.skipped > 0)
    log.warn(
      `${journalFile}: ${journal.skipped} unreadable or oversized line(s) skipped; their requests are asked again`,
    );
  // A run folder is one run: continued with fewer tasks, it would write predictions without the others' answers.
  if (resuming) {
    const asked = new Set(options.tasks.map((t) => t.name));
    const left = [...journal.answeredTasks()].filter((t) => !asked.has(t));
    if (left.length > 0)
      throw new UsageError(
        `${journalFile} holds answers for ${left.join(', ')}, which --tasks leaves out: continuing would write the run's predictions without them. Give --tasks ${[...asked, ...left].join(',')} (the run's tasks), or another --out for a run of these tasks`,
      );
  }
  const model = options.provider.describe();

  // 1. Plan.
  const planned = await requestsOfRun(options, model.model, log);
  const shard = options.shard;
  const requests = shard
    ? planned.requests.filter((j) => shardOf(j.key, shard.count) === shard.index)
    : planned.requests;
  if (shard)
    log.info(
      `shard ${shard.index}/${shard.count}: ${requests.length} of the run's ${planned.requests.length} requests`,
    );
  if (mode === 'loglik') await checkLoglikTasks(options.provider, requests);
  // Paid answers are never dropped in silence: a resume whose settings change the requests is refused, naming what
  // changed, or with --reask asks those items again (../llm/resume-settings.ts).
  const settings = requestSettingsOf(options, model.model, planned.dataFiles);
  if (resuming)
    checkResumeSettings({
      outDir: options.outDir,
      journalFile,
      journal,
      requests,
      settings,
      waiting: readBatchLedger(options.outDir).filter((b) => !b.collected),
      reask: options.reask ?? false,
      log,
    });
  recordSettings(options.outDir, settings);
  // Answers of an older version whose server's token counts were unreadable carry none: estimated from their bytes as
  // new ones are, so that the spending so far counts them.
  const planOf = new Map(requests.map((j) => [j.key, j]));
  journal.estimateUnreadUsage((e) => {
    const j = planOf.get(e.key);
    return j?.kind === 'chat' && typeof e.reply === 'string'
      ? estimatedUsage(j.messages, { text: e.reply, reasoning: e.reasoning })
      : undefined;
  });

  // A run folder holds one way of asking: a batch it recorded and never collected is collected (with --batch) before
  // anything is sent online, or its answers would later replace these, each request paid twice.
  if (!options.batch && !options.batchResults) {
    const waiting = readBatchLedger(options.outDir).filter((b) => !b.collected);
    if (waiting.length > 0)
      throw new UsageError(
        `${options.outDir} has ${waiting.length} batch(es) submitted and not collected (${waiting.map((b) => `${b.id}, ${b.keys.length} requests`).join('; ')}): nothing is sent online while they wait. Continue with the same command and --resume --batch, which collects them`,
      );
    // A batch being created when the last run stopped may exist at the provider: it is looked up first.
    const creating = readIntents(options.outDir);
    if (creating.length > 0)
      throw new UsageError(
        `${options.outDir} records ${creating.length} batch(es) being created when the last run stopped (${creating.map((i) => `${i.keys.length} requests`).join('; ')}), which may exist at the provider: nothing is sent online before they are looked up. Continue with the same command and --resume --batch, which finds and collects them (or sends their requests as a batch if the provider has none)`,
      );
  }

  // 2. Send what the journal does not answer yet.
  // A request never sent (no line: a run killed before its batch existed, or before it was asked) is pending for
  // --retry-errors as for --resume: it is no error, and left out it would fail the run as "not sent" with a hint
  // (--retry-errors) that sends nothing again (#59).
  const pending = requests.filter((j) => journal.get(j.key)?.status !== 'ok');
  const failedBefore = pending.filter((j) => journal.get(j.key) !== undefined).length;
  log.info(
    `${requests.length} requests in the run, ${requests.length - pending.length} already answered, ${pending.length} to send${failedBefore > 0 ? ` (${failedBefore} failed before)` : ''}`,
  );
  const prices = pricesOf(options);
  const store = folderStore(options, journal, requests, prices, journalFile);
  // Each answer is journaled with the rate it is bought at, so that the folder is priced at what was paid (../llm/cost.ts).
  journal.buyingAs(
    options.batchResults
      ? { via: 'results-file' }
      : options.batch
        ? { via: 'batch', discount: options.batch.discount }
        : { via: 'online' },
  );
  const bar = newProgress(pending.length);
  const batch = options.batch;
  const given = options.batchResults;
  const { wallS, ids: batchIds } = await sendRun({
    store,
    provider: options.provider,
    all: requests,
    pending,
    params: options.params,
    concurrency: options.concurrency,
    ...(options.maxCost !== undefined ? { maxCost: options.maxCost } : {}),
    ...(prices ? { prices } : {}),
    way: given
      ? { kind: 'results-file', file: given.file, results: given.results }
      : batch
        ? {
            kind: 'batch',
            api: batch.api,
            pollS: batch.pollS,
            ...(batch.deadlineH !== undefined ? { deadlineH: batch.deadlineH } : {}),
          }
        : {
            kind: 'online',
            progress: bar,
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
            onAnswer: (job, entry) => {
              bar.tokens += (entry.usage?.promptTokens ?? 0) + (entry.usage?.completionTokens ?? 0);
              const r = readAnswer(job, entry);
              if (r.status === 'unparsed') bar.unparsed++;
              else if (job.record.gold !== undefined && r.answer !== null) {
                bar.graded++;
                if (isCorrect(job.task, job.record.gold, r.answer)) bar.correct++;
              }
            },
          },
    log,
  }).catch((e: unknown) => {
    if (!(e instanceof RumedbenchError)) throw e;
    const answered = requests.filter((j) => journal.get(j.key)?.status === 'ok').length;
    const kept = `${answered} of ${requests.length} requests are answered in ${journalFile}`;
    if (e.code === 'LLM_SERVER_REFUSED' || e.code === 'LLM_MAX_TOKENS_IGNORED')
      throw new RumedbenchError(
        e.code,
        `${e.message}\nThe run stopped at once: no retry can fix this. ${kept}; fix the cause, then continue with the same command and --resume (nothing answered is asked again).`,
        { cause: e },
      );
    if (e.code === 'LLM_ENDPOINT_DOWN')
      throw new RumedbenchError(
        'LLM_ENDPOINT_DOWN',
        `${e.message}\nThe run stopped. ${kept}; once the server is back, continue with the same command and --resume (nothing answered is asked again).`,
        { cause: e },
      );
    throw e;
  });
  return finishRun({
    options,
    requests,
    planned,
    journal,
    journalFile,
    model,
    // Results read from a file were sent by whoever ran the batch, not by this run.
    sent: given ? 0 : pending.length,
    wallS,
    log,
    ...(batch && batchIds
      ? { batch: { ids: batchIds, discount: batch.discount, provider: batch.api.name } }
      : earlierBatches(options.outDir, requests, journal)),
  });
}

/**
 * What the one loop (`sendRun`) keeps where: the port whose two implementations are a run folder's (`folderStore`:
 * journal.jsonl, batches.jsonl, the folder's lock held for the whole run, its money in memory) and a queued cell's
 * (../workers/queue-store.ts: the cell's rows, a job's claim checked before each request, its money in the cell's row).
 */
export interface RunStore {
  /** Where each answer goes the moment it lands. */
  answers: AnswerSink;
  /** The batches of the run, recorded the moment the provider names them. */
  batches: BatchLedger;
  /** The run's money: spent, and reserved by the requests in flight. */
  money: MoneyStore;
  /** The entries kept for `keys`, in their order (a batch's replies, priced once they are read). */
  kept(keys: readonly string[]): Promise<(JournalEntry | undefined)[]>;
  /**
   * What must fit the budget before anything is sent: each request's ceiling by key and the sum of those not answered
   * yet, in words. `count` counts the ceilings of the requests given (../llm/cost.ts).
   */
  left(
    pending: readonly LlmRequest[],
    count: (requests: readonly LlmRequest[]) => Promise<CostEstimate>,
  ): Promise<{ ceilings: ReadonlyMap<string, number>; usd: number; said: string }>;
  /** Where a batch's files are written while it runs. */
  scratch: string;
  /** Before each request goes out: throws once this run may send no more (a queue job's claim taken away). */
  fence?(): Promise<void>;
  /** Holds a request slot around each request (a worker's, shared by its requests). */
  slot?<T>(send: () => Promise<T>): Promise<T>;
  /** What the budget's refusal calls things, and how it says to go on once the budget stopped the run. */
  words: Pick<BudgetOptions, 'flag' | 'what' | 'spentBy' | 'advice'> & {
    stopped(offline: boolean): Promise<string>;
    /**
     * Whose replies this process's token counts are (`this run's`, `this worker's`), and who spent the rest of what
     * the money says was spent: one picture, the dollars of the run or cell and the share of them the tokens are.
     */
    here: string;
    rest: string;
  };
}

/** How the requests are asked: sent from here, as the provider's batches, or read from a batch's results file. */
export type SendWay =
  | {
      kind: 'online';
      progress?: RunProgress;
      onProgress?: (p: RunProgress, final: boolean) => void;
      onAnswer?: (job: LlmRequest, entry: JournalEntry) => void;
    }
  | { kind: 'batch'; api: BatchApi; pollS: number; deadlineH?: number }
  | { kind: 'results-file'; file: string; results: AsyncIterable<BatchResult> | Iterable<BatchResult> };

export interface SendInput {
  store: RunStore;
  provider: Provider;
  /** Every request of the run (a batch recorded earlier is matched against them). */
  all: readonly LlmRequest[];
  /** What to ask now. */
  pending: readonly LlmRequest[];
  params: SamplingParams;
  /** Requests in flight at once (online), and the ceilings counted at once. */
  concurrency: number;
  /** `max_cost` (`--max-cost`), USD; checked against `prices` (a batch's, at its discount). */
  maxCost?: number;
  prices?: Prices;
  way: SendWay;
  /** Once aborted, nothing more is sent (a job stopped). */
  signal?: AbortSignal;
  log: Logger;
}

/**
 * The one loop of an LLM run's requests, whatever keeps them: the budget checked (what is spent and what is left
 * must fit), the requests asked (online through the store's slot and fence, each reserving its ceiling first; as
 * batches recorded in the store's ledger; or read from a results file), each answer handed to the store as it lands,
 * and a run the budget stopped ended with COST_LIMIT naming what it spent. `runLlm` and the queue's worker both call
 * it; what differs is the store.
 */
export async function sendRun(i: SendInput): Promise<Executed> {
  const { store, way } = i;
  const budget = i.maxCost !== undefined ? await budgetOf(i, i.maxCost) : undefined;
  const signals = [i.signal, budget?.stop.signal].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  const executor: RequestExecutor =
    way.kind === 'results-file'
      ? { ...way, journal: store.answers, all: i.all, log: i.log }
      : way.kind === 'batch'
        ? {
            ...way,
            journal: store.answers,
            all: i.all,
            outDir: store.scratch,
            ledger: store.batches,
            log: i.log,
            ...(i.signal ? { signal: i.signal } : {}),
          }
        : {
            kind: 'in-process',
            provider: guarded(i.provider, store),
            journal: store.answers,
            concurrency: i.concurrency,
            ...(way.progress ? { progress: way.progress } : {}),
            ...(way.onProgress ? { onProgress: way.onProgress } : {}),
            ...(way.onAnswer ? { onAnswer: way.onAnswer } : {}),
            ...(signal ? { signal } : {}),
            ...(budget
              ? {
                  admit: (job: LlmRequest) => budget.admit(job),
                  // A failed entry with token counts is a reply cut off past the cap: paid, counted at its ceiling.
                  settle: (job: LlmRequest, entry: JournalEntry) =>
                    budget.settle(job, entry.usage, entry.status === 'error'),
                }
              : {}),
          };
  const executed = await executeRequests(i.pending, executor, i.params);
  if (!budget) return executed;
  const offline = way.kind !== 'online';
  // A batch (or a results file) reports its spending only once it is read: past the budget, the run ends as an
  // online run stopped by it does, with what was reported.
  if (offline) await budget.settleAll(await store.kept(i.pending.map((j) => j.key)));
  if (!budget.stop.signal.aborted) return executed;
  const why =
    budget.unexplained() > 0
      ? `; ${budget.unexplained()} repl(ies) report more tokens than their request can explain (a prompt over its counted ceiling, a completion over its max tokens)`
      : '';
  const { what, flag, here, rest } = store.words;
  const max = formatUsd(i.maxCost as number);
  const spent = budget.spent();
  const others = spent - budget.mine();
  const tokens =
    others > 1e-9 * Math.max(1, spent)
      ? `${formatUsd(budget.mine())} of it for ${here} ${budget.tokens()}, the other ${formatUsd(others)} ${rest}`
      : budget.tokens();
  throw new RumedbenchError(
    'COST_LIMIT',
    `${what} has cost ${formatUsd(spent)} by ${offline ? `its batch replies' token counts, past ${flag} ${max}` : `the server's token counts, reaching ${flag} ${max}: nothing more was sent`} (${tokens}${why}). ${await store.words.stopped(offline)}`,
  );
}

/**
 * The batches an earlier run of this folder bought answers in, for the summary of a run that sends none (an online
 * `--retry-errors` after a batch run): its `llm.batch` part is kept, its answers priced at their own discount.
 */
function earlierBatches(
  outDir: string,
  requests: readonly LlmRequest[],
  journal: Journal,
): { batch?: { ids: string[]; discount: number; provider: string; ran: false } } {
  const recorded = readBatchLedger(outDir);
  const bought = requests.map((j) => journal.get(j.key)?.bought).find((b) => b?.via === 'batch');
  const first = recorded[0];
  if (!first) return {};
  return {
    batch: {
      ids: recorded.map((b) => b.id),
      discount: bought?.discount ?? BATCH_DEFAULTS.discount,
      provider: first.provider,
      ran: false,
    },
  };
}

/** The run's budget: what the store says is left, checked against what its money says was spent. */
async function budgetOf(i: SendInput, max: number): Promise<Budget> {
  const prices = i.prices;
  if (!prices)
    throw new UsageError(`${i.store.words.flag} needs the prices: --price-prompt and --price-completion`);
  const left = await i.store.left(i.pending, (requests) =>
    estimateCost(requests, { provider: i.provider, params: i.params, prices, concurrency: i.concurrency }),
  );
  return openBudget({
    ...i.store.words,
    max,
    prices,
    left: { usd: left.usd, said: left.said },
    ceilings: left.ceilings,
    money: i.store.money,
    log: i.log,
  });
}

/** The provider as the store lets it send: each request in the store's slot, past its fence. */
function guarded(provider: Provider, store: RunStore): Provider {
  if (!store.fence && !store.slot) return provider;
  const through = <T>(send: () => Promise<T>): Promise<T> => {
    const fenced = async () => {
      await store.fence?.();
      return send();
    };
    return store.slot ? store.slot(fenced) : fenced();
  };
  const g = Object.create(provider) as Provider;
  g.chat = (...args) => through(() => provider.chat(...args));
  const loglik = provider.loglik?.bind(provider);
  if (loglik) g.loglik = (r) => through(() => loglik(r));
  return g;
}

/**
 * A locked run folder as the loop's store: answers in journal.jsonl, batches in batches.jsonl, its money in this
 * process (the lock makes it the folder's only spender; the journal says what was spent before).
 */
function folderStore(
  options: LlmRunOptions,
  journal: Journal,
  requests: readonly LlmRequest[],
  prices: Prices | undefined,
  journalFile: string,
): RunStore {
  const kept = () =>
    `${requests.filter((j) => journal.get(j.key)?.status === 'ok').length} of ${requests.length} requests are answered in ${journalFile}`;
  return {
    answers: journal,
    batches: folderLedger(options.outDir),
    // What was spent, each answer at the rate it was bought at (list prices; a batch's at its discount), whatever this
    // run's way of sending; an answer that does not say is priced as this run buys. Every answer the journal holds was
    // paid for, those of requests this run no longer makes too (left unused by --reask under new settings).
    money: memoryMoney(
      prices ? spentOn(journal.paid(), options.prices ?? prices, options.batch?.discount ?? 0) : 0,
    ),
    kept: async (keys) => keys.map((k) => journal.get(k)),
    async left(pending, count) {
      const estimate = await count(pending);
      return {
        ceilings: new Map(pending.map((j, n) => [j.key, estimate.each[n] ?? 0])),
        usd: estimate.usd,
        said: describeEstimate(estimate, options.params.maxTokens),
      };
    },
    scratch: options.outDir,
    words: {
      flag: '--max-cost',
      what: 'the run',
      spentBy: 'its journal has spent',
      here: "this run's",
      rest: 'spent before, as its journal says',
      advice: 'Raise --max-cost, lower --max-tokens, or ask fewer items (--limit, --tasks).',
      stopped: async (offline) =>
        offline
          ? `${kept()}; what was spent is spent: check the provider's bill, then continue with the same command, --resume and a larger --max-cost`
          : `${kept()}; continue with the same command, --resume and a larger --max-cost (nothing answered is asked again).`,
    },
  };
}
