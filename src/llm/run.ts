/**
 * The phases of an LLM run that the engine's run loop (../engine/loop.ts) and a queue worker share: evaluate a
 * language model on the tasks, by generation (replies read by the task's parser; an unreadable reply is counted as
 * unparsed and scored as wrong) or by log-likelihood (candidate answers ranked by the model's log-probability). Plan
 * the requests (`requestsOfRun`, requests.ts); the loop sends what the journal does not answer yet (send.ts,
 * execute.ts); then read the answers, write the run folder (outputs.ts), score the predictions and write the summary
 * and the manifest (`finishRun`, here).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJsonl } from '../data/jsonl.js';
import { RumedbenchError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import { percentileOf } from '../metrics/quantile.js';
import type { LlmDetailsInput, ManifestInput, ProviderInfo } from '../scoring/run-log.js';
import type { EvaluationResult } from '../scoring/score.js';
import { REPLY_FLAGS, type ReplyFlag } from '../tasks/reply-check.js';
import type { TaskDefinition } from '../tasks/types.js';
import { VERSION } from '../version.js';
import type { BatchApi, BatchResult } from './batch.js';
import { type Prices, spentByWay, spentOn } from './cost.js';
import type { Journal, JournalEntry } from './journal.js';
import {
  collectSamples,
  repeatFigures,
  type SampleLog,
  type TaskFigures,
  taskFigures,
  usageLedger,
  voteRepeats,
  writePredictions,
} from './outputs.js';
import type { Perturbation } from './perturb.js';
import type { PromptTemplate } from './prompt.js';
import type { Provider, SamplingParams } from './provider.js';
import { type LlmRequest, type Mode, planRequests, type SplitChoice } from './requests.js';
import type { RunProgress } from './send.js';
import { NO_USAGE } from './usage.js';

export type { SampleLog } from './outputs.js';
export type { Mode, SplitChoice } from './requests.js';

export interface LlmRunOptions {
  provider: Provider;
  tasks: readonly TaskDefinition[];
  splits: SplitChoice;
  /** `generate` (default): replies parsed; `loglik`: candidates ranked by log-probability (RuMedNER stays generative). */
  mode: Mode;
  /** Log-likelihood: score RuMedNLI's label words instead of its option numbers. */
  labelWords?: boolean;
  dataDir: string;
  /** Gold held apart (`--gold DIR`): the test splits are read without gold, and only the scoring reads this folder. */
  goldDir?: string;
  outDir: string;
  shots: number;
  seed: number;
  params: SamplingParams;
  /** Requests in flight. Every setting of a run is defaulted once, in its spec (engine/spec.ts), not here. */
  concurrency: number;
  /** At most this many items per task and split (a quick look). */
  limit?: number;
  /** Continue the run in `outDir`: send only the requests without a successful journal entry. */
  resume?: boolean;
  /** Continue the run, sending only the requests whose last attempt failed. */
  retryErrors?: boolean;
  /** With `resume`: the items answered under other settings (./resume-settings.ts) are asked again, paid again. */
  reask?: boolean;
  /** The reply cap the provider reads with (`--max-reply-bytes`): a journaled reply over it is asked again. */
  maxReplyBytes?: number;
  /**
   * Failed requests accepted before the run is scored (then scored as wrong, and counted apart in the summary):
   * a count, or a share of the run's requests in percent. None by default: a run with failures is not scored.
   */
  allowFailures?: { count: number } | { percent: number };
  system?: string;
  templates?: Record<string, PromptTemplate>;
  /** Prices per million prompt and completion tokens, for the cost line. */
  prices?: Prices;
  /**
   * Send the requests as the provider's batches (./batch.ts) instead of one by one: `pollS` the first wait between
   * two looks at a batch, `discount` the share of the prices a batch saves (OpenAI's and Anthropic's: 0.5).
   */
  batch?: { api: BatchApi; pollS: number; discount: number; deadlineH?: number };
  /** A batch run elsewhere (`--batch-results`): its results journaled instead of sending anything. */
  batchResults?: { file: string; results: AsyncIterable<BatchResult> };
  /**
   * The most the run may cost, in USD at `prices` (./cost.ts): a run whose estimate passes it sends nothing, and a
   * run whose reported spending reaches it stops sending (the requests in flight finish and are kept).
   */
  maxCost?: number;
  bootstrap: number;
  logger?: Logger;
  /** Told where the run stands after each answer, and at the end (`final`); the CLI draws a bar from it. */
  onProgress?: (p: RunProgress, final: boolean) => void;
  /** Only this share of the requests (by a hash of each request's key): shard `index` of `count`, from 1. */
  shard?: Shard;
  /** Generation: ask each item this many times (sampling seed + r); the majority answer is scored. */
  repeats?: number;
  /** Perturb what the model reads (./perturb.ts), seeded by `seed` and each item's id. */
  perturb?: Perturbation;
  /** Generation: ask with this formulation of each task's instruction (`TaskPrompt.variants`, by id). */
  promptVariant?: string;
  /** Extra fields of manifest.json: the engine records the run's spec and its command line here. */
  manifest?: Pick<ManifestInput, 'spec' | 'command'>;
}

export interface Shard {
  index: number;
  count: number;
}

/** The shard a request belongs to, from 1: by its key's hash, so shards stay balanced and adding a task moves nothing. */
export const shardOf = (key: string, count: number): number =>
  (Number.parseInt(key.slice(0, 8), 16) % count) + 1;

/** What a run writes in summary.json: the schema's `llm` part, with the fields every run of this release fills. */
type Filled = 'mode' | 'label_space' | 'skipped' | 'requests' | 'usage' | 'latency_ms';
export type LlmRunSummary = EvaluationResult & {
  llm: LlmDetailsInput & { [K in Filled]-?: NonNullable<LlmDetailsInput[K]> } & {
    tasks: Record<string, TaskFigures>;
  };
};

export interface LlmRunResult {
  evaluation: EvaluationResult;
  /** summary.json as written (its one schema: scoring/run-log.ts). */
  summary: LlmRunSummary;
  outDir: string;
  sent: number;
}

/** Every request of a run, as its options make them (a worker plans a queued cell's requests with this too). */
export function requestsOfRun(
  options: Omit<LlmRunOptions, 'provider'>,
  model: unknown,
  log: Logger = silentLogger,
): ReturnType<typeof planRequests> {
  return planRequests({
    tasks: options.tasks,
    splits: options.splits,
    dataDir: options.dataDir,
    ...(options.goldDir !== undefined ? { goldApart: true } : {}),
    mode: options.mode,
    shots: options.shots,
    seed: options.seed,
    params: options.params,
    model,
    log,
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
    ...(options.system !== undefined ? { system: options.system } : {}),
    ...(options.templates ? { templates: options.templates } : {}),
    ...(options.labelWords ? { labelWords: true } : {}),
    ...(options.repeats !== undefined && options.repeats > 1 ? { repeats: options.repeats } : {}),
    ...(options.perturb ? { perturb: options.perturb } : {}),
    ...(options.promptVariant !== undefined ? { promptVariant: options.promptVariant } : {}),
  });
}

/** The prices a run pays: a batch run's at the provider's batch discount. */
export function pricesOf(options: {
  prices?: Prices | undefined;
  batch?: { discount: number } | undefined;
}): Prices | undefined {
  const p = options.prices;
  if (!p || !options.batch) return p;
  const keep = 1 - options.batch.discount;
  return {
    prompt: p.prompt * keep,
    completion: p.completion * keep,
    ...(p.cached !== undefined ? { cached: p.cached * keep } : {}),
    ...(p.cacheWrite !== undefined ? { cacheWrite: p.cacheWrite * keep } : {}),
  };
}

/** What the last stages need: the run's options, its requests (this shard's) and their answers. */
export interface FinishInput {
  options: LlmRunOptions | Omit<LlmRunOptions, 'provider'>;
  requests: readonly LlmRequest[];
  planned: Awaited<ReturnType<typeof planRequests>>;
  journal: Journal;
  journalFile: string;
  /** The provider's description (provider, endpoint, model, log-likelihood method), as the manifest records it. */
  model: ProviderInfo;
  sent: number;
  wallS: number;
  log: Logger;
  /** The manifest's extra fields (a merge names its shards; a worker, its plan and cell). */
  extra?: Pick<ManifestInput, 'merged_from' | 'plan_id' | 'cell'>;
  /**
   * The folder's batches, and the discount they were bought at; `ran: false` where this run sent none (an online
   * resume of a folder with batches), so that answers that do not say how they were bought are priced online.
   */
  batch?: { ids: string[]; discount: number; provider: string; ran?: false };
}

/**
 * Reads the answers, writes the run folder (samples, predictions, summary.json, manifest.json) and scores it. A run
 * and a merge of its shards end here alike, so that the merged folder is the one the unsharded run would write.
 */
export async function finishRun(f: FinishInput): Promise<LlmRunResult> {
  const { options, requests, planned, journal, journalFile, model, log } = f;
  const { seed, shots, splits, mode } = options;
  const shard = options.shard;
  const wallS = f.wallS;
  const accepted = checkFailures(requests, journal, journalFile, options.allowFailures);
  if (accepted) log.warn(accepted);

  // 3. Read the answers, write the run folder.
  const samples = collectSamples(requests, journal);
  const repeats = options.repeats ?? 1;
  // With repeats, each item's answer is the one most of its repeats gave; samples.jsonl keeps every repeat.
  const answered = repeats > 1 ? voteRepeats(options.tasks, samples) : samples;
  checkReplies(options, samples, log);
  const loglikSamples = samples.filter((x) => x.mode === 'loglik');
  if (loglikSamples.length > 0 && loglikSamples.every((x) => x.status !== 'parsed')) {
    throw new RumedbenchError(
      'NOTHING_SCORED',
      `no item could be scored by log-likelihood (${loglikSamples[0]?.reason ?? 'no candidate had a score'}): the server answered, but gave no usable log-probability for any candidate. Use --mode generate, or a server that returns prompt log-probabilities (vLLM).`,
    );
  }
  const predictionsDir = writePredictions(options.outDir, options.tasks, samples, answered);

  // 4. Score, summarize, record how the run was made.
  // Scoring and the run's files load here, when a run is finished, not with the run loop: a queue worker's start
  // (every worker process pays it) does not need them before its first request (#64).
  const [{ evaluateSubmission }, { writeManifest, writeRunSummary }] = await Promise.all([
    import('../scoring/score.js'),
    import('../scoring/run-log.js'),
  ]);
  const evaluation = await evaluateSubmission(predictionsDir, {
    dataDir: options.dataDir,
    ...(options.goldDir !== undefined ? { goldDir: options.goldDir } : {}),
    seed,
    bootstrap: options.bootstrap,
    // A quick look or a shard answers some items: scored on those, with the gold the predictions carry.
    ...(options.limit !== undefined || shard ? { fileGold: true } : {}),
  });
  const perTask = taskFigures(options.tasks, samples);
  const ok = requests.map((j) => journal.get(j.key)).filter((e): e is JournalEntry => e?.status === 'ok');
  const ledger = usageLedger(ok);
  const latencies = ok.map((e) => e.latencyMs);
  const usageProblems = ok.filter((e) => e.usageProblem !== undefined);
  const uncounted = usageProblems.filter((e) => e.usageProblem === NO_USAGE).length;
  const unreadable = usageProblems.filter((e) => e.usageProblem !== NO_USAGE);
  const estimated = `estimated from the request's and the reply's bytes (a ceiling), and counted so in the tokens, the cost and --max-cost`;
  if (uncounted > 0)
    log.warn(`${uncounted} replies gave no token counts (usage); their tokens are ${estimated}`);
  if (unreadable.length > 0)
    log.warn(
      `${unreadable.length} replies gave token counts that cannot be right (e.g. ${unreadable[0]?.usageProblem}); their tokens are ${estimated}`,
    );
  const served: Record<string, number> = {};
  for (const e of ok) if (e.model !== undefined) served[e.model] = (served[e.model] ?? 0) + 1;
  const others = Object.entries(served).filter(([m]) => m !== model.model);
  if (others.length > 0)
    log.warn(
      `the server says another model answered: ${others.map(([m, n]) => `"${m}" (${n} replies)`).join(', ')}; asked for "${String(model.model)}"`,
    );
  // Answers whose journal line does not say how they were bought (older versions, a queue cell's) are priced as this
  // run buys: a batch run's at its discount.
  const unsaid =
    f.batch?.ran === false || !f.batch
      ? { via: 'online' as const, discount: 0 }
      : { via: 'batch' as const, discount: f.batch.discount };
  const byWay = spentByWay(ok, options.prices, unsaid);
  const summary = {
    ...evaluation,
    llm: {
      mode,
      ...(mode === 'loglik'
        ? {
            loglik: {
              score: 'sum of the continuation tokens’ log-probabilities given the prompt',
              acc: 'argmax of the sum (the predictions)',
              acc_norm_char: 'argmax of the sum divided by the continuation’s length in characters',
              acc_norm_byte: 'argmax of the sum divided by the continuation’s length in UTF-8 bytes',
              positions: ok.reduce((n, e) => n + (e.positions ?? 0), 0),
            },
          }
        : {}),
      tasks: perTask,
      label_space: planned.labelSpace,
      skipped: planned.skipped,
      requests: {
        total: requests.length,
        sent_this_run: f.sent,
        wall_s: wallS,
        throughput_rps: f.sent / Math.max(1e-9, wallS),
      },
      usage: { ...ledger, replies_with_invalid_counts: usageProblems.length },
      served_models: served,
      finish_reasons: finishReasons(ok),
      failed_requests: requests.length - ok.length,
      ...(repeats > 1 ? { repeats: repeatFigures(options.tasks, samples, seed) } : {}),
      ...(shard ? { shard: { ...shard, requests: requests.length, of: planned.requests.length } } : {}),
      latency_ms: { median: percentileOf(latencies, 50), p95: percentileOf(latencies, 95) },
      // Each answer at the rate it was bought at (./cost.ts): online and batch answers of one folder each at theirs.
      ...(options.prices ? { cost: spentOn(ok, options.prices, unsaid.discount) } : {}),
      // Online answers beside batch ones (a resume or a retry that changed the way): each part with its own cost.
      ...(byWay.online && (f.batch || byWay.batch) ? { online: byWay.online } : {}),
      ...(f.batch
        ? {
            batch: {
              provider: f.batch.provider,
              batches: f.batch.ids,
              discount: f.batch.discount,
              ...(byWay.batch ?? { answers: 0, ...(options.prices ? { cost: 0 } : {}) }),
            },
          }
        : {}),
    },
  };
  for (const [name, t] of Object.entries(evaluation.tasks))
    Object.assign(t, { unparsed_rate: perTask[name]?.unparsed_rate ?? 0 });
  writeRunSummary(options.outDir, { kind: 'llm', ...summary });
  writeManifest(options.outDir, {
    rumedbench_version: VERSION,
    created: new Date().toISOString(),
    ...model,
    mode,
    ...(mode === 'loglik' ? { label_words: options.labelWords ?? false } : {}),
    params: options.params,
    seed,
    shots,
    splits,
    concurrency: options.concurrency,
    limit: options.limit ?? null,
    system_override: options.system ?? null,
    templates: options.templates ?? null,
    prompt_versions: Object.fromEntries(
      options.tasks.map((t) => [
        t.name,
        t.prompt.variants.find((v) => v.id === options.promptVariant)?.version ?? t.prompt.version,
      ]),
    ),
    prompt_variant: options.promptVariant ?? null,
    data_sha256: planned.dataFiles,
    shard: shard ?? null,
    repeats,
    perturb: options.perturb ?? null,
    ...options.manifest,
    ...f.extra,
  });
  return { evaluation, summary, outDir: options.outDir, sent: f.sent };
}

/**
 * A run whose requests failed is not scored unless the user accepts that many failures: a failed request is not a
 * wrong answer. Says how many failed, the first distinct reasons, and how to continue.
 */
function checkFailures(
  requests: readonly { key: string }[],
  journal: Journal,
  journalFile: string,
  allow: LlmRunOptions['allowFailures'],
): string | undefined {
  const failed = requests.map((j) => journal.get(j.key)).filter((e) => e?.status !== 'ok');
  if (failed.length === 0) return undefined;
  const allowed =
    allow === undefined ? 0 : 'count' in allow ? allow.count : (allow.percent / 100) * requests.length;
  const reasons = new Map<string, number>();
  for (const e of failed) {
    const why = (e?.error ?? 'not sent').slice(0, 300);
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
  }
  const top = [...reasons]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([why, n]) => `  ${n}× ${why}`);
  const more = reasons.size > 3 ? [`  … and ${reasons.size - 3} other reason(s)`] : [];
  const head = `${failed.length} of ${requests.length} requests failed`;
  if (failed.length > allowed) {
    throw new RumedbenchError(
      'RUN_INCOMPLETE',
      [
        `${head}, so the run is incomplete and was not scored:`,
        ...top,
        ...more,
        `Ask only those again with the same command and --retry-errors; or score them as wrong with --allow-failures ${failed.length}.`,
        `Every answer so far is kept in ${journalFile}.`,
      ].join('\n'),
    );
  }
  if (failed.length === requests.length) {
    throw new RumedbenchError(
      'LLM_REQUEST_FAILED',
      [`${head}: every one; nothing to score:`, ...top, ...more].join('\n'),
    );
  }
  return [`${head} and are scored as wrong (--allow-failures):`, ...top, ...more].join('\n');
}

/** How many replies ended for each reason the server gave (stop, length, content_filter, …). */
function finishReasons(ok: readonly JournalEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of ok) if (e.finishReason !== undefined) out[e.finishReason] = (out[e.finishReason] ?? 0) + 1;
  return out;
}

const FLAG_WORDS: Record<ReplyFlag, string> = {
  echo: "repeat the prompt's instruction (an echo, not an answer)",
  filtered: 'were withheld by the server (finish_reason content_filter)',
  empty: 'are empty',
  truncated_in_reasoning: 'were cut off by the token limit inside their reasoning',
  truncated: 'were cut off by the token limit (finish_reason length)',
};

/**
 * Says, per task, how many replies were echoes, filtered, empty or cut off; when more than half of the run's replies
 * could not be read for those reasons, the run is not scored (its samples.jsonl is written to look at), unless
 * `--allow-failures` covers that many: a score over echoes and cut-off replies measures the server, not the model.
 */
function checkReplies(options: FinishInput['options'], samples: readonly SampleLog[], log: Logger): void {
  const replies = samples.filter((s) => s.mode === 'generate' && s.status !== 'failed');
  if (replies.length === 0) return;
  const cutOff = new Set<ReplyFlag>(['truncated', 'truncated_in_reasoning']);
  for (const task of options.tasks) {
    const mine = replies.filter((s) => s.task === task.name);
    for (const flag of REPLY_FLAGS) {
      const n = mine.filter((s) => s.flag === flag).length;
      if (n === 0) continue;
      const unread = mine.filter((s) => s.flag === flag && s.status === 'unparsed').length;
      log.warn(
        `${task.name}: ${n} of ${mine.length} replies ${FLAG_WORDS[flag]}${flag === 'truncated' ? `, ${unread} of them before an answer` : ''}${cutOff.has(flag) ? `; raise --max-tokens (now ${options.params.maxTokens})` : ''}`,
      );
    }
  }
  const unusable = replies.filter((s) => s.flag !== undefined && s.status === 'unparsed');
  if (unusable.length * 2 <= replies.length) return;
  const allow = options.allowFailures;
  const allowed =
    allow === undefined ? 0 : 'count' in allow ? allow.count : (allow.percent / 100) * samples.length;
  const counts = REPLY_FLAGS.map((f) => [f, unusable.filter((s) => s.flag === f).length] as const)
    .filter(([, n]) => n > 0)
    .map(([f, n]) => `${n} ${f.replace(/_/g, ' ')}`)
    .join(', ');
  const head = `${unusable.length} of ${replies.length} replies could not be read as answers (${counts})`;
  if (unusable.length <= allowed) {
    log.warn(`${head}; scored as wrong (--allow-failures)`);
    return;
  }
  writeFileSync(join(options.outDir, 'samples.jsonl'), toJsonl(samples));
  throw new RumedbenchError(
    'REPLIES_UNUSABLE',
    [
      `${head}: more than half, so the run was not scored.`,
      'An echo means the server returns the prompt (a completion endpoint behind a chat URL, or a wrong chat template); cut-off replies need a larger --max-tokens; filtered ones another model or server.',
      `Every reply is in ${join(options.outDir, 'samples.jsonl')}; to score them as wrong anyway, --allow-failures ${unusable.length}.`,
    ].join('\n'),
  );
}

/** Before anything is sent: each log-likelihood task's first item must be one the engine's method can score. */
export async function checkLoglikTasks(provider: Provider, requests: readonly LlmRequest[]): Promise<void> {
  if (!provider.loglikLimitation) return;
  const seen = new Set<string>();
  const refused: string[] = [];
  for (const request of requests) {
    if (request.kind !== 'loglik' || seen.has(request.task.name)) continue;
    seen.add(request.task.name);
    const why = await provider.loglikLimitation({
      context: request.item.context,
      continuations: request.item.candidates.map((c) => c.text),
    });
    if (why) refused.push(`${request.task.name}: ${why}`);
  }
  if (refused.length > 0) {
    throw new RumedbenchError(
      'LOGLIK_UNSUPPORTED',
      `cannot score these tasks by log-likelihood on this server; nothing was sent:\n  ${refused.join('\n  ')}\nLeave them out (--tasks), use --mode generate, or a server that returns prompt log-probabilities (vLLM).`,
    );
  }
}
