/**
 * What a report is made from. Each PATH given to `rumedbench report` becomes one or two systems:
 * - a predictions folder, `.zip` or `<Task>.jsonl` (as `eval` takes): scored here, with intervals and breakdowns;
 * - an `llm` run folder: its predictions scored here, plus its summary (unparsed, tokens, cost), manifest (sampling,
 *   prompt versions) and samples (latencies; wrong and unparsed answers);
 * - a `baseline` run folder: its predictions scored here, plus what each task was trained on;
 * - a saved `eval --json` result (shown as saved; it cannot be compared pairwise, it has no items);
 * - a saved `compare --json` result (two systems and their paired comparison, as saved).
 */

import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { readJsonlFile } from '../data/jsonl.js';
import { readUtf8File } from '../data/text.js';
import { RumedbenchError } from '../errors.js';
import type { Interval } from '../metrics/bootstrap.js';
import type { MetricValues, Prediction } from '../metrics/item-stats.js';
import type { Breakdown } from '../scoring/breakdown.js';
import type { ComparisonResult } from '../scoring/compare.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import type { ReferenceLoader } from '../scoring/reference.js';
import type { LlmDetails as LlmSummaryDetails, Manifest } from '../scoring/run-log.js';
import { evaluationSchema, readRunLog } from '../scoring/run-log.js';
import {
  type EvaluationResult,
  scoreValidated,
  type ValidatedSubmission,
  validateSubmission,
} from '../scoring/score.js';
import { readTrustFiles, type TrustFiles } from '../scoring/trust-files.js';
import type { MetricName, Split } from '../tasks/types.js';

export type InputKind = 'predictions' | 'llm' | 'baseline' | 'eval-json' | 'compare-json';

/** What the charts and tables need of one task's result; a subset of the scorer's TaskResult. */
export interface TaskScores {
  n: number;
  metrics: MetricValues;
  score: number;
  ci: Partial<Record<MetricName, Interval>>;
  score_ci: Interval | null;
  unanswered?: number;
  breakdown?: Breakdown;
}

export interface LlmSample {
  task: string;
  id: string;
  status: 'parsed' | 'unparsed' | 'failed';
  /** The item as the model was asked it: the last user message. */
  prompt: string;
  reply: string | null;
  answer: Prediction | null;
  gold?: Prediction;
  reason?: string;
  notes?: string[];
  /** Scored by log-likelihood: the best candidates and the gold's, with their summed log-probabilities. */
  candidates?: { label: string; logprob: number | null; rank: number }[];
}

/** The five best candidates of a log-likelihood sample, and the gold's place where it is not among them. */
function topCandidates(raw: unknown[], gold: unknown): NonNullable<LlmSample['candidates']> {
  const ranked = (raw as { label: string; logprob: number | null }[])
    .map((c) => ({ label: String(c.label), logprob: typeof c.logprob === 'number' ? c.logprob : null }))
    .sort((a, b) => (b.logprob ?? -Infinity) - (a.logprob ?? -Infinity))
    .map((c, i) => ({ ...c, rank: i + 1 }));
  const top = ranked.slice(0, 5);
  const g = ranked.find((c) => c.label === gold);
  return g && !top.includes(g) ? [...top, g] : top;
}

export interface LlmDetails {
  /** manifest.json, typed by its one schema (scoring/run-log.ts); absent in a folder copied without it. */
  manifest?: Manifest;
  /** The `llm` part of the run's summary.json, as its one schema reads it (scoring/run-log.ts). */
  summary: LlmSummaryDetails;
  /** The run folder's prompt-variants.json, perturbations.json and contamination.json, where there are any. */
  trust: TrustFiles;
  latencyMs: number[];
  /** Wrong, unparsed and failed answers on the public test sets, at most `maxExamples` per task. */
  failures: LlmSample[];
  /** How many there are per task, shown or not. */
  failureCounts: Record<string, number>;
}

export interface ReportSystem {
  name: string;
  source: string;
  kind: InputKind;
  split: Split;
  tasks: Record<string, TaskScores>;
  overall: number | null;
  overall_ci: Interval | null;
  unscored: Record<string, string>;
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
  resamples: number;
  /** An LLM run limited to the first N items of each task (`llm --limit`): its scores cover only those. */
  limit?: number;
  /** The validated items, where the system was scored here: what a paired comparison needs. */
  validated?: ValidatedSubmission;
  llm?: LlmDetails;
  baseline?: {
    runs: {
      task: string;
      trainedOn?: { split: string; records: number };
      seconds: number;
      skipped?: string;
    }[];
    /** The encoder of a `baseline encoder` run, or the fine-tuned model of a `predict-encoder` run. */
    encoder?: EncoderProvenance;
  };
}

export interface EncoderProvenance {
  model: string;
  sha256: string;
  dtype: string;
  pooling?: string;
  maxLength?: number;
  C?: number;
  labels?: string[];
}

export interface LoadedInput {
  systems: ReportSystem[];
  /** A saved `compare --json`: its comparison, between the two systems it brought. */
  comparison?: ComparisonResult;
}

interface SourceOptions {
  references: ReferenceLoader;
  split: Split;
  bootstrap: number;
  seed: number;
  /** Wrong or unparsed LLM answers kept per task. */
  maxExamples: number;
  /** Score RuMedBench-format files on the gold they carry (as `eval --file-gold`). */
  fileGold?: boolean;
}

export class ReportInputError extends RumedbenchError {
  readonly file: string;
  constructor(file: string, message: string) {
    super('REPORT_INPUT_INVALID', `${file}: ${message}`);
    this.name = 'ReportInputError';
    this.file = file;
  }
}

const interval = z.tuple([z.number(), z.number()]);
const delta = z.object({ delta: z.number(), ci: interval.nullable(), p: z.number() }).passthrough();
const compareJson = z
  .object({
    schema_version: z.literal(1),
    a: z.string(),
    b: z.string(),
    split: z.string(),
    tasks: z.record(
      z.string(),
      z
        .object({
          n: z.number(),
          a: z.record(z.string(), z.number()),
          b: z.record(z.string(), z.number()),
          metrics: z.record(z.string(), delta),
          score: delta,
        })
        .passthrough(),
    ),
    overall: delta.extend({ a: z.number(), b: z.number() }).nullable(),
    method: z.object({ resamples: z.number() }).passthrough(),
  })
  .passthrough();

function readJson(file: string): unknown {
  try {
    return JSON.parse(readUtf8File(file)) as unknown;
  } catch (e) {
    throw new ReportInputError(file, `not valid JSON (${(e as Error).message})`);
  }
}

function fromEvaluation(
  name: string,
  kind: InputKind,
  e: EvaluationResult,
  validated?: ValidatedSubmission,
): ReportSystem {
  return {
    name,
    source: e.source,
    kind,
    split: e.split,
    tasks: e.tasks,
    overall: e.overall,
    overall_ci: e.overall_ci,
    unscored: e.unscored,
    errors: e.errors,
    warnings: e.warnings,
    resamples: e.bootstrap.resamples,
    ...(validated ? { validated } : {}),
  };
}

async function scorePredictions(
  path: string,
  name: string,
  kind: InputKind,
  o: SourceOptions,
  fileGold = false,
): Promise<ReportSystem> {
  const options = {
    references: o.references,
    split: o.split,
    bootstrap: o.bootstrap,
    seed: o.seed,
    ...(fileGold || o.fileGold ? { fileGold: true } : {}),
  };
  const validated = await validateSubmission(path, options);
  return fromEvaluation(name, kind, scoreValidated(validated, options), validated);
}

const lastUserMessage = (messages: unknown): string => {
  if (!Array.isArray(messages)) return '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role === 'user' && typeof m.content === 'string') return m.content;
  }
  return '';
};

async function readSamples(
  file: string,
  o: SourceOptions,
): Promise<Pick<LlmDetails, 'latencyMs' | 'failures' | 'failureCounts'>> {
  const latencyMs: number[] = [];
  const failures: LlmSample[] = [];
  const failureCounts: Record<string, number> = {};
  if (!existsSync(file)) return { latencyMs, failures, failureCounts };
  for await (const line of readJsonlFile(file)) {
    if ('error' in line) throw new ReportInputError(`${file}:${line.line}`, line.error);
    const s = line.value as Record<string, unknown>;
    if (typeof s.latency_ms === 'number') latencyMs.push(s.latency_ms);
    if (s.split !== 'test' || s.correct === true || s.gold === undefined) continue;
    const task = String(s.task);
    failureCounts[task] = (failureCounts[task] ?? 0) + 1;
    if ((failureCounts[task] ?? 0) > o.maxExamples) continue;
    failures.push({
      task,
      id: String(s.id),
      status: s.status as LlmSample['status'],
      // A log-likelihood sample keeps its prompt as text; a generation sample, its messages.
      prompt: typeof s.prompt === 'string' ? s.prompt : lastUserMessage(s.messages),
      reply: typeof s.reply === 'string' ? s.reply : null,
      answer: (s.answer ?? null) as Prediction | null,
      gold: s.gold as Prediction,
      ...(typeof s.reason === 'string' ? { reason: s.reason } : {}),
      ...(Array.isArray(s.notes) ? { notes: s.notes.map(String) } : {}),
      ...(Array.isArray(s.candidates) ? { candidates: topCandidates(s.candidates, s.gold) } : {}),
    });
  }
  return { latencyMs, failures, failureCounts };
}

async function loadRunFolder(dir: string, o: SourceOptions): Promise<ReportSystem> {
  const folder = readRunLog(dir);
  const predictions = join(dir, 'predictions');
  if (!existsSync(predictions)) throw new ReportInputError(dir, 'a run folder without predictions/');
  const { summary } = folder;
  if (summary.kind === 'llm') {
    const manifest = folder.manifest;
    // A run limited to the first N items answers fewer items than the split has: score it on its own gold.
    const limit = manifest?.limit ?? undefined;
    const name = manifest?.model !== undefined ? basename(manifest.model) : basename(resolve(dir));
    const system = await scorePredictions(predictions, name, 'llm', o, limit !== undefined);
    system.source = dir;
    if (limit !== undefined) system.limit = limit;
    system.llm = {
      ...(manifest ? { manifest } : {}),
      summary: summary.llm,
      trust: readTrustFiles(dir),
      ...(await readSamples(folder.samplesFile ?? join(dir, 'samples.jsonl'), o)),
    };
    return system;
  }
  const system = await scorePredictions(predictions, basename(resolve(dir)), 'baseline', o);
  system.source = dir;
  const encoder =
    summary.kind === 'encoder'
      ? summary.encoder
      : summary.kind === 'finetuned'
        ? summary.finetuned
        : undefined;
  system.baseline = {
    runs: summary.runs as NonNullable<ReportSystem['baseline']>['runs'],
    ...(encoder ? { encoder: encoder as EncoderProvenance } : {}),
  };
  return system;
}

function loadJsonResult(file: string): LoadedInput {
  const value = readJson(file);
  const asEval = evaluationSchema.safeParse(value);
  if (asEval.success) {
    const e = asEval.data as unknown as EvaluationResult;
    return { systems: [fromEvaluation(basename(file, '.json'), 'eval-json', e)] };
  }
  const asCompare = compareJson.safeParse(value);
  if (asCompare.success) {
    const c = asCompare.data as unknown as ComparisonResult;
    const side = (which: 'a' | 'b'): ReportSystem => {
      const tasks: Record<string, TaskScores> = {};
      for (const [name, t] of Object.entries(c.tasks)) {
        const { score, ...metrics } = t[which];
        tasks[name] = { n: t.n, metrics, score, ci: {}, score_ci: null };
      }
      return {
        name: basename(c[which]),
        source: c[which],
        kind: 'compare-json',
        split: c.split,
        tasks,
        overall: c.overall ? c.overall[which] : null,
        overall_ci: null,
        unscored: {},
        errors: [],
        warnings: [],
        resamples: 0,
      };
    };
    return { systems: [side('a'), side('b')], comparison: c };
  }
  throw new ReportInputError(
    file,
    `neither a \`rumedbench eval --json\` nor a \`compare --json\` result (schema_version 1): ${asEval.error.issues[0]?.path.join('.') ?? ''} ${asEval.error.issues[0]?.message ?? ''}`.trim(),
  );
}

/** Reads one PATH of `rumedbench report`. */
export async function loadInput(path: string, o: SourceOptions): Promise<LoadedInput> {
  if (!existsSync(path)) throw new ReportInputError(path, 'not found');
  const stat = statSync(path);
  if (stat.isDirectory()) {
    if (existsSync(join(path, 'summary.json'))) return { systems: [await loadRunFolder(path, o)] };
    return { systems: [await scorePredictions(path, basename(resolve(path)), 'predictions', o)] };
  }
  if (path.endsWith('.json')) {
    if (basename(path) === 'summary.json') return { systems: [await loadRunFolder(dirname(path), o)] };
    return loadJsonResult(path);
  }
  if (path.endsWith('.zip') || path.endsWith('.jsonl')) {
    const name = basename(path).replace(/\.(zip|jsonl)$/, '');
    return { systems: [await scorePredictions(path, name, 'predictions', o)] };
  }
  throw new ReportInputError(
    path,
    'expected a predictions folder, .zip or <Task>.jsonl, an llm or baseline run folder, or a saved eval/compare --json result',
  );
}
