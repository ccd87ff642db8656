/** `rumedbench contamination`: has the model seen the split? (src/llm/contamination.ts) */
import { resolve } from 'node:path';
import type { ContaminationResult } from '../engine/contamination.js';
import { runEvaluation } from '../engine/run.js';
import {
  CONTAMINATION_DEFAULTS,
  type ContaminationSpec,
  makeRunSpec,
  RUN_SPEC_SCHEMA,
} from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { ORDER_DEFAULTS } from '../llm/contamination.js';
import { parseTaskList } from '../tasks/registry.js';
import { renderTable } from '../text-table.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { LLM_FLAGS, providerSpecOf } from './llm.js';

const PROBES = ['order', 'guided', 'options'] as const;

export const CONTAMINATION_FLAGS = {
  provider: LLM_FLAGS.provider,
  model: LLM_FLAGS.model,
  baseUrl: LLM_FLAGS.baseUrl,
  apiKeyEnv: LLM_FLAGS.apiKeyEnv,
  header: LLM_FLAGS.header,
  headerEnv: LLM_FLAGS.headerEnv,
  downAfter: LLM_FLAGS.downAfter,
  contextSize: LLM_FLAGS.contextSize,
  gpu: LLM_FLAGS.gpu,
  threads: LLM_FLAGS.threads,
  timeoutMs: LLM_FLAGS.timeoutMs,
  maxRetries: LLM_FLAGS.maxRetries,
  maxWait: LLM_FLAGS.maxWait,
  maxReplyBytes: LLM_FLAGS.maxReplyBytes,
  concurrency: flag.count('--concurrency <n>', 'shards asked at once', { min: 1 }),
  tasks: flag.tasksFlag(),
  data: flag.dataFlag(),
  split: flag.choice('--split <split>', 'the split to probe', ['test', 'dev', 'private_test'], {
    default: 'test',
  }),
  probes: flag.custom(
    '--probes <list>',
    'probes to run: order (Oren et al., 2023), guided (Golchin & Surdeanu, 2023), options (Deng et al., 2023)',
    (v) => {
      const list = v.split(',').map((x) => x.trim());
      const bad = list.filter((x) => !(PROBES as readonly string[]).includes(x));
      if (bad.length > 0)
        throw new UsageError(
          `--probes: ${bad.join(', ')} not available; this version runs: ${PROBES.join(', ')}`,
        );
      return list;
    },
    { default: ['order'] },
  ),
  shards: flag.count(
    '--shards <n>',
    `order: shards of consecutive items (more where one would not fit the model's context; at least ${ORDER_DEFAULTS.minShardSize} items each)`,
    {
      min: 2,
      default: CONTAMINATION_DEFAULTS.shards,
    },
  ),
  permutations: flag.count('--permutations <n>', 'order: random orders per shard', {
    min: 1,
    default: CONTAMINATION_DEFAULTS.permutations,
  }),
  items: flag.count('--items <n>', 'guided, options: items probed, the first of the split', {
    min: 2,
    default: CONTAMINATION_DEFAULTS.items,
  }),
  alpha: flag.decimal('--alpha <p>', 'verdict "contaminated" below this p-value', {
    default: CONTAMINATION_DEFAULTS.alpha,
  }),
  seed: flag.seedFlag('seed of the permutations'),
  out: flag.text(
    '--out <dir>',
    'write contamination.json there (a run folder: its report shows it), journaling every answer',
  ),
  resume: flag.on('--resume', 'continue the probes journaled in --out, asking only what has no answer'),
  json: flag.jsonFlag('print contamination.json on stdout'),
} satisfies FlagTable;
export type ContaminationFlags = FlagsOf<typeof CONTAMINATION_FLAGS>;

/** The run spec the flags of `contamination` stand for. */
export function contaminationSpecOf(flags: ContaminationFlags): ContaminationSpec {
  return makeRunSpec(
    {
      schema: RUN_SPEC_SCHEMA,
      kind: 'contamination',
      provider: providerSpecOf(flags),
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      tasks: parseTaskList(flags.tasks).map((t) => t.name),
      ...(flags.data !== undefined ? { data: resolve(flags.data) } : {}),
      split: flags.split,
      probes: flags.probes,
      shards: flags.shards,
      permutations: flags.permutations,
      items: flags.items,
      alpha: flags.alpha,
      seed: flags.seed,
    },
    'the flags of contamination',
  ) as ContaminationSpec;
}

export async function runContamination(flags: ContaminationFlags, io: CliIo): Promise<number> {
  const outcome = await runEvaluation(contaminationSpecOf(flags), {
    log: io.log,
    ...(flags.out !== undefined ? { out: flags.out } : {}),
    ...(flags.resume ? { resume: true } : {}),
  });
  if (outcome.kind === 'contamination') printContamination(outcome.result, flags.json, io);
  return EXIT.ok;
}

/** The probes' verdicts on stdout: a table, or contamination.json with --json. */
export function printContamination(result: ContaminationResult, json: boolean, io: CliIo): void {
  const { tasks } = result;
  if (json) io.out(`${JSON.stringify(result)}\n`);
  else {
    const p = (x: number) => (x < 1e-4 ? '<0.0001' : x.toFixed(4));
    const rows = Object.entries(tasks).flatMap(([t, r]) => [
      ...(r.order
        ? [
            [
              t,
              'order',
              String(r.order.n),
              `${r.order.shards} × ${r.order.shard_size}, ${r.order.permutations} orders`,
              `Δ log p ${r.order.mean_difference.toFixed(3)}, t ${r.order.statistic.toFixed(2)}`,
              p(r.order.p_value),
              r.order.verdict,
            ],
          ]
        : []),
      ...(r.guided
        ? [
            [
              t,
              'guided',
              String(r.guided.n),
              '–',
              `ROUGE-L ${r.guided.rouge_guided.toFixed(3)} vs ${r.guided.rouge_general.toFixed(3)}`,
              p(r.guided.p_value),
              r.guided.verdict,
            ],
          ]
        : []),
      ...(r.options && 'probe' in r.options
        ? [
            [
              t,
              'options',
              String(r.options.n),
              '–',
              `exact ${(100 * r.options.exact_match).toFixed(1)}% vs chance ${(100 * r.options.chance).toFixed(1)}%`,
              p(r.options.p_value),
              r.options.verdict,
            ],
          ]
        : []),
    ]);
    io.out(`${renderTable(['task', 'probe', 'items', 'shards', 'statistic', 'p', 'verdict'], rows, 2)}\n`);
  }
}
