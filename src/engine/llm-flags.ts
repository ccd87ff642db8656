/**
 * The flags of `rumedbench llm`, declared once, each with the run spec field it fills (`to`): `llmSpecOf`
 * (src/cli/llm.ts) makes a spec from them, `commandLineOf` writes a spec back as them, a plan reads their short forms
 * through them (src/plans/settings.ts), and docs/cli.md lists them. The `contamination` command takes the provider's.
 */
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { ANTHROPIC_BASE_URL } from '../llm/anthropic.js';
import { type Perturbation, parsePerturbations } from '../llm/perturb.js';
import { parsePromptVariants, readTemplates } from '../llm/prompt.js';
import { parseTaskList } from '../tasks/registry.js';
import * as flag from './flag-table.js';
import { isProviderName, providerNames, providerRecord } from './providers/registry.js';
import { parseAllowance, parseShard, resolveShard } from './short-forms.js';
import { LLM_DEFAULTS, secretHeaderProblem } from './spec.js';

/**
 * A provider's own setting `key`: taken by the providers whose spec has that field, as the registry stands when the
 * flags are read (a provider registered at run time takes the flags of the fields it has, and no others).
 */
const ownField = (key: string) => ({
  only: (name: string) => isProviderName(name) && Object.hasOwn(providerRecord(name).schema.shape, key),
});
/** A flag bound to the provider's own field `key` (`provider.<key>`), taken by the providers that have it. */
// biome-ignore lint/suspicious/noExplicitAny: a binding takes a flag of any value type
const ownFlag = <F extends flag.Flag<any>>(
  key: string,
  spec: F,
  how: Omit<flag.FieldBinding<F extends flag.Flag<infer T> ? T : never>, 'path' | 'only'> = {},
): F => flag.to(`provider.${key}`, spec, { ...how, ...ownField(key) });

/** `--provider`'s help: each registered provider's line, read when the command is parsed. */
const providersAbout = () => {
  const abouts = providerNames().map((n) => providerRecord(n).about);
  return abouts.length > 1 ? `${abouts.slice(0, -1).join(', ')}, or ${abouts.at(-1)}` : (abouts[0] ?? '');
};

/**
 * `--provider NAME`: one of the registered providers, its choices and its help read from the registry when the
 * command line is parsed (`llm`, `contamination`, `serve endpoint add`). `openai` is the one assumed.
 */
export const providerFlag = () =>
  flag.choice('--provider <name>', providersAbout, providerNames, { default: 'openai' });

/**
 * `"Name: value"` texts as a record of headers. A literal `--header` that carries a credential is refused here, by
 * name, not echoed: what was typed may be a key (a plan's reader names it at its line itself: `refuseSecrets` false).
 */
export function headerRecord(
  list: readonly string[],
  name: '--header' | '--header-env',
  refuseSecrets = true,
): Record<string, string> {
  const literal = name === '--header';
  return Object.fromEntries(
    list.map((h) => {
      const at = h.indexOf(':');
      if (at <= 0)
        throw new UsageError(
          `${name} must look like "Name: ${literal ? 'value' : 'VAR'}" (a name, a colon, then the ${literal ? 'value' : 'variable'})`,
        );
      const header = h.slice(0, at).trim();
      const problem = literal && refuseSecrets ? secretHeaderProblem(header) : undefined;
      if (problem) throw new UsageError(`--header: ${problem}`);
      return [header, h.slice(at + 1).trim()];
    }),
  );
}
const headerLines = (v: Record<string, string>) => Object.entries(v).map(([k, x]) => `${k}: ${x}`);

/** The perturbations as `--perturb` reads them. */
const perturbationsText = (v: readonly Perturbation[]) =>
  v.map((p) => (p.kind === 'typos' ? `typos=${p.rate}` : p.kind)).join(',');

export const LLM_FLAGS = {
  provider: flag.to('provider.name', providerFlag(), { writtenAtDefault: true }),
  model: flag.to(
    'provider.model',
    flag.text('--model <name>', 'model name as the endpoint knows it, or the .gguf file (--provider llama)', {
      required: true,
    }),
    {
      toField: (v, flags) =>
        providerRecord(String(flags.provider)).paths.includes('model') ? resolve(v) : v,
      isPath: true,
    },
  ),
  baseUrl: ownFlag(
    'base_url',
    flag.text(
      '--base-url <url>',
      `endpoint, e.g. http://localhost:8000/v1 (--provider anthropic: ${ANTHROPIC_BASE_URL} unless given)`,
    ),
  ),
  apiKeyEnv: ownFlag(
    'api_key_env',
    flag.text('--api-key-env <name>', 'environment variable that holds the API key'),
  ),
  header: ownFlag(
    'headers',
    flag.many(
      '--header <header>',
      'extra HTTP header "Name: value" (repeatable); not for credentials: see --header-env',
    ),
    { toField: (v) => headerRecord(v, '--header'), toValues: headerLines },
  ),
  headerEnv: ownFlag(
    'header_env',
    flag.many(
      '--header-env <header>',
      'extra HTTP header "Name: VAR" whose value is read from the environment variable VAR (repeatable): for keys',
    ),
    { toField: (v) => headerRecord(v, '--header-env'), toValues: headerLines },
  ),
  downAfter: ownFlag(
    'down_after',
    flag.count(
      '--down-after <n>',
      'requests in a row that cannot reach the server or time out before the run stops as "endpoint down" (0: never)',
      { min: 0, default: LLM_DEFAULTS.downAfter },
    ),
  ),
  timeoutMs: ownFlag(
    'timeout_ms',
    flag.count('--timeout-ms <n>', 'per-request timeout', {
      min: 1,
      default: LLM_DEFAULTS.timeoutMs,
    }),
  ),
  maxRetries: ownFlag(
    'max_retries',
    flag.count('--max-retries <n>', 'retries per request (429, 5xx, timeouts, dropped connections)', {
      min: 0,
      default: LLM_DEFAULTS.maxRetries,
    }),
  ),
  maxWait: ownFlag(
    'max_wait_s',
    flag.count(
      '--max-wait <s>',
      'the longest single wait before a retry; a longer Retry-After fails the request',
      {
        min: 1,
        default: LLM_DEFAULTS.maxWaitS,
      },
    ),
  ),
  maxReplyBytes: ownFlag(
    'max_reply_bytes',
    flag.count('--max-reply-bytes <n>', 'bytes of one reply at most; a longer one fails its request', {
      min: 1024,
      default: LLM_DEFAULTS.maxReplyBytes,
    }),
  ),
  contextSize: ownFlag(
    'context_size',
    flag.count('--context-size <n>', 'context window of the local model', {
      min: 64,
      default: LLM_DEFAULTS.contextSize,
    }),
  ),
  gpu: ownFlag('gpu', flag.on('--gpu', 'let the local model use a GPU where one is found')),
  threads: ownFlag(
    'threads',
    flag.count('--threads <n>', 'CPU threads of the local model (default: the cores)', { min: 1 }),
  ),
  mode: flag.to(
    'mode',
    flag.choice(
      '--mode <mode>',
      'generate (replies parsed) or loglik (candidates ranked by log-probability)',
      ['generate', 'loglik'],
      { default: LLM_DEFAULTS.mode },
    ),
  ),
  labelWords: flag.to(
    'label_words',
    flag.on('--label-words', 'loglik: score the RuMedNLI label words instead of the option numbers'),
  ),
  tasks: flag.to('tasks', flag.text('--tasks <list>', 'comma-separated task names (default: all)'), {
    toField: (v) => parseTaskList(v).map((t) => t.name),
    toValues: (v: string[]) => [v.join(',')],
  }),
  split: flag.to(
    'split',
    flag.choice('--split <split>', 'which splits to ask', ['test', 'private_test', 'both'], {
      default: LLM_DEFAULTS.split,
    }),
  ),
  data: flag.to(
    'data',
    flag.text('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)'),
    { toField: (v) => resolve(v), isPath: true },
  ),
  gold: flag.to('gold', flag.goldDirFlag(), { toField: (v) => resolve(v), isPath: true }),
  out: flag.text('--out <dir>', 'run folder', { required: true }),
  shots: flag.to(
    'shots',
    flag.count('--shots <k>', 'worked examples from train', { min: 0, default: LLM_DEFAULTS.shots }),
  ),
  seed: flag.to(
    'seed',
    flag.count('--seed <n>', 'seed for examples, sampling and the bootstrap', {
      min: 0,
      default: LLM_DEFAULTS.seed,
    }),
  ),
  temperature: flag.to(
    'temperature',
    flag.decimal('--temperature <t>', 'sampling temperature', {
      default: LLM_DEFAULTS.temperature,
    }),
  ),
  maxTokens: flag.to(
    'max_tokens',
    flag.count('--max-tokens <n>', 'completion tokens per reply', {
      min: 1,
      default: LLM_DEFAULTS.maxTokens,
    }),
  ),
  stop: flag.to('stop', flag.many('--stop <text>', 'stop sequence (repeatable)')),
  reasoningEffort: flag.to(
    'reasoning_effort',
    flag.choice(
      '--reasoning-effort <level>',
      "reasoning models: how hard to think (OpenAI's reasoning_effort)",
      ['low', 'medium', 'high'],
    ),
  ),
  thinkingBudget: flag.to(
    'thinking_budget',
    flag.count(
      '--thinking-budget <n>',
      "reasoning models: the most tokens to think with (Anthropic's thinking budget; chat templates that read thinking_budget)",
      { min: 1 },
    ),
  ),
  system: flag.to('system', flag.text('--system <text>', "replace the tasks' system prompt ('' sends none)")),
  template: flag.to(
    'templates',
    flag.text(
      '--template <file>',
      'JSON prompt overrides per task: { "<Task>": { "system", "instruction", "item" } }',
    ),
    {
      toField: (v) => readTemplates(v),
      notWritten: '<templates in the spec>',
      isPath: true,
    },
  ),
  concurrency: flag.to(
    'concurrency',
    flag.count(
      '--concurrency <n>',
      'requests in flight (default 8); --provider llama: sequences evaluated in parallel (default 1)',
      { min: 1 },
    ),
  ),
  allowFailures: flag.to(
    'allow_failures',
    flag.custom(
      '--allow-failures <n|p%>',
      'score the run although up to N requests (or P% of them) failed, counting those as wrong',
      parseAllowance,
    ),
    {
      toValues: (v: { count: number } | { percent: number }) => [
        'count' in v ? String(v.count) : `${v.percent}%`,
      ],
    },
  ),
  limit: flag.to('limit', flag.count('--limit <n>', 'at most N items per task and split', { min: 1 })),
  prompts: flag.to(
    'prompts',
    flag.text(
      '--prompts <ids>',
      "also ask with other formulations of each task's instruction, each a variant beside the run: all, or ids (p2,p3…)",
    ),
    {
      toField: (v, flags) => parsePromptVariants(v, parseTaskList(flags.tasks as string | undefined)),
      toValues: (v: string[]) => [v.join(',')],
    },
  ),
  perturb: flag.to(
    'perturb',
    flag.custom(
      '--perturb <list>',
      'also run the items perturbed, each as its own variant beside the clean run: typos=RATE,yo,case,shuffle-options',
      parsePerturbations,
    ),
    { toValues: (v: Perturbation[]) => [perturbationsText(v)] },
  ),
  repeats: flag.to(
    'repeats',
    flag.count(
      '--repeats <k>',
      'ask each generation item K times (sampling seed + r, for temperature > 0); the majority answer is scored',
      { min: 1, default: LLM_DEFAULTS.repeats },
    ),
  ),
  shard: flag.to(
    'shard',
    flag.custom(
      '--shard <i/n>',
      'only shard I of N of the requests (by a hash of each); auto/N takes I from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX; `merge` joins the shards',
      parseShard,
    ),
    {
      toField: (v) => resolveShard(v),
      toValues: (v: { index: number; count: number }) => [`${v.index}/${v.count}`],
    },
  ),
  resume: flag.on('--resume', 'continue the run in --out, sending only unanswered requests'),
  retryErrors: flag.on(
    '--retry-errors',
    'continue the run in --out, re-asking the requests that failed (and any never sent)',
  ),
  reask: flag.on(
    '--reask',
    'with --resume: ask again, and pay again, the items answered under other settings (the old answers are kept)',
  ),
  pricePrompt: flag.to(
    'prices.prompt',
    flag.decimal('--price-prompt <usd>', 'price per million prompt tokens'),
  ),
  priceCompletion: flag.to(
    'prices.completion',
    flag.decimal('--price-completion <usd>', 'price per million completion tokens'),
  ),
  priceCached: flag.to(
    'prices.cached',
    flag.decimal(
      '--price-cached <usd>',
      "price per million prompt tokens read from the server's cache (default: Anthropic 0.1× --price-prompt; others --price-prompt, in full)",
    ),
  ),
  priceCacheWrite: flag.to(
    'prices.cache_write',
    flag.decimal(
      '--price-cache-write <usd>',
      "price per million prompt tokens written to the server's cache (default: Anthropic 1.25× --price-prompt; others --price-prompt)",
    ),
  ),
  batch: flag.to(
    'batch',
    flag.on(
      '--batch',
      "send the requests as the provider's batches (OpenAI's Batch API, Anthropic's Message Batches: half price, results within 24 h) and wait for them",
    ),
    { toField: (v) => v || undefined },
  ),
  batchPoll: flag.to(
    'batch_poll_s',
    flag.decimal(
      '--batch-poll <s>',
      'the first wait between two looks at a batch (default 10 s; doubled up to 5 min)',
    ),
  ),
  batchDiscount: flag.to(
    'batch_discount',
    flag.decimal(
      '--batch-discount <share>',
      "the share of the prices a batch saves (default 0.5, the providers' discount)",
    ),
  ),
  batchDeadline: flag.to(
    'batch_deadline_h',
    flag.decimal(
      '--batch-deadline <h>',
      "how long to wait for a batch, hours after it was submitted (default 25: the providers' 24 h window and an hour); past it the run stops, and --resume collects the batch later",
    ),
  ),
  batchFile: flag.text(
    '--batch-file <file>',
    "write the run's requests as an OpenAI batch input file (for `vllm run-batch` or an upload by hand) and stop; nothing is sent",
  ),
  batchResults: flag.to(
    'batch_results',
    flag.text(
      '--batch-results <file>',
      "read a batch output file (OpenAI's format, as `vllm run-batch` writes it) into the run, instead of sending",
    ),
    { toField: (v) => resolve(v), isPath: true },
  ),
  maxCost: flag.to(
    'max_cost',
    flag.decimal(
      '--max-cost <usd>',
      'send nothing if the run may cost more (prompts counted, replies at --max-tokens); stop sending once it has',
    ),
  ),
  bootstrap: flag.to(
    'bootstrap',
    flag.count('--bootstrap <n>', 'bootstrap resamples for the score', {
      min: 0,
      default: LLM_DEFAULTS.bootstrap,
    }),
  ),
  progress: flag.on('--no-progress', 'no progress bar'),
  json: flag.on('--json', 'print summary.json on stdout'),
  proxy: flag.proxyFlag(),
} satisfies flag.FlagTable;
export type LlmFlags = flag.FlagsOf<typeof LLM_FLAGS>;
