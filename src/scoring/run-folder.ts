/**
 * The run-folder contract. Every run (`llm`, `baseline naive|tfidf`, `baseline encoder`, `predict-encoder`) writes
 * the same folder: `predictions/` and `submission.zip` (formats.ts), `summary.json` and, for LLM runs,
 * `manifest.json`, `journal.jsonl` and `samples.jsonl`. This module is the one schema of summary.json and the
 * manifest (a union over the kinds of run), their one writer and their one reader; `report`, plans, `llm --merge` and
 * `submit` read folders through it, typed, instead of guessing from the fields they find.
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
    source: z.string(),
    split: z.string(),
    overall: z.number().nullable(),
    overall_ci: interval.nullable(),
    overall_six: z.object({ score: z.number(), ci: interval.nullable() }).optional(),
    tasks: z.record(z.string(), taskScores),
    unscored: z.record(z.string(), z.string()).default({}),
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
    /** A batch run: the provider's batches, and the discount its cost was priced at. */
    batch: z
      .object({ provider: z.string(), batches: z.array(z.string()), discount: z.number() })
      .passthrough()
      .optional(),
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
type RunKind = RunSummary['kind'];

/** The manifest of an LLM run: how it was made (provider, model, sampling, prompts, data hashes). */
const llmManifestSchema = z
  .object({
    schema_version: z.literal(1),
    rumedbench_version: z.string(),
    created: z.string(),
    model: z.string().optional(),
    mode: z.enum(['generate', 'loglik']).default('generate'),
    limit: z.number().nullable().default(null),
    /** The run spec that made the run (engine/spec.ts; absent in folders of release 0.1.0), and its command line. */
    spec: z.record(z.string(), z.unknown()).optional(),
    command: z.string().optional(),
  })
  .passthrough();
type LlmManifest = z.output<typeof llmManifestSchema>;

/** What a writer gives: a summary without the version, which the writer adds. */
type RunSummaryInput =
  | (EvaluationResult & { kind: 'llm'; llm: LlmDetailsInput })
  | { kind: 'baseline'; runs: unknown[]; evaluation: EvaluationResult }
  | { kind: 'encoder'; runs: unknown[]; encoder: Record<string, unknown>; evaluation: EvaluationResult }
  | { kind: 'finetuned'; runs: unknown[]; finetuned: Record<string, unknown>; evaluation?: EvaluationResult };

/** The one writer of summary.json. */
export function writeRunSummary(dir: string, summary: RunSummaryInput): void {
  const { kind, ...rest } = summary;
  writeFileSync(
    join(dir, 'summary.json'),
    `${redactSecrets(JSON.stringify({ schema_version: RUN_FOLDER_VERSION, kind, ...rest }, null, 2))}\n`,
  );
}

/**
 * The one writer of manifest.json, for every kind of run: how it was made. Runs of this release record their run
 * spec (`spec`) and its command line (`command`); an LLM run adds the provider, sampling, prompts and data hashes.
 */
export function writeManifest(
  dir: string,
  manifest: { rumedbench_version: string; created: string; spec?: unknown; command?: string } & Record<
    string,
    unknown
  >,
): void {
  writeFileSync(
    join(dir, 'manifest.json'),
    `${redactSecrets(JSON.stringify({ schema_version: 1, ...manifest }, null, 2))}\n`,
  );
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

export interface RunFolder {
  dir: string;
  summary: RunSummary;
  /** LLM runs: manifest.json (absent in a folder copied without it). */
  manifest?: LlmManifest;
}

/** The one reader: a run folder's summary (and manifest), checked against the schema, every problem named. */
export function readRunFolder(dir: string): RunFolder {
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
  const folder: RunFolder = { dir, summary: parsed.data };
  const manifestFile = join(dir, 'manifest.json');
  if (parsed.data.kind === 'llm' && existsSync(manifestFile)) {
    const m = llmManifestSchema.safeParse(readJson(manifestFile));
    if (!m.success)
      throw new RunFolderError(manifestFile, `not an LLM run manifest: ${m.error.issues[0]?.message ?? ''}`);
    folder.manifest = m.data;
  }
  return folder;
}
