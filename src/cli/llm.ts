/** `rumedbench llm`: its flags made into a run spec, which the engine runs (src/engine). */

import { resolve } from 'node:path';
import { type RunOutcome, runEvaluation, writeBatchInput } from '../engine/run.js';
import { parseAllowance, parseShard, resolveShard } from '../engine/short-forms.js';
import {
  LLM_DEFAULTS,
  type LlmSpec,
  makeRunSpec,
  type ProviderSpec,
  RUN_SPEC_SCHEMA,
  secretHeaderProblem,
} from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { ANTHROPIC_BASE_URL, MIN_THINKING_BUDGET } from '../llm/anthropic.js';
import { parsePerturbations } from '../llm/perturb.js';
import { renderPerturbations } from '../llm/perturbations.js';
import { readTemplates } from '../llm/prompt.js';
import { parsePromptVariants, renderPromptVariants } from '../llm/prompt-variants.js';
import type { LlmRunResult } from '../llm/run.js';
import { PAPER_ROWS, type PaperRow } from '../report/paper.js';
import { renderDetails, renderSummary, renderTable, scoresPaperTask } from '../report/table.js';
import { parseTaskList, TASKS } from '../tasks/registry.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { progressBar } from './progress.js';

/** The flags of `rumedbench llm`, declared once: the command's flag type is inferred from this table. */
export const LLM_FLAGS = {
  provider: flag.choice(
    '--provider <name>',
    "an OpenAI-compatible endpoint, Anthropic's Messages API, or a local GGUF model",
    ['openai', 'anthropic', 'llama'],
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
    default: LLM_DEFAULTS.contextSize,
  }),
  gpu: flag.on('--gpu', 'let the local model use a GPU where one is found'),
  threads: flag.count('--threads <n>', 'CPU threads of the local model (default: the cores)', { min: 1 }),
  mode: flag.choice(
    '--mode <mode>',
    'generate (replies parsed) or loglik (candidates ranked by log-probability)',
    ['generate', 'loglik'],
    { default: LLM_DEFAULTS.mode },
  ),
  labelWords: flag.on(
    '--label-words',
    'loglik: score the RuMedNLI label words instead of the option numbers',
  ),
  baseUrl: flag.text(
    '--base-url <url>',
    `endpoint, e.g. http://localhost:8000/v1 (--provider anthropic: ${ANTHROPIC_BASE_URL} unless given)`,
  ),
  apiKeyEnv: flag.text('--api-key-env <name>', 'environment variable that holds the API key'),
  header: flag.many(
    '--header <header>',
    'extra HTTP header "Name: value" (repeatable); not for credentials: see --header-env',
  ),
  headerEnv: flag.many(
    '--header-env <header>',
    'extra HTTP header "Name: VAR" whose value is read from the environment variable VAR (repeatable): for keys',
  ),
  downAfter: flag.count(
    '--down-after <n>',
    'requests in a row that cannot reach the server or time out before the run stops as "endpoint down" (0: never)',
    { min: 0, default: LLM_DEFAULTS.downAfter },
  ),
  tasks: flag.text('--tasks <list>', 'comma-separated task names (default: all)'),
  split: flag.choice('--split <split>', 'which splits to ask', ['test', 'private_test', 'both'], {
    default: LLM_DEFAULTS.split,
  }),
  data: flag.text('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)'),
  gold: flag.goldDirFlag(),
  out: flag.text('--out <dir>', 'run folder', { required: true }),
  shots: flag.count('--shots <k>', 'worked examples from train', { min: 0, default: LLM_DEFAULTS.shots }),
  seed: flag.count('--seed <n>', 'seed for examples, sampling and the bootstrap', {
    min: 0,
    default: LLM_DEFAULTS.seed,
  }),
  temperature: flag.decimal('--temperature <t>', 'sampling temperature', {
    default: LLM_DEFAULTS.temperature,
  }),
  maxTokens: flag.count('--max-tokens <n>', 'completion tokens per reply', {
    min: 1,
    default: LLM_DEFAULTS.maxTokens,
  }),
  stop: flag.many('--stop <text>', 'stop sequence (repeatable)'),
  reasoningEffort: flag.choice(
    '--reasoning-effort <level>',
    "reasoning models: how hard to think (OpenAI's reasoning_effort)",
    ['low', 'medium', 'high'],
  ),
  thinkingBudget: flag.count(
    '--thinking-budget <n>',
    "reasoning models: the most tokens to think with (Anthropic's thinking budget; chat templates that read thinking_budget)",
    { min: 1 },
  ),
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
  timeoutMs: flag.count('--timeout-ms <n>', 'per-request timeout', {
    min: 1,
    default: LLM_DEFAULTS.timeoutMs,
  }),
  maxRetries: flag.count(
    '--max-retries <n>',
    'retries per request (429, 5xx, timeouts, dropped connections)',
    {
      min: 0,
      default: LLM_DEFAULTS.maxRetries,
    },
  ),
  maxWait: flag.count(
    '--max-wait <s>',
    'the longest single wait before a retry; a longer Retry-After fails the request',
    {
      min: 1,
      default: LLM_DEFAULTS.maxWaitS,
    },
  ),
  maxReplyBytes: flag.count(
    '--max-reply-bytes <n>',
    'bytes of one reply at most; a longer one fails its request',
    {
      min: 1024,
      default: LLM_DEFAULTS.maxReplyBytes,
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
    { min: 1, default: LLM_DEFAULTS.repeats },
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
  priceCached: flag.decimal(
    '--price-cached <usd>',
    "price per million prompt tokens read from the server's cache (default: Anthropic 0.1× --price-prompt; others --price-prompt, in full)",
  ),
  priceCacheWrite: flag.decimal(
    '--price-cache-write <usd>',
    "price per million prompt tokens written to the server's cache (default: Anthropic 1.25× --price-prompt; others --price-prompt)",
  ),
  batch: flag.on(
    '--batch',
    "send the requests as the provider's batches (OpenAI's Batch API, Anthropic's Message Batches: half price, results within 24 h) and wait for them",
  ),
  batchPoll: flag.decimal(
    '--batch-poll <s>',
    'the first wait between two looks at a batch (default 10 s; doubled up to 5 min)',
  ),
  batchDiscount: flag.decimal(
    '--batch-discount <share>',
    "the share of the prices a batch saves (default 0.5, the providers' discount)",
  ),
  batchDeadline: flag.decimal(
    '--batch-deadline <h>',
    "how long to wait for a batch, hours after it was submitted (default 25: the providers' 24 h window and an hour); past it the run stops, and --resume collects the batch later",
  ),
  batchFile: flag.text(
    '--batch-file <file>',
    "write the run's requests as an OpenAI batch input file (for `vllm run-batch` or an upload by hand) and stop; nothing is sent",
  ),
  batchResults: flag.text(
    '--batch-results <file>',
    "read a batch output file (OpenAI's format, as `vllm run-batch` writes it) into the run, instead of sending",
  ),
  maxCost: flag.decimal(
    '--max-cost <usd>',
    'send nothing if the run may cost more (prompts counted, replies at --max-tokens); stop sending once it has',
  ),
  bootstrap: flag.count('--bootstrap <n>', 'bootstrap resamples for the score', {
    min: 0,
    default: LLM_DEFAULTS.bootstrap,
  }),
  progress: flag.on('--no-progress', 'no progress bar'),
  json: flag.on('--json', 'print summary.json on stdout'),
  proxy: flag.proxyFlag(),
} satisfies FlagTable;
export type LlmFlags = FlagsOf<typeof LLM_FLAGS>;

function headers(list: readonly string[], flag = '--header'): Record<string, string> {
  return Object.fromEntries(
    list.map((h) => {
      const at = h.indexOf(':');
      if (at <= 0)
        // Not echoed: what was typed may be a key.
        throw new UsageError(
          `${flag} must look like "Name: ${flag === '--header' ? 'value' : 'VAR'}" (a name, a colon, then the ${flag === '--header' ? 'value' : 'variable'})`,
        );
      const name = h.slice(0, at).trim();
      if (flag === '--header') {
        const problem = secretHeaderProblem(name);
        if (problem) throw new UsageError(`--header: ${problem}`);
      }
      return [name, h.slice(at + 1).trim()];
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
  | 'baseUrl'
  | 'apiKeyEnv'
  | 'header'
  | 'headerEnv'
  | 'downAfter'
  | 'timeoutMs'
  | 'maxRetries'
  | 'maxWait'
  | 'maxReplyBytes'
>;

/** The provider part of a spec, from the flags. */
export function providerSpecOf(flags: ProviderFlags): ProviderSpec {
  if (flags.provider === 'llama')
    return {
      name: 'llama',
      model: resolve(flags.model),
      context_size: flags.contextSize,
      gpu: flags.gpu ?? false,
      ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    };
  if (flags.provider !== 'openai' && flags.provider !== 'anthropic')
    throw new UsageError(`unknown provider "${flags.provider}"; expected openai, anthropic or llama`);
  if (flags.provider === 'openai' && !flags.baseUrl)
    throw new UsageError('--provider openai needs --base-url (e.g. http://localhost:8000/v1)');
  return {
    name: flags.provider,
    model: flags.model,
    base_url: flags.baseUrl ?? ANTHROPIC_BASE_URL,
    ...(flags.apiKeyEnv ? { api_key_env: flags.apiKeyEnv } : {}),
    headers: headers(flags.header),
    header_env: headers(flags.headerEnv, '--header-env'),
    down_after: flags.downAfter,
    timeout_ms: flags.timeoutMs,
    max_retries: flags.maxRetries,
    max_wait_s: flags.maxWait,
    max_reply_bytes: flags.maxReplyBytes,
  };
}

/** The run spec the flags of `llm` stand for: every flag a field, every default filled by the spec. */
export function llmSpecOf(flags: LlmFlags): LlmSpec {
  if ((flags.pricePrompt === undefined) !== (flags.priceCompletion === undefined))
    throw new UsageError('give both --price-prompt and --price-completion (per million tokens)');
  if (
    (flags.priceCached !== undefined || flags.priceCacheWrite !== undefined) &&
    flags.pricePrompt === undefined
  )
    throw new UsageError(
      '--price-cached and --price-cache-write go with the prices they refine: --price-prompt and --price-completion',
    );
  if (flags.maxCost !== undefined && flags.pricePrompt === undefined)
    throw new UsageError(
      '--max-cost needs the prices: --price-prompt and --price-completion (USD per million tokens)',
    );
  if (
    flags.provider === 'llama' &&
    (flags.reasoningEffort !== undefined || flags.thinkingBudget !== undefined)
  )
    throw new UsageError(
      '--reasoning-effort and --thinking-budget are read by model servers (--provider openai or anthropic), not by a local GGUF model',
    );
  if (flags.batch && flags.provider === 'llama')
    throw new UsageError(
      "--batch sends the requests as a provider's batch (--provider openai or anthropic); a local model has none",
    );
  if ((flags.batchFile !== undefined || flags.batchResults !== undefined) && flags.provider !== 'openai')
    throw new UsageError('--batch-file and --batch-results are OpenAI batch files: --provider openai');
  if ((flags.batchFile !== undefined || flags.batchResults !== undefined) && flags.mode === 'loglik')
    throw new UsageError(
      '--batch-file and --batch-results hold chat requests; a log-likelihood run is sent online',
    );
  if (flags.batch && (flags.batchFile !== undefined || flags.batchResults !== undefined))
    throw new UsageError(
      '--batch sends the batch itself; --batch-file and --batch-results are for a batch run elsewhere',
    );
  if (flags.batch && flags.mode === 'loglik')
    throw new UsageError(
      '--batch sends chat requests; a log-likelihood run is sent online (--mode generate with --batch)',
    );
  if (
    !flags.batch &&
    (flags.batchPoll !== undefined || flags.batchDiscount !== undefined || flags.batchDeadline !== undefined)
  )
    throw new UsageError('--batch-poll, --batch-discount and --batch-deadline go with --batch');
  if (flags.provider === 'anthropic') {
    if (flags.reasoningEffort !== undefined)
      throw new UsageError(
        "--reasoning-effort is OpenAI's setting; Anthropic's models think within --thinking-budget N",
      );
    if (flags.mode === 'loglik')
      throw new UsageError(
        '--provider anthropic: the Messages API returns no log-probabilities; use --mode generate',
      );
    const budget = flags.thinkingBudget;
    if (budget !== undefined && (budget < MIN_THINKING_BUDGET || budget >= flags.maxTokens))
      throw new UsageError(
        `--thinking-budget ${budget}: Anthropic takes at least ${MIN_THINKING_BUDGET} tokens, and fewer than --max-tokens (${flags.maxTokens}), which the thinking counts against`,
      );
  }
  const tasks = parseTaskList(flags.tasks);
  return makeRunSpec(
    {
      schema: RUN_SPEC_SCHEMA,
      kind: 'llm',
      provider: providerSpecOf(flags),
      tasks: tasks.map((t) => t.name),
      split: flags.split,
      ...(flags.data !== undefined ? { data: resolve(flags.data) } : {}),
      ...(flags.gold !== undefined ? { gold: resolve(flags.gold) } : {}),
      mode: flags.mode,
      label_words: flags.labelWords,
      shots: flags.shots,
      seed: flags.seed,
      temperature: flags.temperature,
      max_tokens: flags.maxTokens,
      stop: flags.stop,
      ...(flags.reasoningEffort !== undefined ? { reasoning_effort: flags.reasoningEffort } : {}),
      ...(flags.thinkingBudget !== undefined ? { thinking_budget: flags.thinkingBudget } : {}),
      ...(flags.system !== undefined ? { system: flags.system } : {}),
      ...(flags.template ? { templates: readTemplates(flags.template) } : {}),
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
      prompts: flags.prompts === undefined ? [] : parsePromptVariants(flags.prompts, tasks),
      perturb: flags.perturb ?? [],
      repeats: flags.repeats,
      ...(flags.shard ? { shard: resolveShard(flags.shard) } : {}),
      ...(flags.allowFailures ? { allow_failures: flags.allowFailures } : {}),
      ...(flags.pricePrompt !== undefined && flags.priceCompletion !== undefined
        ? {
            prices: {
              prompt: flags.pricePrompt,
              completion: flags.priceCompletion,
              ...(flags.priceCached !== undefined ? { cached: flags.priceCached } : {}),
              ...(flags.priceCacheWrite !== undefined ? { cache_write: flags.priceCacheWrite } : {}),
            },
          }
        : {}),
      ...(flags.maxCost !== undefined ? { max_cost: flags.maxCost } : {}),
      ...(flags.batch ? { batch: true } : {}),
      ...(flags.batchResults !== undefined ? { batch_results: resolve(flags.batchResults) } : {}),
      ...(flags.batchPoll !== undefined ? { batch_poll_s: flags.batchPoll } : {}),
      ...(flags.batchDiscount !== undefined ? { batch_discount: flags.batchDiscount } : {}),
      ...(flags.batchDeadline !== undefined ? { batch_deadline_h: flags.batchDeadline } : {}),
      bootstrap: flags.bootstrap,
    },
    'the flags of llm',
  ) as LlmSpec;
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

export async function runLlmCommand(flags: LlmFlags, io: CliIo): Promise<number> {
  const spec = llmSpecOf(flags);
  if (flags.batchFile !== undefined) {
    const file = resolve(flags.batchFile);
    const n = await writeBatchInput(spec, file, io.log);
    io.log.info(
      `wrote ${n} requests to ${file}; nothing was sent. Run them (\`vllm run-batch -i ${file} -o results.jsonl --model ${spec.provider.model}\`, or an upload to a Batch API), then read the results in: the same command with --batch-results results.jsonl --resume instead of --batch-file`,
    );
    return EXIT.ok;
  }
  const outcome = await runEvaluation(spec, {
    out: flags.out,
    log: io.log,
    ...(flags.resume ? { resume: true } : {}),
    ...(flags.retryErrors ? { retryErrors: true } : {}),
    ...progressOf(io, flags.progress),
  });
  if (outcome.kind === 'llm') printOutcome(outcome, flags.json, io);
  return EXIT.ok;
}

/** Where an LLM run's progress goes: the caller's hook, else a bar on a terminal. */
export function progressOf(io: CliIo, wanted: boolean): { onProgress?: NonNullable<CliIo['onProgress']> } {
  if (io.onProgress) return { onProgress: io.onProgress };
  return wanted && !io.quiet && process.stderr.isTTY === true ? { onProgress: progressBar() } : {};
}

/** An LLM run's outcome on stdout: its tables, and those of its formulations and perturbations. */
export function printOutcome(outcome: Extract<RunOutcome, { kind: 'llm' }>, json: boolean, io: CliIo): void {
  printLlmResult(outcome.result, outcome.spec.provider.model, json, io);
  if (outcome.formulations && !json) io.out(`${renderPromptVariants(outcome.formulations)}\n`);
  if (outcome.variants && !json) io.out(`${renderPerturbations(outcome.variants)}\n`);
}

/** An LLM run's result on stdout: summary.json with --json, else the tables (also `merge`'s). */
export function printLlmResult(result: LlmRunResult, label: string, json: boolean, io: CliIo): void {
  if (json) {
    io.out(`${JSON.stringify(result.summary)}\n`);
    return;
  }
  const llm = result.summary.llm;
  const rows = [
    chanceRow(llm.label_space),
    ...PAPER_ROWS.filter((r) => r.model === 'Naive' || r.model === 'Human'),
  ];
  io.out(
    `${[
      ...(scoresPaperTask(result.evaluation)
        ? [renderSummary(result.evaluation, { reference: true, label, rows })]
        : []),
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
