/**
 * The engine: one function runs a spec into a run folder, whoever made the spec (the CLI's flags, a plan's cell, a
 * file given to `rumedbench run`). The folder's manifest.json records the spec and, for people, the equivalent
 * command line, so that any run can be repeated exactly from its manifest.
 */
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { finished } from 'node:stream/promises';
import { type BaselineRunResult, runBaseline } from '../baselines/run.js';
import { resolveDataDir, splitPath } from '../data/paths.js';
import { readUtf8File } from '../data/text.js';
import type { VectorSource } from '../encoders/embed.js';
import { RumedbenchError, RunSpecError, UsageError } from '../errors.js';
import { OpenAIProvider } from '../llm/openai.js';
import { readOpenAIResults } from '../llm/openai-batch.js';
import type { Perturbation } from '../llm/perturb.js';
import { type PerturbationRuns, runPerturbations } from '../llm/perturbations.js';
import { type PromptVariantRuns, runPromptVariants } from '../llm/prompt-variants.js';
import type { Provider } from '../llm/provider.js';
import type { LlmRunOptions, LlmRunResult } from '../llm/run.js';
import type { RunProgress } from '../llm/send.js';
import { type Logger, silentLogger } from '../log.js';
import { withEngines } from '../optional-deps.js';
import { writeManifest } from '../scoring/run-log.js';
import { getTask } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import { VERSION } from '../version.js';
import { commandLineOf } from './command-line.js';
import { type ContaminationResult, runContaminationSpec } from './contamination.js';
import { batchApiOf, llmRunPhases, planLlmSpec } from './llm.js';
import { runLlm } from './loop.js';
import { openProvider } from './provider.js';
import { recordOf } from './providers/registry.js';
import {
  type BaselineSpec,
  batchSettingsOf,
  type ContaminationSpec,
  type LlmSpec,
  makeRunSpec,
  type RunSpec,
} from './spec.js';

export interface RunContext {
  /** The run folder (a contamination probe may run without one: nothing is then written). */
  out?: string;
  /** Continue the run in `out`: only what has no answer is asked. */
  resume?: boolean;
  /** Continue the run in `out`: only the requests that failed are asked again. */
  retryErrors?: boolean;
  /** With `resume`: items answered under other settings are asked again, paid again. */
  reask?: boolean;
  /** This machine's data folder, in place of the spec's. */
  dataDir?: string;
  log?: Logger;
  /** Told where an LLM run stands after each answer, and at the end. */
  onProgress?: (p: RunProgress, final: boolean) => void;
}

export type RunOutcome =
  | {
      kind: 'llm';
      spec: LlmSpec;
      result: LlmRunResult;
      formulations?: PromptVariantRuns;
      variants?: PerturbationRuns;
    }
  | { kind: 'baseline'; spec: BaselineSpec; result: BaselineRunResult }
  | { kind: 'contamination'; spec: ContaminationSpec; result: ContaminationResult };

/** What a manifest records of the spec it ran. */
export const specRecord = (spec: RunSpec) => ({ spec, command: commandLineOf(spec) });

/**
 * Runs a spec into `ctx.out`.
 *
 * @example await runEvaluation(makeRunSpec({ schema: 'rumedbench.run/1', kind: 'baseline', method: 'naive' }), { out: 'runs/naive' })
 */
export async function runEvaluation(spec: RunSpec, ctx: RunContext): Promise<RunOutcome> {
  switch (spec.kind) {
    case 'llm':
      return runLlmSpec(spec, { ...ctx, out: folderOf(ctx) });
    case 'baseline':
      return runBaselineSpec(spec, { ...ctx, out: folderOf(ctx) });
    case 'contamination':
      return { kind: 'contamination', spec, result: await runContaminationSpec(spec, ctx) };
  }
}

const folderOf = (ctx: RunContext): string => {
  if (ctx.out === undefined) throw new UsageError('a run folder is needed: give --out DIR');
  return ctx.out;
};

/**
 * `llm --batch-file`: the spec's requests (those a run would send) as an OpenAI batch input file, the bodies an
 * online run sends, keyed by their journal keys; nothing is sent. Returns how many were written.
 */
export async function writeBatchInput(spec: LlmSpec, file: string, log: Logger): Promise<number> {
  const api = recordOf(spec.provider).batchFile?.(spec.provider);
  if (!api) throw new UsageError('--batch-file writes OpenAI batch files: --provider openai');
  const { requests } = await planLlmSpec(spec, log);
  const { params } = llmRunPhases(spec, { log }).options;
  mkdirSync(dirname(file), { recursive: true });
  // Written as the lines are made: tens of thousands of requests are never one string.
  const out = createWriteStream(file);
  let n = 0;
  for (const j of requests) {
    if (j.kind !== 'chat') continue;
    if (!out.write(`${api.line(j.key, j.messages, j.params ?? params)}\n`)) await once(out, 'drain');
    n++;
  }
  out.end();
  await finished(out);
  return n;
}

/** A batch output file read (OpenAI's format, as `vllm run-batch` writes it): every line that names its request. */
function readBatchResults(provider: Provider, file: string) {
  if (!(provider instanceof OpenAIProvider))
    throw new UsageError('--batch-results reads OpenAI batch output files: --provider openai');
  if (!existsSync(file)) throw new UsageError(`--batch-results ${file}: no such file`);
  return readOpenAIResults(provider, file);
}

async function runLlmSpec(spec: LlmSpec, ctx: RunContext & { out: string }): Promise<RunOutcome> {
  const log = ctx.log ?? silentLogger;
  if (spec.repeats > 1 && spec.temperature === 0)
    log.warn('--repeats at --temperature 0: a deterministic server gives the same answer each time');
  const provider = await openProvider(spec.provider, { concurrency: spec.concurrency, log });
  const batch = batchSettingsOf(spec);
  try {
    const options: LlmRunOptions = {
      provider,
      ...(spec.batch_results !== undefined
        ? {
            batchResults: {
              file: spec.batch_results,
              results: readBatchResults(provider, spec.batch_results),
            },
          }
        : {}),
      ...(batch ? { batch: { api: batchApiOf(provider), ...batch } } : {}),
      ...llmRunPhases(spec, {
        outDir: ctx.out,
        log,
        ...(ctx.dataDir !== undefined ? { dataDir: ctx.dataDir } : {}),
        ...(ctx.resume ? { resume: true } : {}),
        ...(ctx.retryErrors ? { retryErrors: true } : {}),
        ...(ctx.reask ? { reask: true } : {}),
        ...(ctx.onProgress ? { onProgress: ctx.onProgress } : {}),
      }).options,
    };
    const result = await runLlm(options);
    const formulations =
      spec.prompts.length > 0 ? await runPromptVariants(options, spec.prompts, log, runLlm) : undefined;
    const variants =
      spec.perturb.length > 0
        ? await runPerturbations(options, spec.perturb as Perturbation[], log, runLlm)
        : undefined;
    return {
      kind: 'llm',
      spec,
      result,
      ...(formulations ? { formulations } : {}),
      ...(variants ? { variants } : {}),
    };
  } finally {
    await provider.close?.();
  }
}

async function runBaselineSpec(spec: BaselineSpec, ctx: RunContext & { out: string }): Promise<RunOutcome> {
  const log = ctx.log ?? silentLogger;
  const out = resolve(ctx.out);
  const dataDir = ctx.dataDir ?? resolveDataDir(spec.data);
  // No test file of any asked task: the data were never downloaded, or --data names the wrong folder. A run that
  // could score nothing is an error, not an empty table.
  const tasks = spec.tasks.map(getTask);
  if (
    !tasks.some((t) => (t.splits as readonly Split[]).some((sp) => existsSync(splitPath(dataDir, t, sp))))
  ) {
    throw new RumedbenchError(
      'DATA_NOT_FOUND',
      `no file of the asked tasks in ${dataDir} (e.g. ${splitPath(dataDir, tasks[0] ?? getTask('RuMedDaNet'), 'test')}): run \`rumedbench data download\`, or give --data DIR (or RUMEDBENCH_DATA) naming the folder that holds RuMedTop3/, RuMedDaNet/, …`,
    );
  }
  const embedder = spec.encoder ? await openEncoder(spec.encoder, log, spec.threads) : undefined;
  try {
    const result = await runBaseline({
      method: spec.method,
      ...(embedder ? { embedder } : {}),
      ...(spec.encoder?.C !== undefined ? { C: spec.encoder.C } : {}),
      tasks,
      dataDir,
      ...(spec.gold !== undefined ? { goldDir: resolve(spec.gold) } : {}),
      outDir: out,
      trainSplit: spec.train_split,
      seed: spec.seed,
      bootstrap: spec.bootstrap,
      logger: log,
      ...(spec.save !== undefined ? { saveDir: spec.save } : {}),
      ...(spec.threads !== undefined ? { threads: spec.threads } : {}),
      ...(spec.epochs !== undefined ? { epochs: spec.epochs } : {}),
      ...(spec.patience !== undefined ? { patience: spec.patience } : {}),
    });
    writeBaselineManifest(out, spec);
    return { kind: 'baseline', spec, result };
  } finally {
    await embedder?.close();
  }
}

/** A baseline's manifest.json: the spec it ran, and when, by which release. */
function writeBaselineManifest(dir: string, spec: BaselineSpec): void {
  mkdirSync(dir, { recursive: true });
  writeManifest(dir, { rumedbench_version: VERSION, created: new Date().toISOString(), ...specRecord(spec) });
}

async function openEncoder(
  e: NonNullable<BaselineSpec['encoder']>,
  log: Logger,
  threads: number | undefined,
): Promise<VectorSource> {
  if (e.endpoint !== undefined) {
    let apiKey: string | undefined;
    if (e.api_key_env) {
      apiKey = process.env[e.api_key_env];
      if (!apiKey)
        throw new UsageError(`--api-key-env ${e.api_key_env}: that environment variable is not set`);
    }
    const { defaultCacheDir, openEmbeddingCache } = await import('../encoders/cache.js');
    const { EndpointEmbedder } = await import('../encoders/endpoint.js');
    const cacheDir = e.cache === false ? undefined : (e.cache ?? defaultCacheDir());
    const embedder = new EndpointEmbedder({
      endpoint: e.endpoint,
      model: e.model,
      progress: (line) => log.info(line),
      ...(cacheDir ? { cache: openEmbeddingCache(join(cacheDir, 'embeddings.sqlite')) } : {}),
      ...(e.batch_size !== undefined ? { batchSize: e.batch_size } : {}),
      ...(e.max_dimensions !== undefined ? { maxDimensions: e.max_dimensions } : {}),
      ...(apiKey ? { apiKey } : {}),
    });
    log.info(`encoder ${e.model} at ${e.endpoint} (/embeddings), batches of ${embedder.batchSize}`);
    return embedder;
  }
  // onnxruntime's native library loads only for encoder runs.
  const { defaultCacheDir, openEmbedder } = await withEngines(
    'rumedbench baseline encoder',
    () => import('../encoders/open.js'),
  );
  const embedder = await openEmbedder({
    model: e.model,
    cacheDir: e.cache === false ? false : (e.cache ?? defaultCacheDir()),
    allowDownload: e.download,
    progress: (line) => log.info(line),
    ...(e.pooling ? { pooling: e.pooling } : {}),
    ...(e.dtype ? { dtype: e.dtype } : {}),
    ...(e.max_length !== undefined ? { maxLength: e.max_length } : {}),
    ...(e.batch_size !== undefined ? { batchSize: e.batch_size } : {}),
    ...(threads !== undefined ? { threads } : {}),
  });
  const i = embedder.info;
  log.info(
    `encoder ${i.model} (${i.dtype}, sha256 ${i.sha256.slice(0, 12)}…), ${embedder.pooling} pooling, max length ${embedder.maxLength}, batches of ${embedder.batchSize}`,
  );
  return embedder;
}

/**
 * A spec from a file: a spec itself, or a run folder's manifest.json (its `spec`), so that a run is repeated from
 * what it recorded.
 */
export function readRunSpec(file: string): RunSpec {
  const path = resolve(file);
  if (!existsSync(path)) throw new UsageError(`${file}: no such file`);
  let value: unknown;
  try {
    value = JSON.parse(readUtf8File(path));
  } catch (e) {
    throw new RunSpecError(file, [`not JSON (${(e as Error).message})`]);
  }
  if (value && typeof value === 'object' && !Array.isArray(value) && 'rumedbench_version' in value) {
    const spec = (value as { spec?: unknown }).spec;
    if (spec === undefined)
      throw new RunSpecError(file, [
        'a manifest written before run specs (no "spec" field): repeat that run with its command line',
      ]);
    return makeRunSpec(spec, `${file} (its spec)`);
  }
  return makeRunSpec(value, file);
}
