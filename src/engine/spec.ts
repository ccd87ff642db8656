/**
 * Run specs: one typed, versioned value per kind of run, the only thing the engine runs. Every entry point (the CLI's
 * flags, a plan's cell, a queued job, an evaluation the platform runs) builds one and hands it to `runEvaluation`;
 * what is stored (a manifest, a plan's state, a queue row) is the spec as JSON, never a command line. Every default
 * is filled here, once, when the spec is made (`makeRunSpec`); the CLI's flag tables show these same values.
 */
import { z } from 'zod';
import { canonical } from '../data/canonical.js';
import { RunSpecError } from '../errors.js';
import { BATCH_DEFAULTS } from '../llm/batch.js';
import { ORDER_DEFAULTS } from '../llm/contamination.js';
import { pricesFor } from '../llm/cost.js';
import { getTask, isTaskName, TASKS } from '../tasks/registry.js';
import { loadUserTasks } from '../tasks/user.js';
import {
  type BuiltInProviderSpec,
  isProviderName,
  providerNames,
  providerRecord,
  recordOf,
} from './providers/registry.js';
import { apiKeyEnv, LLM_DEFAULTS, whole } from './spec-parts.js';

export {
  apiKeyEnv,
  apiKeyEnvProblem,
  LLM_DEFAULTS,
  SECRET_HEADER,
  secretHeaderProblem,
} from './spec-parts.js';

export const RUN_SPEC_SCHEMA = 'rumedbench.run/1';

/** The defaults of a baseline run. */
export const BASELINE_DEFAULTS = { trainSplit: 'train', seed: 0, bootstrap: 1000 } as const;

/**
 * The definition files of the spec's tasks defined in files (absolute paths; filled by makeRunSpec): read before
 * the spec is checked, wherever it runs, so that a manifest, a plan's cell or a queued job repeats the run as made.
 */
const taskFiles = z.array(z.string().min(1)).optional();
/**
 * A folder of gold held apart from the data (`--gold DIR`: `<Task>.jsonl`, ids and gold): the test splits may then
 * carry no answers; the run reads its records without gold and only its scoring reads this folder, so that no
 * prediction, sample or log of the run folder can hold the gold.
 */
const heldGold = z.string().min(1).optional();
const taskList = z
  .array(z.string())
  .min(1)
  .superRefine((list, ctx) => {
    for (const t of list)
      if (!isTaskName(t))
        ctx.addIssue({
          code: 'custom',
          message: `unknown task "${t}"; the tasks are ${TASKS.map((x) => x.name).join(', ')}`,
        });
  })
  .default(() => TASKS.map((t) => t.name));

/**
 * A provider's part of a spec: read by the schema of the provider it names (./providers/registry.ts), so that a
 * provider registered later is checked as the built-in ones are.
 */
export const providerSpec = z.unknown().transform((v, ctx): BuiltInProviderSpec => {
  const name = typeof v === 'object' && v !== null ? (v as Record<string, unknown>).name : undefined;
  if (!isProviderName(name)) {
    ctx.issues.push({
      code: 'custom',
      path: ['name'],
      message: `one of ${providerNames().join(', ')}, got ${JSON.stringify(name)}`,
      input: v,
    });
    return z.NEVER;
  }
  const r = providerRecord(name).schema.safeParse(v);
  if (r.success) return r.data as BuiltInProviderSpec;
  for (const issue of r.error.issues) ctx.issues.push({ ...issue, input: v } as never);
  return z.NEVER;
});

const template = z
  .object({ system: z.string().optional(), instruction: z.string().optional(), item: z.string().optional() })
  .strict();

const perturbation = z
  .object({
    kind: z.enum(['typos', 'yo', 'case', 'shuffle-options']),
    rate: z.number().gt(0).lte(1).optional(),
  })
  .strict();

/** A spec's prices with the cache prices its provider defaults to filled in, once (see `prices` below). */
function cachePricesFilled(
  provider: string,
  p: { prompt: number; completion: number; cached?: number | undefined; cache_write?: number | undefined },
): { prompt: number; completion: number; cached: number; cache_write: number } {
  const filled = pricesFor(providerRecord(provider).cachePricing, {
    prompt: p.prompt,
    completion: p.completion,
    ...(p.cached !== undefined ? { cached: p.cached } : {}),
    ...(p.cache_write !== undefined ? { cacheWrite: p.cache_write } : {}),
  });
  return {
    prompt: filled.prompt,
    completion: filled.completion,
    cached: filled.cached,
    cache_write: filled.cacheWrite,
  };
}

const llmFields = z
  .object({
    schema: z.literal(RUN_SPEC_SCHEMA),
    kind: z.literal('llm'),
    provider: providerSpec,
    tasks: taskList,
    task_files: taskFiles,
    split: z.enum(['test', 'private_test', 'both']).default(LLM_DEFAULTS.split),
    /** The data folder; absent: $RUMEDBENCH_DATA, else the user cache folder, on the machine that runs it. */
    data: z.string().min(1).optional(),
    gold: heldGold,
    mode: z.enum(['generate', 'loglik']).default(LLM_DEFAULTS.mode),
    label_words: z.boolean().default(false),
    shots: whole(0).default(LLM_DEFAULTS.shots),
    seed: whole(0).default(LLM_DEFAULTS.seed),
    temperature: z.number().min(0).default(LLM_DEFAULTS.temperature),
    max_tokens: whole(1).default(LLM_DEFAULTS.maxTokens),
    stop: z.array(z.string()).default([]),
    /** Reasoning models: OpenAI's `reasoning_effort`. */
    reasoning_effort: z.enum(['low', 'medium', 'high']).optional(),
    /** Reasoning models: the most tokens to think with (Anthropic's budget; a chat template's `thinking_budget`). */
    thinking_budget: whole(1).optional(),
    /** Replaces the tasks' system prompt ('' sends none). */
    system: z.string().optional(),
    /** Prompt overrides per task, held in the spec itself so that the run can be repeated without the file. */
    templates: z.record(z.string(), template).optional(),
    concurrency: whole(1).optional(),
    limit: whole(1).optional(),
    /** Other formulations of each task's instruction, each run beside the main one. */
    prompts: z.array(z.string()).default([]),
    perturb: z.array(perturbation).default([]),
    repeats: whole(1).default(LLM_DEFAULTS.repeats),
    shard: z
      .object({ index: whole(1), count: whole(1) })
      .strict()
      .optional(),
    allow_failures: z
      .union([
        z.object({ count: whole(0) }).strict(),
        z.object({ percent: z.number().min(0).max(100) }).strict(),
      ])
      .optional(),
    /**
     * USD per million tokens: prompt, completion, and prompt tokens read from (`cached`) or written to
     * (`cache_write`) a prompt cache. The cache prices default by provider (src/llm/cost.ts `pricesFor`):
     * Anthropic's 0.1× and 1.25× of `prompt`; elsewhere `prompt` itself, never less than a server may bill.
     */
    prices: z
      .object({
        prompt: z.number().min(0),
        completion: z.number().min(0),
        cached: z.number().min(0).optional(),
        cache_write: z.number().min(0).optional(),
      })
      .strict()
      .optional(),
    /** USD at `prices`: a run whose estimate passes it sends nothing; one whose spending reaches it stops. */
    max_cost: z.number().gt(0).optional(),
    /** Sent as the provider's batches (OpenAI's Batch API), priced at `batch_discount` off. */
    batch: z.boolean().optional(),
    /** The first wait between two looks at a batch, in seconds (doubled up to five minutes). */
    batch_poll_s: z.number().gt(0).optional(),
    /** The share of the prices a batch saves; 0.5 (the providers' batch discount) when absent (filled for a batch). */
    batch_discount: z.number().min(0).max(1).optional(),
    /** How long a batch is waited for, hours after it was submitted; 25 (the providers' 24 h window and an hour). */
    batch_deadline_h: z.number().gt(0).optional(),
    /** A batch output file (OpenAI's format; `vllm run-batch` writes it) read into the run instead of sending. */
    batch_results: z.string().min(1).optional(),
    bootstrap: whole(0).default(LLM_DEFAULTS.bootstrap),
  })
  .strict();

/** A provider part that parsed: zod goes on to the whole spec's rules after a provider was refused. */
const known = (p: unknown): p is BuiltInProviderSpec =>
  typeof p === 'object' && p !== null && isProviderName((p as { name?: unknown }).name);

/**
 * What no single field can say: settings a provider or a mode does not take, and settings that need another. Every
 * door meets these: a plan's cells and a spec file in the fields' words, the CLI's flags in theirs (each field named
 * becomes its flag, `inFlagWords`), so a problem is written once, here, with its field first.
 */
function llmProblems(s: z.output<typeof llmFields>): string[] {
  const out: string[] = [];
  const p = s.provider.name;
  if (s.max_cost !== undefined && s.prices === undefined)
    out.push('max_cost: needs prices (USD per million tokens)');
  // A provider that is not one is reported by its own field; the rules below are its record's.
  if (!known(s.provider)) return out;
  const record = recordOf(s.provider);
  out.push(...(record.problems?.(s, s.provider) ?? []));
  if (s.batch && !record.batches) {
    const have = providerNames().filter((n) => providerRecord(n).batches);
    out.push(
      `batch: a provider's batch (${have.join(' or ')}); ${record.local ? 'a local model' : p} has none`,
    );
  }
  if (s.batch && s.mode === 'loglik')
    out.push('batch: sends chat requests; a log-likelihood run is sent online');
  if (s.batch && s.batch_results !== undefined)
    out.push('batch_results: for a batch run elsewhere, not with batch (which sends it)');
  if (s.batch_results !== undefined && (!record.batchFile || s.mode === 'loglik'))
    out.push('batch_results: an OpenAI batch output file of chat requests (provider openai, mode generate)');
  if (
    !s.batch &&
    (s.batch_poll_s !== undefined || s.batch_discount !== undefined || s.batch_deadline_h !== undefined)
  )
    out.push('batch_poll_s, batch_discount, batch_deadline_h: go with batch: true');
  if (s.repeats > 1 && s.mode === 'loglik')
    out.push('repeats: a log-likelihood score is the same each time; repeats are for generation');
  if (s.prompts.length > 0 && s.mode === 'loglik')
    out.push('prompts: the formulations are of the generation instruction; use mode generate');
  if (s.prompts.length > 0 && s.tasks.every((t) => isTaskName(t))) {
    const known = [...new Set(s.tasks.flatMap((t) => getTask(t).prompt.variants.map((v) => v.id)))];
    const unknown = s.prompts.filter((id) => !known.includes(id));
    if (unknown.length > 0) out.push(`prompts: ids among ${known.join(', ')}; got ${unknown.join(', ')}`);
  }
  return out;
}

const llmSpec = llmFields
  .superRefine((s, ctx) => {
    for (const problem of llmProblems(s)) {
      const at = problem.indexOf(': ');
      ctx.addIssue({ code: 'custom', path: [problem.slice(0, at)], message: problem.slice(at + 2) });
    }
  })
  // zod runs this after a provider that is not one has been reported: the spec is refused then, whatever it returns.
  .transform((s) => ({
    ...s,
    concurrency: s.concurrency ?? (known(s.provider) ? providerRecord(s.provider.name).concurrency : 1),
    prices: s.prices && known(s.provider) ? cachePricesFilled(s.provider.name, s.prices) : undefined,
    // A batch run's waits and price, filled here once (the providers' defaults: `BATCH_DEFAULTS`).
    ...(s.batch
      ? {
          batch_poll_s: s.batch_poll_s ?? BATCH_DEFAULTS.pollS,
          batch_discount: s.batch_discount ?? BATCH_DEFAULTS.discount,
          batch_deadline_h: s.batch_deadline_h ?? BATCH_DEFAULTS.deadlineH,
        }
      : {}),
  }));

/** A batch spec's waits and price as the harness takes them (filled by `makeRunSpec`); undefined for an online run. */
export function batchSettingsOf(
  spec: LlmSpec,
): { pollS: number; discount: number; deadlineH: number } | undefined {
  if (!spec.batch) return undefined;
  const { batch_poll_s: pollS, batch_discount: discount, batch_deadline_h: deadlineH } = spec;
  if (pollS === undefined || discount === undefined || deadlineH === undefined)
    throw new RunSpecError('run spec', [
      'batch: a batch spec not made by makeRunSpec (its waits are not filled)',
    ]);
  return { pollS, discount, deadlineH };
}

const encoderSpec = z
  .object({
    /** A model folder or hub id (in process), or the model's name at `endpoint`. */
    model: z.string().min(1),
    endpoint: z.string().min(1).optional(),
    api_key_env: apiKeyEnv.optional(),
    pooling: z.enum(['mean', 'cls']).optional(),
    dtype: z.enum(['fp32', 'q8']).optional(),
    max_length: whole(4).optional(),
    batch_size: whole(1).optional(),
    /** An embeddings endpoint: dimensions of one vector at most (16,384 when absent). */
    max_dimensions: whole(1).optional(),
    C: z.number().gt(0).optional(),
    /** The embedding cache: a folder, false for none; absent: the user cache folder. */
    cache: z.union([z.string().min(1), z.literal(false)]).optional(),
    download: z.boolean().default(true),
  })
  .strict();

const baselineFields = z
  .object({
    schema: z.literal(RUN_SPEC_SCHEMA),
    kind: z.literal('baseline'),
    method: z.enum(['naive', 'tfidf', 'encoder', 'bilstm']),
    encoder: encoderSpec.optional(),
    /** bilstm: epochs at most, and the early-stopping patience (src/baselines/bilstm.ts has the defaults). */
    epochs: whole(1).optional(),
    patience: whole(1).optional(),
    tasks: taskList,
    task_files: taskFiles,
    data: z.string().min(1).optional(),
    gold: heldGold,
    train_split: z.enum(['train', 'dev']).default(BASELINE_DEFAULTS.trainSplit),
    seed: whole(0).default(BASELINE_DEFAULTS.seed),
    threads: whole(1).optional(),
    bootstrap: whole(0).default(BASELINE_DEFAULTS.bootstrap),
    /** Save each trained model under this folder. */
    save: z.string().min(1).optional(),
  })
  .strict();

const baselineSpec = baselineFields.superRefine((s, ctx) => {
  for (const k of ['epochs', 'patience'] as const)
    if (s[k] !== undefined && s.method !== 'bilstm')
      ctx.addIssue({ code: 'custom', path: [k], message: 'only for method bilstm' });
  if (s.method === 'bilstm' && s.threads !== undefined && s.threads > 2)
    ctx.addIssue({
      code: 'custom',
      path: ['threads'],
      message: 'method bilstm runs at most 2 threads, one per direction of each layer',
    });
  if ((s.method === 'encoder') !== (s.encoder !== undefined))
    ctx.addIssue({
      code: 'custom',
      path: ['encoder'],
      message:
        s.method === 'encoder' ? 'method encoder needs encoder: { model, … }' : 'only for method encoder',
    });
  if (s.encoder !== undefined && s.encoder.endpoint === undefined && s.encoder.max_dimensions !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['encoder', 'max_dimensions'],
      message: 'for an embeddings endpoint, not a model run here',
    });
  if (s.encoder?.endpoint !== undefined) {
    const local = [
      ...(['pooling', 'dtype', 'max_length'] as const)
        .filter((k) => s.encoder?.[k] !== undefined)
        .map((k) => `encoder.${k}`),
      ...(s.save !== undefined ? ['save'] : []),
      ...(s.encoder.download === false ? ['encoder.download'] : []),
    ];
    // The fields first, as one problem (`a, b: why`), so that each door names them in its words (the flags').
    if (local.length > 0)
      ctx.addIssue({
        code: 'custom',
        path: [local.join(', ')],
        message:
          'for a model run here, not with an endpoint (the server pools, and its heads cannot be reopened without it)',
      });
  }
});

/** The defaults of a contamination probe run (the order probe's from llm/contamination.ts). */
export const CONTAMINATION_DEFAULTS = {
  split: 'test',
  probes: ['order'],
  shards: ORDER_DEFAULTS.shards,
  permutations: ORDER_DEFAULTS.permutations,
  items: 100,
  alpha: 0.01,
  seed: 0,
} as const;

const contaminationSpec = z
  .object({
    schema: z.literal(RUN_SPEC_SCHEMA),
    kind: z.literal('contamination'),
    provider: providerSpec,
    /** Shards (order) or items (guided, options) asked at once. */
    concurrency: whole(1).optional(),
    tasks: taskList,
    task_files: taskFiles,
    data: z.string().min(1).optional(),
    split: z.enum(['test', 'dev', 'private_test']).default(CONTAMINATION_DEFAULTS.split),
    probes: z
      .array(z.enum(['order', 'guided', 'options']))
      .min(1)
      .default([...CONTAMINATION_DEFAULTS.probes]),
    shards: whole(2).default(CONTAMINATION_DEFAULTS.shards),
    permutations: whole(1).default(CONTAMINATION_DEFAULTS.permutations),
    items: whole(2).default(CONTAMINATION_DEFAULTS.items),
    alpha: z.number().gt(0).lt(1).default(CONTAMINATION_DEFAULTS.alpha),
    seed: whole(0).default(CONTAMINATION_DEFAULTS.seed),
  })
  .strict();

export const runSpecSchema = z.union([llmSpec, baselineSpec, contaminationSpec]);

/**
 * Each field of a spec on its own, for a reader that checks one value where it stands (a plan's setting at its line):
 * the top-level fields of an LLM and a baseline run, and the fields of an encoder (a provider's: its record's schema).
 */
export const SPEC_FIELDS = {
  llm: llmFields.shape,
  baseline: baselineFields.shape,
  encoder: encoderSpec.shape,
} as const;

export type LlmSpec = z.output<typeof llmSpec>;
export type BaselineSpec = z.output<typeof baselineSpec>;
export type ProviderSpec = z.output<typeof providerSpec>;
export type ContaminationSpec = z.output<typeof contaminationSpec>;
export type RunSpec = LlmSpec | BaselineSpec | ContaminationSpec;
/** What a caller gives: the defaults may be left out. */
export type RunSpecInput =
  | z.input<typeof llmSpec>
  | z.input<typeof baselineSpec>
  | z.input<typeof contaminationSpec>;

/**
 * The one way a spec is made: checked, every default filled. `where` names the source in the error (a file, a
 * queue row): every problem is listed with its path in the spec.
 *
 * @example makeRunSpec({ schema: 'rumedbench.run/1', kind: 'llm', provider: { name: 'openai', model: 'm', base_url: 'http://localhost:8000/v1' } }).max_tokens // 1024
 */
export function makeRunSpec(input: unknown, where = 'run spec'): RunSpec {
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const o = input as Record<string, unknown>;
    if (o.schema !== RUN_SPEC_SCHEMA)
      throw new RunSpecError(where, [
        `schema: expected "${RUN_SPEC_SCHEMA}", got ${JSON.stringify(o.schema)}${typeof o.schema === 'string' && o.schema.startsWith('rumedbench.run/') ? ' (a spec of another release: run it with that release)' : ''}`,
      ]);
    const kinds = { llm: llmSpec, baseline: baselineSpec, contamination: contaminationSpec } as const;
    const kind =
      typeof o.kind === 'string' && Object.hasOwn(kinds, o.kind)
        ? kinds[o.kind as keyof typeof kinds]
        : undefined;
    if (!kind)
      throw new RunSpecError(where, [
        `kind: one of ${Object.keys(kinds).join(', ')}, got ${JSON.stringify(o.kind)}`,
      ]);
    if (Array.isArray(o.task_files) && o.task_files.every((f) => typeof f === 'string'))
      loadUserTasks(o.task_files as string[]);
    const r = kind.safeParse(input);
    if (r.success) {
      const files = [
        ...new Set(
          r.data.tasks
            .map((t) => getTask(t))
            .filter((t) => t.source !== undefined && !t.optional)
            .map((t) => t.source as string),
        ),
      ];
      const { task_files: _, ...rest } = r.data;
      return (files.length > 0 ? { ...rest, task_files: files } : rest) as RunSpec;
    }
    throw new RunSpecError(
      where,
      r.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`),
    );
  }
  throw new RunSpecError(where, ['a run spec is a JSON object { schema, kind, … }']);
}

/** Keys in a stable order, so that the same spec is the same text (plan state, manifests, comparisons). */
export function specJson(spec: RunSpec): string {
  return JSON.stringify(canonical(spec));
}
