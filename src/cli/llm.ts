/** `rumedbench llm`: its flags made into a run spec, which the engine runs (src/engine). */

import { resolve } from 'node:path';
import { type FlagTable, specInputOf, specOfFlags } from '../engine/flag-table.js';
import { LLM_FLAGS, type LlmFlags } from '../engine/llm-flags.js';
import { baseUrlOf, providerRecord } from '../engine/providers/registry.js';
import { type RunOutcome, runEvaluation, writeBatchInput } from '../engine/run.js';
import type { LlmSpec, ProviderSpec, RunSpec } from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { renderPerturbations } from '../llm/perturbations.js';
import { renderPromptVariants } from '../llm/prompt-variants.js';
import type { LlmRunResult } from '../llm/run.js';
import { PAPER_ROWS, type PaperRow } from '../report/paper.js';
import { renderDetails, renderSummary, renderTable, scoresPaperTask } from '../report/table.js';
import { TASKS } from '../tasks/registry.js';
import { type CliIo, EXIT } from './io.js';
import { progressBar } from './progress.js';

export { LLM_FLAGS, type LlmFlags } from '../engine/llm-flags.js';

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

/** The provider part of a spec, from the flags (each field where LLM_FLAGS binds it; checked by `makeRunSpec`). */
export function providerSpecOf(flags: ProviderFlags): ProviderSpec {
  const address = baseUrlOf(flags.provider);
  // A server only the user can name (an OpenAI-compatible one): said here, in the flag's words.
  if (!flags.baseUrl && address !== undefined && address.default === undefined)
    throw new UsageError(`--provider ${flags.provider} needs --base-url (e.g. http://localhost:8000/v1)`);
  return specInputOf(LLM_FLAGS, flags, flags.provider).provider as ProviderSpec;
}

/**
 * The run spec the flags of `llm` stand for: every flag fills the field LLM_FLAGS binds it to, and the spec's own
 * rules (`makeRunSpec`) judge the whole, their problems told in the flags' words. Checked here: only what the spec
 * cannot see (a batch file written instead of a run) and the prices, which the flags give one by one.
 */
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
  if (flags.reask && !flags.resume && !flags.retryErrors)
    throw new UsageError('--reask goes with --resume (or --retry-errors): it continues a run in --out');
  if (flags.batchFile !== undefined) {
    if (!providerRecord(flags.provider).batchFile || flags.mode === 'loglik')
      throw new UsageError(
        '--batch-file writes an OpenAI batch file of chat requests: --provider openai, --mode generate',
      );
    if (flags.batch || flags.batchResults !== undefined)
      throw new UsageError('--batch-file writes the batch and stops; not with --batch or --batch-results');
  }
  return modelSpecOf('llm', LLM_FLAGS, flags) as LlmSpec;
}

/**
 * The spec a command that asks a model makes of its flags (`llm`, `contamination`): the provider's part made apart
 * (a server only the user can name is asked for), every other field where the command's table binds it.
 */
export function modelSpecOf(
  kind: 'llm' | 'contamination',
  table: FlagTable,
  flags: ProviderFlags & Readonly<Record<string, unknown>>,
): RunSpec {
  return specOfFlags(table, flags, {
    kind,
    of: flags.provider,
    fixed: { provider: providerSpecOf(flags) },
    where: `the flags of ${kind}`,
  });
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
    ...(flags.reask ? { reask: true } : {}),
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
