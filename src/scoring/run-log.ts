/**
 * The run log: the typed model of a run folder, with its one reader (`readRunLog`) and its writers (inspect_ai's
 * `EvalLog` with `read_eval_log`/`write_eval_log`). Every run (`llm`, `baseline naive|tfidf`, `baseline encoder`,
 * `predict-encoder`, `contamination`) writes the same folder: `predictions/` and `submission.zip` (formats.ts),
 * `summary.json`, `manifest.json` and, for LLM runs, `journal.jsonl` (llm/journal.ts) and `samples.jsonl`
 * (llm/outputs.ts). This module owns the schemas of summary.json and manifest.json; `report`, plans, `merge`,
 * `submit` and the engine read a folder as a `RunLog = { dir, spec, manifest, summary, samplesFile }`, typed, and
 * nobody lists a manifest's keys by hand.
 *
 * Why here, in scoring (level 4), and not beside the run spec in engine (level 7): the readers of a run log are
 * `llm` (merge, prompt variants) and `report` (level 5), which may import only downwards (test/layout.test.ts), and
 * the spec's schema cannot come down to them: it fills its defaults from `llm` (the Anthropic address, the prices,
 * the contamination probe's) and the task registry. So the run log types the stored spec by its envelope (`schema`,
 * `kind`, and the fields a reader of a folder needs: `shard`, `concurrency`) and keeps the rest as written; the one
 * full check of a stored spec is the engine's `makeRunSpec`, when the spec is run again (`readRunSpec`).
 *
 * The manifest's schema is strict where we write it: `writeManifest` refuses a field it does not know (a new field
 * is added here, typed, or not at all). A manifest is read leniently: a field of an older (or newer) release is kept
 * aside in `manifestExtra`, never a reason to refuse the folder, and a field we write that an older release did not
 * is optional or defaulted (release 0.1.0 wrote no `spec`, `command`, `repeats`, `perturb`, `prompt_variant`).
 *
 * summary.json, version 1: `{schema_version: 1, kind, ...}` where
 * - kind `llm`: the scorer's result at the top level (`eval --json`'s schema) plus `llm` (per-task samples, unparsed,
 *   failed, requests, usage, latency, cost, label space, skipped tasks, served models);
 * - kind `baseline`: `runs` (per task: seconds, what it trained on, or why skipped) and `evaluation`;
 * - kind `encoder`: the same plus `encoder` (model, sha256, dtype, pooling, max length, C, embedding statistics);
 * - kind `finetuned`: `runs`, `finetuned` (model, sha256, dtype, labels, items answered) and `evaluation` where the
 *   test split was answered.
 * Folders written before the `kind` field are read by their fields, as they were.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readUtf8File } from '../data/text.js';
import { RumedbenchError } from '../errors.js';
import { redactSecrets } from '../log.js';
import type { Calibration } from '../metrics/calibration.js';
import { promptTemplateSchema } from './prompt-template.js';
import type { EvaluationResult } from './score.js';

const RUN_FOLDER_VERSION = 1;

export class RunFolderError extends RumedbenchError {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super('RUN_FOLDER_INVALID', `${file}: ${message}`);
    this.name = 'RunFolderError';
  }
}

const interval = z.tuple([z.number(), z.number()]);
const taskScores = z
  .object({
    n: z.number(),
    metrics: z.record(z.string(), z.number()),
    score: z.number(),
    ci: z.record(z.string(), interval).default({}),
    score_ci: interval.nullable().default(null),
  })
  .passthrough();
const issue = z
  .object({ severity: z.enum(['error', 'warning']), code: z.string(), file: z.string() })
  .passthrough();

/** The scorer's result as `eval --json` writes it (schema_version 1). */
export const evaluationSchema = z
  .object({
    schema_version: z.literal(1),
    rumedbench_version: z.string().optional(),
    source: z.string(),
    split: z.string(),
    overall: z.number().nullable(),
    overall_ci: interval.nullable(),
    overall_six: z.object({ score: z.number(), ci: interval.nullable() }).optional(),
    tasks: z.record(z.string(), taskScores),
    unscored: z.record(z.string(), z.string()).default({}),
    missing_tasks: z.array(z.string()).default([]),
    bootstrap: z.object({ resamples: z.number() }).passthrough(),
    errors: z.array(issue).default([]),
    warnings: z.array(issue).default([]),
  })
  .passthrough();

/** Calibration figures of a log-likelihood task (metrics/calibration.ts), with the items left out. */
const calibration = z.custom<Calibration & { left_out: number }>(
  (v) => typeof v === 'object' && v !== null && typeof (v as { ece?: unknown }).ece === 'number',
  'calibration figures { n, ece, ece_adaptive, brier, nll, bins, … }',
);

const llmTaskFigures = z
  .object({
    samples: z.number(),
    unparsed: z.number(),
    unparsed_rate: z.number(),
    failed: z.number(),
    mode: z.enum(['generate', 'loglik']).optional(),
    acc: z.number().optional(),
    acc_norm_char: z.number().optional(),
    acc_norm_byte: z.number().optional(),
    calibration: calibration.optional(),
    calibration_norm_char: calibration.optional(),
  })
  .passthrough();

const repeatFigures = z
  .object({
    k: z.number(),
    mean_accuracy: z.number().nullable(),
    mean_accuracy_ci: interval.nullable(),
    consistency: z.number(),
    flipped: z.number(),
    flipped_ids: z.array(z.string()),
  })
  .passthrough();

/** Token counts summed over requests; reasoning and cached ones only where a reply reported them. */
const tokenCounts = z
  .object({
    prompt_tokens: z.number(),
    completion_tokens: z.number(),
    reasoning_tokens: z.number().optional(),
    cached_prompt_tokens: z.number().optional(),
  })
  .passthrough();

/** The `llm` part of an LLM run's summary. */
const llmDetailsSchema = z
  .object({
    mode: z.enum(['generate', 'loglik']).default('generate'),
    tasks: z.record(z.string(), llmTaskFigures),
    label_space: z.record(z.string(), z.number()).default({}),
    skipped: z.record(z.string(), z.string()).default({}),
    requests: z
      .object({
        total: z.number(),
        sent_this_run: z.number(),
        wall_s: z.number(),
        throughput_rps: z.number(),
      })
      .passthrough()
      .optional(),
    usage: z
      .object({
        prompt_tokens: z.number(),
        completion_tokens: z.number(),
        /** Of the completion tokens, those spent reasoning: only where the server reported them. */
        reasoning_tokens: z.number().optional(),
        cached_prompt_tokens: z.number().optional(),
        replies_with_invalid_counts: z.number().optional(),
        /** The same sums per task. */
        tasks: z.record(z.string(), tokenCounts).optional(),
      })
      .passthrough()
      .optional(),
    latency_ms: z.object({ median: z.number().nullable(), p95: z.number().nullable() }).optional(),
    cost: z.number().optional(),
    /**
     * A run with answers bought in batches: the provider's batches, the discount they were priced at, and (written
     * since #59) how many of the run's answers they bought and what those cost.
     */
    batch: z
      .object({
        provider: z.string(),
        batches: z.array(z.string()),
        discount: z.number(),
        answers: z.number().optional(),
        cost: z.number().optional(),
      })
      .passthrough()
      .optional(),
    /** The answers bought online (at the list prices), and what they cost: kept beside `batch` through resumes. */
    online: z.object({ answers: z.number(), cost: z.number().optional() }).passthrough().optional(),
    served_models: z.record(z.string(), z.number()).optional(),
    /** Replies per finish_reason the server gave (stop, length, content_filter, …). */
    finish_reasons: z.record(z.string(), z.number()).optional(),
    failed_requests: z.number().optional(),
    loglik: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
    repeats: z.record(z.string(), repeatFigures).optional(),
    shard: z
      .object({ index: z.number(), count: z.number(), requests: z.number(), of: z.number() })
      .optional(),
  })
  .passthrough();

/** The `llm` part of an LLM run's summary.json, as read; `LlmDetailsInput` is what a writer gives. */
export type LlmDetails = z.output<typeof llmDetailsSchema>;
export type LlmDetailsInput = z.input<typeof llmDetailsSchema>;

/** The `llm` part of a summary.json's text, where it has a valid one (a stored run's, read without its folder). */
export function llmDetailsOf(summaryJson: string): LlmDetails | undefined {
  try {
    const r = llmDetailsSchema.safeParse((JSON.parse(summaryJson) as { llm?: unknown }).llm);
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

const baselineRun = z
  .object({
    task: z.string(),
    seconds: z.number(),
    trainedOn: z.object({ split: z.string(), records: z.number() }).optional(),
    skipped: z.string().optional(),
  })
  .passthrough();

const encoderProvenance = z
  .object({
    model: z.string(),
    sha256: z.string(),
    dtype: z.string().default(''),
    pooling: z.string().optional(),
    maxLength: z.number().optional(),
    C: z.number().optional(),
    labels: z.array(z.string()).optional(),
  })
  .passthrough();

const version = { schema_version: z.literal(RUN_FOLDER_VERSION).optional() };
const llmSummary = evaluationSchema.extend({ ...version, kind: z.literal('llm'), llm: llmDetailsSchema });
const baselineSummary = z
  .object({
    ...version,
    kind: z.literal('baseline'),
    runs: z.array(baselineRun),
    evaluation: evaluationSchema,
  })
  .passthrough();
const encoderSummary = baselineSummary.extend({ kind: z.literal('encoder'), encoder: encoderProvenance });
const finetunedSummary = z
  .object({
    ...version,
    kind: z.literal('finetuned'),
    runs: z.array(baselineRun),
    finetuned: encoderProvenance,
    evaluation: evaluationSchema.optional(),
  })
  .passthrough();

const runSummarySchema = z.discriminatedUnion('kind', [
  llmSummary,
  baselineSummary,
  encoderSummary,
  finetunedSummary,
]);
export type RunSummary = z.output<typeof runSummarySchema>;

/**
 * summary.json as written: every field at its top (and in its `llm` part and its `evaluation`) known, so that a new
 * field is added to the schema or not written; the figures inside (per task, per issue) keep what they carry.
 */
const strictEvaluation = evaluationSchema.strict();
const runSummaryWriteSchema = z.discriminatedUnion('kind', [
  llmSummary.extend({ llm: llmDetailsSchema.strict() }).strict(),
  baselineSummary.extend({ evaluation: strictEvaluation }).strict(),
  encoderSummary.extend({ evaluation: strictEvaluation }).strict(),
  finetunedSummary.extend({ evaluation: strictEvaluation.optional() }).strict(),
]);

/** A written file's problems, for the error that stops a writer from writing what its reader would not know. */
const problemsOf = (e: z.ZodError) =>
  e.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
type RunKind = RunSummary['kind'];

const shardSchema = z.object({ index: z.number().int().min(1), count: z.number().int().min(1) }).strict();

/**
 * What a provider says of itself (`Provider.describe()` in llm/provider.ts), as the manifest records it: where the
 * run's answers came from. A server's `endpoint` and a model's file stay in manifest.json (a report links nowhere).
 */
export const providerInfoSchema = z
  .object({
    provider: z.string().optional(),
    endpoint: z.string().optional(),
    model: z.string().optional(),
    /** Log-likelihood on an OpenAI-compatible server: prompt log-probabilities, or the top k next tokens. */
    loglik_method: z.string().optional(),
    gguf_file: z.string().optional(),
    gguf_sha256: z.string().optional(),
    context_size: z.number().optional(),
    sequences: z.number().optional(),
    engine: z.string().optional(),
  })
  .strict();
export type ProviderInfo = z.output<typeof providerInfoSchema>;

/** A task's prompt overridden (`--template`; llm/prompt.ts `PromptTemplate`), as a templates file and a manifest hold it. */
/** The sampling parameters as an LLM run sends them (llm/provider.ts `SamplingParams`). */
const samplingParams = z
  .object({
    temperature: z.number(),
    maxTokens: z.number(),
    seed: z.number().optional(),
    stop: z.array(z.string()).optional(),
    reasoningEffort: z.enum(['low', 'medium', 'high']).optional(),
    thinkingBudget: z.number().optional(),
  })
  .strict();

/** How an LLM run asked (llm/run.ts `finishRun`): what a shard of the run shares with the others, less `shard`. */
const llmSettings = {
  mode: z.enum(['generate', 'loglik']).optional(),
  /** Log-likelihood: the candidates are the labels' words. */
  label_words: z.boolean().optional(),
  params: samplingParams.optional(),
  seed: z.number().optional(),
  shots: z.number().optional(),
  splits: z.enum(['test', 'private_test', 'both']).optional(),
  /** Requests in flight: may differ between the shards of one run. */
  concurrency: z.number().optional(),
  /** At most this many items per task (`--limit`): a quick look, never a board's entry. */
  limit: z.number().nullable().default(null),
  system_override: z.string().nullable().optional(),
  templates: z.record(z.string(), promptTemplateSchema).nullable().optional(),
  /** Per task, the version of the prompt asked (of `prompt_variant` where one was). */
  prompt_versions: z.record(z.string(), z.string()).optional(),
  prompt_variant: z.string().nullable().optional(),
  /** Per data file read, its SHA-256: shards of one run read the same data. */
  data_sha256: z.record(z.string(), z.string()).optional(),
  /** One shard of a run (`--shard I/N`); null for a whole run. */
  shard: shardSchema.nullable().optional(),
  repeats: z.number().optional(),
  perturb: z
    .object({ kind: z.enum(['typos', 'yo', 'case', 'shuffle-options']), rate: z.number().optional() })
    .strict()
    .nullable()
    .optional(),
};

/**
 * The run spec as a run log holds it: its envelope, and the fields a reader of a folder needs; the rest as written.
 * Its one full check is the engine's `makeRunSpec` (engine/spec.ts), when a spec is run again.
 */
const storedSpecSchema = z
  .object({
    schema: z.string(),
    kind: z.enum(['llm', 'baseline', 'contamination']),
    shard: shardSchema.optional(),
    concurrency: z.number().optional(),
  })
  .passthrough();
export type StoredRunSpec = z.output<typeof storedSpecSchema>;

const manifestShape = {
  schema_version: z.literal(1),
  rumedbench_version: z.string(),
  created: z.string(),
  /** The run spec that made the run (absent in folders of release 0.1.0), and its command line, for people. */
  spec: storedSpecSchema.optional(),
  command: z.string().optional(),
  ...providerInfoSchema.shape,
  ...llmSettings,
  /** `merge`: the shards' folders the run was joined from. */
  merged_from: z.array(z.object({ dir: z.string(), shard: shardSchema }).strict()).optional(),
  /**
   * A run made by lm-evaluation-harness and read here (`eval LMEVAL_OUT --out DIR`, scoring/lm-eval.ts): its version,
   * model arguments, settings and task versions.
   */
  lm_eval: z.record(z.string(), z.unknown()).optional(),
  /** A cell a worker ran: its plan and cell in the queue. */
  plan_id: z.string().optional(),
  cell: z.string().optional(),
};

/** manifest.json as written: every field known, typed; a field not listed here is refused (a bug of the writer). */
const manifestSchema = z.object(manifestShape).strict();
/** manifest.json as read: a field of another release is set aside (`manifestExtra`), not refused. */
const manifestReadSchema = z.object(manifestShape).strip();

/** How a run was made, as its manifest.json says. */
export type Manifest = z.output<typeof manifestSchema>;
/** What a writer gives: the manifest less its version, which the writer adds. */
export type ManifestInput = Omit<z.input<typeof manifestSchema>, 'schema_version'>;

/** The fields of a manifest that say how its run asked, as `report` shows them, in this order (then params, prompts). */
const SHOWN: readonly (keyof Manifest)[] = [
  'provider',
  'model',
  'mode',
  'loglik_method',
  'label_words',
  'gguf_file',
  'gguf_sha256',
  'context_size',
  'sequences',
  'seed',
  'shots',
  'splits',
  'concurrency',
  'limit',
  'system_override',
  'rumedbench_version',
  'created',
];

/**
 * A manifest's settings for people, as `[name, value]` in a stable order: the provider and how the run asked, its
 * sampling parameters (`params.<name>`) and prompt versions (`prompt <Task>`); the endpoint's address, files' hashes
 * of data and the spec stay in manifest.json.
 */
export function manifestSettings(m: Manifest): [string, unknown][] {
  const rows: [string, unknown][] = SHOWN.map((k) => [k, m[k]]);
  for (const [k, v] of Object.entries(m.params ?? {})) rows.push([`params.${k}`, v]);
  for (const [k, v] of Object.entries(m.prompt_versions ?? {})) rows.push([`prompt ${k}`, v]);
  return rows.filter(([, v]) => v !== undefined && v !== null);
}

/** What the run's provider said of itself, from its manifest (`merge` writes it again for the joined run). */
export function providerInfoOf(m: Manifest): ProviderInfo {
  return Object.fromEntries(
    Object.keys(providerInfoSchema.shape)
      .filter((k) => m[k as keyof ProviderInfo] !== undefined)
      .map((k) => [k, m[k as keyof ProviderInfo]]),
  ) as ProviderInfo;
}

/** Settings the shards of one run may differ in: when each ran, which shard, how many requests it kept in flight. */
const PER_SHARD = [
  'created',
  'shard',
  'concurrency',
  'command',
] as const satisfies readonly (keyof Manifest)[];

/**
 * What the shards of one run share: the manifest less `PER_SHARD` (and less the spec's own `shard` and
 * `concurrency`), with the fields of another release kept (`extra`). Two shards of one run have equal settings.
 */
export function sharedSettings(m: Manifest, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...extra, ...m };
  for (const k of PER_SHARD) delete out[k];
  if (m.spec) {
    const { shard: _s, concurrency: _c, ...spec } = m.spec;
    out.spec = spec;
  }
  return out;
}

/** What a writer gives: a summary without the version, which the writer adds. */
export type RunSummaryInput =
  | (EvaluationResult & { kind: 'llm'; llm: LlmDetailsInput })
  | { kind: 'baseline'; runs: unknown[]; evaluation: EvaluationResult }
  | { kind: 'encoder'; runs: unknown[]; encoder: Record<string, unknown>; evaluation: EvaluationResult }
  | { kind: 'finetuned'; runs: unknown[]; finetuned: Record<string, unknown>; evaluation?: EvaluationResult };

/** The one writer of summary.json. */
export function writeRunSummary(dir: string, summary: RunSummaryInput): void {
  const { kind, ...rest } = summary;
  const written = { schema_version: RUN_FOLDER_VERSION, kind, ...rest };
  const r = runSummaryWriteSchema.safeParse(written);
  if (!r.success) throw new Error(`summary.json for ${dir}: ${problemsOf(r.error)}`);
  // The fields as given, in their order (not the parsed copy): the same run writes the same bytes.
  writeFileSync(join(dir, 'summary.json'), `${redactSecrets(JSON.stringify(written, null, 2))}\n`);
}

/**
 * The one writer of manifest.json, for every kind of run: how it was made. Runs of this release record their run
 * spec (`spec`) and its command line (`command`); an LLM run adds the provider, sampling, prompts and data hashes.
 * What it writes is checked against the manifest's schema first: a field it does not know is a writer's bug, named.
 */
export function writeManifest(dir: string, manifest: ManifestInput): void {
  const written = { schema_version: 1, ...manifest };
  const r = manifestSchema.safeParse(written);
  if (!r.success) throw new Error(`manifest.json for ${dir}: ${problemsOf(r.error)}`);
  // The fields as given, in their order (not the parsed copy): the same run writes the same bytes.
  writeFileSync(join(dir, 'manifest.json'), `${redactSecrets(JSON.stringify(written, null, 2))}\n`);
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readUtf8File(file)) as unknown;
  } catch (e) {
    if (e instanceof RumedbenchError) throw e;
    throw new RunFolderError(file, `not valid JSON (${(e as Error).message})`);
  }
}

/** A summary written before the `kind` field: its kind from the fields it has. */
function legacyKind(v: Record<string, unknown>): RunKind | undefined {
  if (v.llm && typeof v.llm === 'object') return 'llm';
  if (v.finetuned && typeof v.finetuned === 'object') return 'finetuned';
  if (Array.isArray(v.runs)) return v.encoder && typeof v.encoder === 'object' ? 'encoder' : 'baseline';
  return undefined;
}

/**
 * A run folder, read: its summary, its manifest (absent in a folder copied without it) and the spec the manifest
 * records (absent before release 0.2), and where its samples are (LLM runs; their shape: llm/outputs.ts `SampleLog`).
 */
export interface RunLog {
  dir: string;
  /** The run spec that made the run, as stored (engine/spec.ts `makeRunSpec` checks it in full). */
  spec?: StoredRunSpec;
  manifest?: Manifest;
  /** Fields of manifest.json this release does not write (a folder of another release), as they were. */
  manifestExtra?: Record<string, unknown>;
  summary: RunSummary;
  /** samples.jsonl, where the run wrote one. */
  samplesFile?: string;
}

/** @deprecated The run log's old name; use `RunLog`. */
export type RunFolder = RunLog;

/** Reads manifest.json: typed, a field of another release set aside, a field of the wrong type named. */
export function readManifest(file: string): { manifest: Manifest; extra: Record<string, unknown> } {
  return manifestOf(readJson(file), file);
}

/**
 * A manifest's text as stored elsewhere than a run folder (the queue's database keeps a cell's files), read as
 * `readManifest` reads the file; `file` names it in what is said of a problem.
 */
export function parseManifest(
  text: string,
  file: string,
): { manifest: Manifest; extra: Record<string, unknown> } {
  let raw: unknown;
  try {
    raw = JSON.parse(text) as unknown;
  } catch (e) {
    throw new RunFolderError(file, `not valid JSON (${(e as Error).message})`);
  }
  return manifestOf(raw, file);
}

function manifestOf(raw: unknown, file: string): { manifest: Manifest; extra: Record<string, unknown> } {
  const m = manifestReadSchema.safeParse(raw);
  if (!m.success) {
    const problems = m.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`)
      .join('; ');
    throw new RunFolderError(file, `not a run manifest: ${problems}`);
  }
  const extra = Object.fromEntries(
    Object.entries(raw as Record<string, unknown>).filter(([k]) => !Object.hasOwn(manifestShape, k)),
  );
  return { manifest: m.data, extra };
}

/** The one reader: a run folder's summary, manifest and spec, checked against their schemas, every problem named. */
export function readRunLog(dir: string): RunLog {
  const file = join(dir, 'summary.json');
  if (!existsSync(file)) throw new RunFolderError(dir, 'not a run folder (no summary.json)');
  const raw = readJson(file);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new RunFolderError(file, 'not a JSON object');
  const v = raw as Record<string, unknown>;
  if (v.schema_version !== undefined && v.schema_version !== RUN_FOLDER_VERSION) {
    throw new RunFolderError(
      file,
      `schema_version ${String(v.schema_version)}; this rumedbench reads version ${RUN_FOLDER_VERSION}`,
    );
  }
  const kind = typeof v.kind === 'string' ? v.kind : legacyKind(v);
  if (kind === undefined) throw new RunFolderError(file, 'neither an llm nor a baseline run summary');
  const parsed = runSummarySchema.safeParse({ ...v, kind });
  if (!parsed.success) {
    const problems = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`)
      .join('; ');
    throw new RunFolderError(file, `not a ${kind} run summary: ${problems}`);
  }
  const log: RunLog = { dir, summary: parsed.data };
  const manifestFile = join(dir, 'manifest.json');
  if (existsSync(manifestFile)) {
    const { manifest, extra } = readManifest(manifestFile);
    log.manifest = manifest;
    if (Object.keys(extra).length > 0) log.manifestExtra = extra;
    if (manifest.spec) log.spec = manifest.spec;
  }
  const samples = join(dir, 'samples.jsonl');
  if (existsSync(samples)) log.samplesFile = samples;
  return log;
}

/** @deprecated The run log's reader's old name; use `readRunLog`. */
export const readRunFolder = readRunLog;
