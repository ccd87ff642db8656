/** `rumedbench llm`: a thin wrapper over runLlm with an OpenAI-compatible provider. */

import { existsSync } from 'node:fs';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { LlamaProvider } from '../llm/llama.js';
import { checkBaseUrl, OpenAIProvider, type RetryNotice } from '../llm/openai.js';
import type { RepeatFigures, TaskFigures } from '../llm/outputs.js';
import { parsePerturbations } from '../llm/perturb.js';
import { type PerturbationRuns, renderPerturbations, runPerturbations } from '../llm/perturbations.js';
import { readTemplates } from '../llm/prompt.js';
import {
  type PromptVariantRuns,
  parsePromptVariants,
  renderPromptVariants,
  runPromptVariants,
} from '../llm/prompt-variants.js';
import type { Provider } from '../llm/provider.js';
import { type LlmRunOptions, runLlm } from '../llm/run.js';
import { PAPER_ROWS, type PaperRow } from '../report/paper.js';
import { renderDetails, renderSummary, renderTable } from '../report/table.js';
import { parseTaskList, TASKS } from '../tasks/registry.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { progressBar } from './progress.js';

/** The flags of `rumedbench llm`, declared once: the command's flag type is inferred from this table. */
export const LLM_FLAGS = {
  provider: flag.choice(
    '--provider <name>',
    'an OpenAI-compatible endpoint, or a local GGUF model',
    ['openai', 'llama'],
    {
      default: 'openai',
    },
  ),
  model: flag.text(
    '--model <name>',
    'model name as the endpoint knows it, or the .gguf file (--provider llama)',
    {
      required: true,
    },
  ),
  contextSize: flag.count('--context-size <n>', 'context window of the local model', {
    min: 64,
    default: 4096,
  }),
  gpu: flag.on('--gpu', 'let the local model use a GPU where one is found'),
  threads: flag.count('--threads <n>', 'CPU threads of the local model (default: the cores)', { min: 1 }),
  mode: flag.choice(
    '--mode <mode>',
    'generate (replies parsed) or loglik (candidates ranked by log-probability)',
    ['generate', 'loglik'],
    { default: 'generate' },
  ),
  labelWords: flag.on(
    '--label-words',
    'loglik: score the RuMedNLI label words instead of the option numbers',
  ),
  baseUrl: flag.text('--base-url <url>', 'endpoint, e.g. http://localhost:8000/v1'),
  apiKeyEnv: flag.text('--api-key-env <name>', 'environment variable that holds the API key'),
  header: flag.many('--header <header>', 'extra HTTP header "Name: value" (repeatable)'),
  tasks: flag.text('--tasks <list>', 'comma-separated task names (default: all)'),
  split: flag.choice('--split <split>', 'which splits to ask', ['test', 'private_test', 'both'], {
    default: 'test',
  }),
  data: flag.text('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)'),
  out: flag.text('--out <dir>', 'run folder', { required: true }),
  shots: flag.count('--shots <k>', 'worked examples from train', { min: 0, default: 0 }),
  seed: flag.count('--seed <n>', 'seed for examples, sampling and the bootstrap', { min: 0, default: 0 }),
  temperature: flag.decimal('--temperature <t>', 'sampling temperature', { default: 0 }),
  maxTokens: flag.count('--max-tokens <n>', 'completion tokens per reply', { min: 1, default: 1024 }),
  stop: flag.many('--stop <text>', 'stop sequence (repeatable)'),
  system: flag.text('--system <text>', "replace the tasks' system prompt ('' sends none)"),
  template: flag.text(
    '--template <file>',
    'JSON prompt overrides per task: { "<Task>": { "system", "instruction", "item" } }',
  ),
  concurrency: flag.count(
    '--concurrency <n>',
    'requests in flight (default 8); --provider llama: sequences evaluated in parallel (default 1)',
    { min: 1 },
  ),
  timeoutMs: flag.count('--timeout-ms <n>', 'per-request timeout', { min: 1, default: 120_000 }),
  maxRetries: flag.count(
    '--max-retries <n>',
    'retries per request (429, 5xx, timeouts, dropped connections)',
    {
      min: 0,
      default: 6,
    },
  ),
  maxWait: flag.count(
    '--max-wait <s>',
    'the longest single wait before a retry; a longer Retry-After fails the request',
    {
      min: 1,
      default: 60,
    },
  ),
  maxReplyBytes: flag.count(
    '--max-reply-bytes <n>',
    'bytes of one reply at most; a longer one fails its request',
    {
      min: 1024,
      default: 4 << 20,
    },
  ),
  allowFailures: flag.custom(
    '--allow-failures <n|p%>',
    'score the run although up to N requests (or P% of them) failed, counting those as wrong',
    parseAllowance,
  ),
  limit: flag.count('--limit <n>', 'at most N items per task and split', { min: 1 }),
  prompts: flag.text(
    '--prompts <ids>',
    "also ask with other formulations of each task's instruction, each a variant beside the run: all, or ids (p2,p3…)",
  ),
  perturb: flag.custom(
    '--perturb <list>',
    'also run the items perturbed, each as its own variant beside the clean run: typos=RATE,yo,case,shuffle-options',
    parsePerturbations,
  ),
  repeats: flag.count(
    '--repeats <k>',
    'ask each generation item K times (sampling seed + r, for temperature > 0); the majority answer is scored',
    { min: 1, default: 1 },
  ),
  shard: flag.custom(
    '--shard <i/n>',
    'only shard I of N of the requests (by a hash of each); auto/N takes I from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX; `merge` joins the shards',
    parseShard,
  ),
  resume: flag.on('--resume', 'continue the run in --out, sending only unanswered requests'),
  retryErrors: flag.on(
    '--retry-errors',
    'continue the run in --out, re-asking only the requests that failed',
  ),
  pricePrompt: flag.decimal('--price-prompt <usd>', 'price per million prompt tokens'),
  priceCompletion: flag.decimal('--price-completion <usd>', 'price per million completion tokens'),
  bootstrap: flag.count('--bootstrap <n>', 'bootstrap resamples for the score', { min: 0, default: 1000 }),
  progress: flag.on('--no-progress', 'no progress bar'),
  json: flag.on('--json', 'print summary.json on stdout'),
} satisfies FlagTable;
export type LlmFlags = FlagsOf<typeof LLM_FLAGS>;

/** `--shard I/N` (I from 1) or `auto/N`. */
export function parseShard(v: string): { index: number | 'auto'; count: number } {
  const m = /^(\d+|auto)\/(\d+)$/.exec(v.trim());
  const count = Number(m?.[2]);
  const index = m?.[1] === 'auto' ? 'auto' : Number(m?.[1]);
  if (!m || count < 1 || (index !== 'auto' && (index < 1 || index > count)))
    throw new UsageError(`--shard: I/N with 1 ≤ I ≤ N (e.g. 2/8), or auto/N; got "${v}"`);
  return { index, count };
}

/** The shard this process runs: auto/N reads the array index a Slurm or Kubernetes job gives each of its tasks. */
export function resolveShard(
  s: { index: number | 'auto'; count: number },
  env: NodeJS.ProcessEnv = process.env,
): { index: number; count: number } {
  if (s.index !== 'auto') return { index: s.index, count: s.count };
  const raw = env.SLURM_ARRAY_TASK_ID ?? env.JOB_COMPLETION_INDEX;
  if (raw === undefined || !/^\d+$/.test(raw))
    throw new UsageError(
      '--shard auto/N: neither SLURM_ARRAY_TASK_ID (a Slurm array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set',
    );
  // Arrays number their tasks from 0 or from 1: either way, index mod N gives each of N tasks its own shard.
  return { index: (Number(raw) % s.count) + 1, count: s.count };
}

/** `--allow-failures`: a count (`12`) or a share of the run's requests (`2.5%`). */
function parseAllowance(v: string): { count: number } | { percent: number } {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(v.trim());
  const n = m ? Number(m[1]) : Number.NaN;
  if (!m || (m[2] === '%' ? n > 100 : !Number.isInteger(n)))
    throw new UsageError(
      `--allow-failures: a whole number of requests (12) or a percentage (2.5%), got "${v}"`,
    );
  return m[2] === '%' ? { percent: n } : { count: n };
}

function headers(list: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    list.map((h) => {
      const at = h.indexOf(':');
      if (at <= 0) throw new UsageError(`--header must look like "Name: value", got "${h}"`);
      return [h.slice(0, at).trim(), h.slice(at + 1).trim()];
    }),
  );
}

/** The flags a provider is made from (`llm`, and the probes of `contamination`). */
export type ProviderFlags = Pick<
  LlmFlags,
  | 'provider'
  | 'model'
  | 'contextSize'
  | 'gpu'
  | 'threads'
  | 'concurrency'
  | 'baseUrl'
  | 'apiKeyEnv'
  | 'header'
  | 'timeoutMs'
  | 'maxRetries'
  | 'maxWait'
  | 'maxReplyBytes'
>;

export async function makeProvider(flags: ProviderFlags, io: CliIo): Promise<Provider> {
  if (flags.provider === 'llama') {
    if (!existsSync(flags.model)) {
      throw new UsageError(`--provider llama needs --model PATH.gguf; ${flags.model} does not exist`);
    }
    // --concurrency N runs N sequences of one context, evaluated in batches by node-llama-cpp.
    return LlamaProvider.load({
      modelPath: flags.model,
      contextSize: flags.contextSize,
      gpu: flags.gpu ?? false,
      sequences: flags.concurrency ?? 1,
      ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    });
  }
  if (flags.provider !== 'openai')
    throw new UsageError(`unknown provider "${flags.provider}"; expected openai or llama`);
  if (!flags.baseUrl)
    throw new UsageError('--provider openai needs --base-url (e.g. http://localhost:8000/v1)');
  checkBaseUrl(flags.baseUrl);
  let apiKey: string | undefined;
  if (flags.apiKeyEnv) {
    apiKey = process.env[flags.apiKeyEnv];
    if (!apiKey)
      throw new UsageError(`--api-key-env ${flags.apiKeyEnv}: that environment variable is not set`);
  }
  return new OpenAIProvider({
    baseUrl: flags.baseUrl,
    model: flags.model,
    headers: headers(flags.header),
    timeoutMs: flags.timeoutMs,
    maxRetries: flags.maxRetries,
    maxInFlight: flags.concurrency ?? 8,
    maxWaitMs: flags.maxWait * 1000,
    maxReplyBytes: flags.maxReplyBytes,
    onRetry: retryNotices(io),
    ...(apiKey ? { apiKey } : {}),
  });
}

/**
 * Says on stderr why the run waits, when the wait is long enough to look like a hang (3 s or more, or after a
 * timed-out request), at most once a second.
 */
function retryNotices(io: CliIo): (n: RetryNotice) => void {
  let last = 0;
  return (n) => {
    const now = Date.now();
    if ((n.waitMs < 3000 && !/timed out/.test(n.reason)) || now - last < 1000) return;
    last = now;
    io.log.warn(
      `waiting ${(n.waitMs / 1000).toFixed(0)} s before retry ${n.attempt} of ${n.maxRetries}: ${n.reason}`,
    );
  };
}

/** Uniform guessing over each task's label space (train inventory for the open ones); – where it has none. */
function chanceRow(labelSpace: Record<string, number>): PaperRow {
  const tasks: PaperRow['tasks'] = {};
  for (const t of TASKS) {
    const k = labelSpace[t.name];
    if (k === undefined || t.kind === 'tagging') continue;
    tasks[t.name] =
      t.kind === 'ranking' ? { accuracy: 100 / k, hit_at_3: Math.min(100, 300 / k) } : { accuracy: 100 / k };
  }
  return { model: 'Chance', tasks, overall: Number.NaN };
}

/** The run's options as the flags give them, less the provider and the progress display (a worker's too). */
export function llmRunOptions(flags: LlmFlags, io: Pick<CliIo, 'log'>): Omit<LlmRunOptions, 'provider'> {
  return {
    tasks: parseTaskList(flags.tasks),
    splits: flags.split,
    mode: flags.mode,
    ...(flags.labelWords ? { labelWords: true } : {}),
    dataDir: resolveDataDir(flags.data),
    outDir: flags.out,
    shots: flags.shots,
    seed: flags.seed,
    params: {
      temperature: flags.temperature,
      maxTokens: flags.maxTokens,
      seed: flags.seed,
      ...(flags.stop.length > 0 ? { stop: flags.stop } : {}),
    },
    concurrency: flags.concurrency ?? (flags.provider === 'llama' ? 1 : 8),
    bootstrap: flags.bootstrap,
    logger: io.log,
    ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
    ...(flags.shard ? { shard: resolveShard(flags.shard) } : {}),
    ...(flags.repeats > 1 ? { repeats: flags.repeats } : {}),
    ...(flags.resume ? { resume: true } : {}),
    ...(flags.retryErrors ? { retryErrors: true } : {}),
    ...(flags.allowFailures ? { allowFailures: flags.allowFailures } : {}),
    ...(flags.provider === 'openai' ? { maxReplyBytes: flags.maxReplyBytes } : {}),
    ...(flags.system !== undefined ? { system: flags.system } : {}),
    ...(flags.template ? { templates: readTemplates(flags.template) } : {}),
    ...(flags.pricePrompt !== undefined && flags.priceCompletion !== undefined
      ? { prices: { prompt: flags.pricePrompt, completion: flags.priceCompletion } }
      : {}),
  };
}

export async function runLlmCommand(flags: LlmFlags, io: CliIo): Promise<number> {
  if ((flags.pricePrompt === undefined) !== (flags.priceCompletion === undefined)) {
    throw new UsageError('give both --price-prompt and --price-completion (per million tokens)');
  }
  if (flags.repeats > 1 && flags.mode === 'loglik')
    throw new UsageError(
      '--repeats: a log-likelihood score is the same each time; repeats are for generation',
    );
  if (flags.repeats > 1 && flags.temperature === 0)
    io.log.warn('--repeats at --temperature 0: a deterministic server gives the same answer each time');
  const perturbations = flags.perturb ?? [];
  const tasks = parseTaskList(flags.tasks);
  const promptIds = flags.prompts === undefined ? [] : parsePromptVariants(flags.prompts, tasks);
  if (promptIds.length > 0 && flags.mode === 'loglik')
    throw new UsageError(
      '--prompts: the formulations are of the generation instruction; use --mode generate',
    );
  const provider = await makeProvider(flags, io);
  let result: Awaited<ReturnType<typeof runLlm>>;
  let variants: PerturbationRuns | undefined;
  let formulations: PromptVariantRuns | undefined;
  try {
    const options: Parameters<typeof runLlm>[0] = {
      provider,
      ...llmRunOptions(flags, io),
      ...(io.onProgress
        ? { onProgress: io.onProgress }
        : flags.progress && !io.quiet && process.stderr.isTTY === true
          ? { onProgress: progressBar() }
          : {}),
    };
    result = await runLlm(options);
    if (promptIds.length > 0) formulations = await runPromptVariants(options, promptIds, io.log);
    if (perturbations.length > 0) variants = await runPerturbations(options, perturbations, io.log);
  } finally {
    await provider.close?.();
  }
  printLlmResult(result, flags.model, flags.json, io);
  if (formulations && !flags.json) io.out(`${renderPromptVariants(formulations)}\n`);
  if (variants && !flags.json) io.out(`${renderPerturbations(variants)}\n`);
  return EXIT.ok;
}

/** An LLM run's result on stdout: summary.json with --json, else the tables (also `merge`'s). */
export function printLlmResult(
  result: Awaited<ReturnType<typeof runLlm>>,
  label: string,
  json: boolean,
  io: CliIo,
): void {
  if (json) {
    io.out(`${JSON.stringify(result.summary)}\n`);
    return;
  }
  const llm = result.summary.llm as {
    mode: string;
    tasks: Record<string, TaskFigures>;
    requests: { total: number; sent_this_run: number; throughput_rps: number };
    usage: { prompt_tokens: number; completion_tokens: number };
    latency_ms: { median: number | null; p95: number | null };
    cost?: number;
    skipped: Record<string, string>;
    label_space: Record<string, number>;
    repeats?: Record<string, RepeatFigures>;
  };
  const rows = [
    chanceRow(llm.label_space),
    ...PAPER_ROWS.filter((r) => r.model === 'Naive' || r.model === 'Human'),
  ];
  io.out(
    `${[
      renderSummary(result.evaluation, { reference: true, label, rows }),
      renderDetails(result.evaluation),
      renderTable(
        [
          'task',
          'mode',
          'samples',
          'unparsed',
          'unparsed %',
          'failed',
          'acc',
          'acc_norm char',
          'acc_norm byte',
        ],
        Object.entries(llm.tasks).map(([t, v]) => [
          t,
          v.mode,
          String(v.samples),
          String(v.unparsed),
          v.unparsed_rate.toFixed(1),
          String(v.failed),
          v.acc?.toFixed(2) ?? '–',
          v.acc_norm_char?.toFixed(2) ?? '–',
          v.acc_norm_byte?.toFixed(2) ?? '–',
        ]),
        2,
      ),
      `requests: ${llm.requests.total} in the run, ${llm.requests.sent_this_run} sent now (${llm.requests.throughput_rps.toFixed(1)}/s); ` +
        `tokens: ${llm.usage.prompt_tokens} prompt + ${llm.usage.completion_tokens} completion; ` +
        `latency median ${llm.latency_ms.median?.toFixed(0) ?? '–'} ms, p95 ${llm.latency_ms.p95?.toFixed(0) ?? '–'} ms` +
        (llm.cost !== undefined ? `; cost ${llm.cost.toFixed(4)}` : ''),
      ...Object.entries(llm.tasks)
        .filter(([, v]) => v.calibration)
        .map(
          ([t, v]) =>
            `${t} calibration (${v.calibration?.n} items): ECE ${v.calibration?.ece.toFixed(3)}, equal-count ${v.calibration?.ece_adaptive.toFixed(3)}, Brier ${v.calibration?.brier.toFixed(3)}, NLL ${v.calibration?.nll.toFixed(3)}`,
        ),
      ...Object.entries(llm.repeats ?? {}).map(
        ([t, r]) =>
          `${t} over ${r.k} repeats: mean accuracy ${r.mean_accuracy?.toFixed(2) ?? '–'}${r.mean_accuracy_ci ? ` [${r.mean_accuracy_ci[0].toFixed(2)}, ${r.mean_accuracy_ci[1].toFixed(2)}]` : ''}, the same answer every time on ${r.consistency.toFixed(1)}% of items, ${r.flipped} flip`,
      ),
      ...Object.entries(llm.skipped).map(([t, why]) => `${t}: skipped: ${why}`),
      `run folder: ${result.outDir}`,
    ].join('\n\n')}\n`,
  );
}
