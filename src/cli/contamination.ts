/** `rumedbench contamination`: has the model seen the split? (src/llm/contamination.ts) */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadSplit } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import {
  type GuidedProbeResult,
  guidedProbe,
  type OptionsProbeResult,
  ORDER_DEFAULTS,
  type OrderProbeResult,
  optionsProbe,
  orderProbe,
} from '../llm/contamination.js';
import { Journal } from '../llm/journal.js';
import { journaled } from '../llm/journaled.js';
import { renderTable } from '../report/table.js';
import { writeContamination } from '../scoring/trust-files.js';
import { isChoiceTask, parseTaskList } from '../tasks/registry.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { LLM_FLAGS, makeProvider } from './llm.js';

const PROBES = ['order', 'guided', 'options'] as const;
const JOURNAL = 'contamination.journal.jsonl';

export const CONTAMINATION_FLAGS = {
  provider: LLM_FLAGS.provider,
  model: LLM_FLAGS.model,
  baseUrl: LLM_FLAGS.baseUrl,
  apiKeyEnv: LLM_FLAGS.apiKeyEnv,
  header: LLM_FLAGS.header,
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
      default: ORDER_DEFAULTS.shards,
    },
  ),
  permutations: flag.count('--permutations <n>', 'order: random orders per shard', {
    min: 1,
    default: ORDER_DEFAULTS.permutations,
  }),
  items: flag.count('--items <n>', 'guided, options: items probed, the first of the split', {
    min: 2,
    default: 100,
  }),
  alpha: flag.decimal('--alpha <p>', 'verdict "contaminated" below this p-value', { default: 0.01 }),
  seed: flag.seedFlag('seed of the permutations'),
  out: flag.text(
    '--out <dir>',
    'write contamination.json there (a run folder: its report shows it), journaling every answer',
  ),
  resume: flag.on('--resume', 'continue the probes journaled in --out, asking only what has no answer'),
  json: flag.jsonFlag('print contamination.json on stdout'),
} satisfies FlagTable;
export type ContaminationFlags = FlagsOf<typeof CONTAMINATION_FLAGS>;

export async function runContamination(flags: ContaminationFlags, io: CliIo): Promise<number> {
  if (flags.resume && !flags.out)
    throw new UsageError('--resume continues the probes journaled in --out: give --out');
  // With --out, every answer is journaled as it arrives: a run killed at any point continues with --resume.
  let journal: Journal | undefined;
  if (flags.out) {
    const file = join(flags.out, JOURNAL);
    if (existsSync(file) && !flags.resume)
      throw new UsageError(
        `${flags.out} already holds probes (${JOURNAL}); --resume continues them, or choose another --out`,
      );
    mkdirSync(flags.out, { recursive: true });
    journal = await Journal.open(file);
    if (flags.resume) io.log.info(`${journal.size} answer(s) journaled in ${file}: not asked again`);
  }
  const made = await makeProvider(flags, io);
  const provider = journal ? journaled(made, journal, 'contamination') : made;
  const dataDir = resolveDataDir(flags.data);
  const tasks: Record<
    string,
    {
      order?: OrderProbeResult;
      guided?: GuidedProbeResult;
      options?: OptionsProbeResult | { skipped: string };
    }
  > = {};
  const probes = new Set(flags.probes);
  try {
    if (probes.has('order')) await provider.checkLoglik?.();
    for (const task of parseTaskList(flags.tasks)) {
      if (!(task.splits as readonly string[]).includes(flags.split)) continue;
      const records = await loadSplit(task, flags.split, { dataDir });
      const common = {
        provider,
        task,
        records,
        split: flags.split,
        seed: flags.seed,
        alpha: flags.alpha,
        ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      };
      const found: (typeof tasks)[string] = {};
      if (probes.has('order')) {
        io.log.info(`${task.name} ${flags.split}: order probe over ${records.length} items`);
        found.order = await orderProbe({ ...common, shards: flags.shards, permutations: flags.permutations });
      }
      if (probes.has('guided')) {
        io.log.info(
          `${task.name} ${flags.split}: guided probe over ${Math.min(flags.items, records.length)} items`,
        );
        found.guided = await guidedProbe({ ...common, items: flags.items });
      }
      if (probes.has('options')) {
        if (!isChoiceTask(task)) found.options = { skipped: 'no options: not a multiple-choice task' };
        else {
          io.log.info(
            `${task.name} ${flags.split}: options probe over ${Math.min(flags.items, records.length)} items`,
          );
          found.options = await optionsProbe({ ...common, items: flags.items, permutations: 1000 });
        }
      }
      tasks[task.name] = found;
    }
  } finally {
    await provider.close?.();
  }
  const result = {
    model: flags.model,
    split: flags.split,
    settings: {
      probes: flags.probes,
      shards: flags.shards,
      permutations: flags.permutations,
      items: flags.items,
      alpha: flags.alpha,
      seed: flags.seed,
    },
    tasks,
  };
  if (flags.out) {
    mkdirSync(flags.out, { recursive: true });
    writeContamination(flags.out, result);
  }
  if (flags.json) io.out(`${JSON.stringify(result)}\n`);
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
  return EXIT.ok;
}
