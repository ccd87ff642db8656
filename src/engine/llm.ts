/** An LLM spec as the harness (src/llm) takes it: the run's options, and the model's name in request keys. */
import { resolve } from 'node:path';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import type { BatchApi } from '../llm/batch.js';
import type { PromptTemplate } from '../llm/prompt.js';
import type { Provider } from '../llm/provider.js';
import {
  type FinishInput,
  finishRun,
  type LlmRunOptions,
  type LlmRunResult,
  requestsOfRun,
} from '../llm/run.js';
import type { RunProgress } from '../llm/send.js';
import { type Logger, silentLogger } from '../log.js';
import { getTask } from '../tasks/registry.js';
import { commandLineOf } from './command-line.js';
import { type OpenProviderOptions, openProvider } from './provider.js';
import { providerNames, providerRecord, recordOf } from './providers/registry.js';
import type { LlmSpec } from './spec.js';

export interface LlmContext {
  outDir: string;
  log: Logger;
  /** This machine's data folder, in place of the spec's (a worker's `--data`). */
  dataDir?: string;
  resume?: boolean;
  retryErrors?: boolean;
  /** With `resume`: items answered under other settings are asked again (../llm/resume-settings.ts). */
  reask?: boolean;
  onProgress?: (p: RunProgress, final: boolean) => void;
  /** The manifest's extra fields (the spec itself, for `rumedbench run`). */
  manifest?: Record<string, unknown>;
}

/** The model as the harness names it in its request keys: a GGUF file by its name, a served model by its own. */
export const modelNameOf = (spec: LlmSpec): string => recordOf(spec.provider).modelName(spec.provider);

const maxReplyBytesOf = (spec: LlmSpec): { maxReplyBytes?: number } => {
  const bytes = recordOf(spec.provider).maxReplyBytes?.(spec.provider);
  return bytes !== undefined ? { maxReplyBytes: bytes } : {};
};

export function llmRunOptionsOf(spec: LlmSpec, c: LlmContext): Omit<LlmRunOptions, 'provider'> {
  return {
    tasks: spec.tasks.map(getTask),
    splits: spec.split,
    mode: spec.mode,
    ...(spec.label_words ? { labelWords: true } : {}),
    dataDir: c.dataDir ?? resolveDataDir(spec.data),
    ...(spec.gold !== undefined ? { goldDir: resolve(spec.gold) } : {}),
    outDir: resolve(c.outDir),
    shots: spec.shots,
    seed: spec.seed,
    params: {
      temperature: spec.temperature,
      maxTokens: spec.max_tokens,
      seed: spec.seed,
      ...(spec.stop.length > 0 ? { stop: spec.stop } : {}),
      ...(spec.reasoning_effort !== undefined ? { reasoningEffort: spec.reasoning_effort } : {}),
      ...(spec.thinking_budget !== undefined ? { thinkingBudget: spec.thinking_budget } : {}),
    },
    concurrency: spec.concurrency,
    bootstrap: spec.bootstrap,
    logger: c.log,
    ...(spec.limit !== undefined ? { limit: spec.limit } : {}),
    ...(spec.shard ? { shard: spec.shard } : {}),
    ...(spec.repeats > 1 ? { repeats: spec.repeats } : {}),
    ...(c.resume ? { resume: true } : {}),
    ...(c.retryErrors ? { retryErrors: true } : {}),
    ...(c.reask ? { reask: true } : {}),
    ...(spec.allow_failures ? { allowFailures: spec.allow_failures } : {}),
    ...maxReplyBytesOf(spec),
    ...(spec.system !== undefined ? { system: spec.system } : {}),
    ...(spec.templates ? { templates: spec.templates as Record<string, PromptTemplate> } : {}),
    ...(spec.prices
      ? {
          prices: {
            prompt: spec.prices.prompt,
            completion: spec.prices.completion,
            cached: spec.prices.cached,
            cacheWrite: spec.prices.cache_write,
          },
        }
      : {}),
    ...(spec.max_cost !== undefined ? { maxCost: spec.max_cost } : {}),
    ...(c.onProgress ? { onProgress: c.onProgress } : {}),
    ...(c.manifest ? { manifest: c.manifest } : {}),
  };
}

/** Every request of a spec's run, in the run's order (`plan check`, `plan submit`, `llm --batch-file`). */
export function planLlmSpec(spec: LlmSpec, log: Logger = silentLogger) {
  return llmRunPhases(spec, { log }).requests(log);
}

/**
 * An LLM spec as its phases: `requests()` → its requests, then the engine's one loop (./loop.ts `sendRun`) asks them into
 * a store, then `finish(run)` → the run folder (lm-evaluation-harness's Instance → LM split). The settings each phase
 * needs come from the spec here, once; a worker runs a queued cell with these, job by job.
 */
export interface LlmRunPhases {
  spec: LlmSpec;
  options: Omit<LlmRunOptions, 'provider'>;
  /** The model as the request keys name it. */
  model: string;
  /** Opens the provider; a worker gives the environment its keys come from and, for public servers only, a guard. */
  provider(o?: Pick<OpenProviderOptions, 'env' | 'guard'>): Promise<Provider>;
  /** Every request of the run, in its order, with the data files they were read from; `log` hears what is left out. */
  requests(log?: Logger): ReturnType<typeof requestsOfRun>;
  /** The run folder in `outDir` from a journal of the run's answers: samples, predictions, summary, manifest. */
  finish(run: Omit<FinishInput, 'options' | 'log'> & { outDir: string }): Promise<LlmRunResult>;
}

/** The batch API of an open provider, by its record: OpenAI's Batch API, Anthropic's Message Batches; or an error. */
export function batchApiOf(provider: Provider): BatchApi {
  const record = providerRecord(provider.describe().provider ?? '');
  if (!record.batches) {
    const have = providerNames().filter((n) => providerRecord(n).batches);
    throw new UsageError(
      `--batch: ${record.local ? 'a local model' : record.name} has no batch API; give --provider ${have.join(' or ')}`,
    );
  }
  return record.batches(provider);
}

/**
 * A spec's run, its options made once for every door: `runEvaluation` gives the run folder and how to continue it; a
 * worker, its data folder (it finishes each cell in a folder of its own).
 */
export function llmRunPhases(
  spec: LlmSpec,
  o: Omit<LlmContext, 'outDir' | 'manifest'> & { outDir?: string },
): LlmRunPhases {
  const { outDir = '.', ...context } = o;
  const options = llmRunOptionsOf(spec, {
    ...context,
    outDir,
    manifest: { spec, command: commandLineOf(spec) },
  });
  const model = modelNameOf(spec);
  return {
    spec,
    options,
    model,
    async provider(opening = {}) {
      const p = await openProvider(spec.provider, { concurrency: spec.concurrency, log: o.log, ...opening });
      if (spec.mode === 'loglik') await p.checkLoglik?.();
      return p;
    },
    requests: (log) => requestsOfRun(options, model, log),
    finish: ({ outDir, ...run }) => finishRun({ ...run, options: { ...options, outDir }, log: o.log }),
  };
}
