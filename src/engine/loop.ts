/**
 * The run loop of an LLM run into a run folder, the engine's: the folder locked, the journal opened (a run continued
 * with `--resume` or `--retry-errors`), the requests planned (this shard's), what is waiting in the batch ledger
 * collected first, `--max-cost` checked and watched (../llm/budget.ts, the rule every door spends by), the requests
 * sent (online, as batches, or read from a results file: ../llm/execute.ts), then the run folder written and scored
 * (../llm/run.ts `finishRun`). `llm`, `run`, `plan run`, the server's runs and the library reach it through
 * `runEvaluation`; a queue worker runs the same phases job by job, its money kept in the queue (../workers/queue-store.ts).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { RumedbenchError, UsageError } from '../errors.js';
import { readBatchLedger, readIntents } from '../llm/batch.js';
import { type Budget, memoryMoney, openBudget } from '../llm/budget.js';
import { describeEstimate, estimateCost, formatUsd, spentOn } from '../llm/cost.js';
import { executeRequests, type RequestExecutor } from '../llm/execute.js';
import { Journal, type JournalEntry } from '../llm/journal.js';
import { isCorrect, readAnswer } from '../llm/outputs.js';
import type { LlmRequest } from '../llm/requests.js';
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
import { newProgress } from '../llm/send.js';
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
  // Paid answers are never dropped in silence: a resume whose settings change the requests is refused (journal.ts).
  const orphaned = resuming ? journal.answersOfOtherRequests(requests) : 0;
  if (orphaned > 0)
    throw new UsageError(
      `${journalFile} holds ${orphaned} paid answer(s) for this run's items that these settings would not use (a setting that changes a request differs from the run's: --model, --temperature, --top-p, --seed, --max-tokens, the prompt or the system prompt): continuing would ask them again and pay twice. Resume with the settings they were asked with, or give a new --out`,
    );

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
  const pending = requests.filter((j) => {
    const e = journal.get(j.key);
    return options.retryErrors ? e?.status === 'error' : e?.status !== 'ok';
  });
  log.info(
    `${requests.length} requests in the run, ${requests.length - pending.length} already answered, ${pending.length} to send`,
  );
  const prices = pricesOf(options);
  const budget =
    options.maxCost !== undefined
      ? await checkBudget({ ...options, ...(prices ? { prices } : {}) }, requests, pending, journal, log)
      : undefined;
  const bar = newProgress(pending.length);
  const batch = options.batch;
  const given = options.batchResults;
  const executor: RequestExecutor = given
    ? { kind: 'results-file', file: given.file, results: given.results, journal, all: requests, log }
    : batch
      ? {
          kind: 'batch',
          api: batch.api,
          journal,
          all: requests,
          outDir: options.outDir,
          pollS: batch.pollS,
          ...(batch.deadlineH !== undefined ? { deadlineH: batch.deadlineH } : {}),
          log,
        }
      : {
          kind: 'in-process',
          provider: options.provider,
          journal,
          concurrency: options.concurrency,
          progress: bar,
          ...(budget
            ? {
                signal: budget.stop.signal,
                admit: (job: LlmRequest) => budget.admit(job),
                settle: (job: LlmRequest, entry: JournalEntry) => budget.settle(job, entry.usage),
              }
            : {}),
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
        };
  const sending = executeRequests(pending, executor, options.params);
  const { wallS, ids: batchIds } = await sending.catch((e: unknown) => {
    if (!(e instanceof RumedbenchError)) throw e;
    const answered = requests.filter((j) => journal.get(j.key)?.status === 'ok').length;
    const kept = `${answered} of ${requests.length} requests are answered in ${journalFile}`;
    if (e.code === 'LLM_SERVER_REFUSED')
      throw new RumedbenchError(
        'LLM_SERVER_REFUSED',
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
  // A batch (or a results file) reports its spending only once it is read: past the ceiling, the run ends as an
  // online run stopped by it does, with what was reported.
  if (budget && (batch || given)) await budget.settleAll(requests.map((j) => journal.get(j.key)));
  if (budget?.stop.signal.aborted) {
    const answered = requests.filter((j) => journal.get(j.key)?.status === 'ok').length;
    const offline = batch !== undefined || given !== undefined;
    const why =
      budget.unexplained() > 0
        ? `; ${budget.unexplained()} repl(ies) report more tokens than their request can explain (a prompt over its counted ceiling, a completion over --max-tokens)`
        : '';
    throw new RumedbenchError(
      'COST_LIMIT',
      offline
        ? `the run has cost ${formatUsd(budget.spent())} by its batch replies' token counts, past --max-cost ${formatUsd(options.maxCost as number)} (${budget.tokens()}${why}). ${answered} of ${requests.length} requests are answered in ${journalFile}; what was spent is spent: check the provider's bill, then continue with the same command, --resume and a larger --max-cost`
        : `the run has cost ${formatUsd(budget.spent())} by the server's token counts, reaching --max-cost ${formatUsd(options.maxCost as number)}: nothing more was sent (${budget.tokens()}${why}). ${answered} of ${requests.length} requests are answered in ${journalFile}; continue with the same command, --resume and a larger --max-cost (nothing answered is asked again).`,
    );
  }
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
      : {}),
  });
}

/**
 * `--max-cost` on a run folder: what its journal has spent, and the estimate of what is left, checked and watched by
 * the one budget rule (./budget.ts), its money kept in this process.
 */
async function checkBudget(
  options: LlmRunOptions,
  requests: readonly LlmRequest[],
  pending: readonly LlmRequest[],
  journal: Journal,
  log: Logger,
): Promise<Budget> {
  const prices = options.prices;
  if (!prices) throw new UsageError('--max-cost needs the prices: --price-prompt and --price-completion');
  const spent = spentOn(
    requests.map((j) => journal.get(j.key)),
    prices,
  );
  const estimate = await estimateCost(pending, {
    provider: options.provider,
    params: options.params,
    prices,
    concurrency: options.concurrency,
  });
  return openBudget({
    max: options.maxCost as number,
    prices,
    left: { usd: estimate.usd, said: describeEstimate(estimate, options.params.maxTokens) },
    ceilings: new Map(pending.map((j, i) => [j.key, estimate.each[i] ?? 0])),
    money: memoryMoney(spent),
    flag: '--max-cost',
    what: 'the run',
    spentBy: 'its journal has spent',
    advice: 'Raise --max-cost, lower --max-tokens, or ask fewer items (--limit, --tasks).',
    log,
  });
}
