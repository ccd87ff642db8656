/**
 * The flags of `rumedbench contamination`, declared once, each with the run spec field it fills (`to`), as `llm`'s
 * are (./llm-flags.ts, whose provider flags it takes): `contaminationSpecOf` (src/cli/contamination.ts) makes a spec
 * from them, `commandLineOf` writes a spec back as them, and docs/cli.md lists them.
 */
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { ORDER_DEFAULTS } from '../llm/contamination.js';
import { parseTaskList } from '../tasks/registry.js';
import * as flag from './flag-table.js';
import { LLM_FLAGS } from './llm-flags.js';
import { CONTAMINATION_DEFAULTS } from './spec.js';

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
  concurrency: flag.to('concurrency', flag.count('--concurrency <n>', 'shards asked at once', { min: 1 })),
  tasks: flag.to('tasks', flag.tasksFlag(), {
    toField: (v) => parseTaskList(v).map((t) => t.name),
    toValues: (v: string[]) => [v.join(',')],
  }),
  data: flag.to('data', flag.dataFlag(), { toField: (v) => resolve(v), isPath: true }),
  split: flag.to(
    'split',
    flag.choice('--split <split>', 'the split to probe', ['test', 'dev', 'private_test'], {
      default: CONTAMINATION_DEFAULTS.split,
    }),
  ),
  probes: flag.to(
    'probes',
    flag.custom(
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
      { default: [...CONTAMINATION_DEFAULTS.probes] as string[] },
    ),
    { toValues: (v: string[]) => [v.join(',')] },
  ),
  shards: flag.to(
    'shards',
    flag.count(
      '--shards <n>',
      `order: shards of consecutive items (more where one would not fit the model's context; at least ${ORDER_DEFAULTS.minShardSize} items each)`,
      { min: 2, default: CONTAMINATION_DEFAULTS.shards },
    ),
  ),
  permutations: flag.to(
    'permutations',
    flag.count('--permutations <n>', 'order: random orders per shard', {
      min: 1,
      default: CONTAMINATION_DEFAULTS.permutations,
    }),
  ),
  items: flag.to(
    'items',
    flag.count('--items <n>', 'guided, options: items probed, the first of the split', {
      min: 2,
      default: CONTAMINATION_DEFAULTS.items,
    }),
  ),
  alpha: flag.to(
    'alpha',
    flag.decimal('--alpha <p>', 'verdict "contaminated" below this p-value', {
      default: CONTAMINATION_DEFAULTS.alpha,
    }),
  ),
  seed: flag.to('seed', flag.seedFlag('seed of the permutations')),
  out: flag.text(
    '--out <dir>',
    'write contamination.json there (a run folder: its report shows it), journaling every answer',
  ),
  resume: flag.on('--resume', 'continue the probes journaled in --out, asking only what has no answer'),
  json: flag.jsonFlag('print contamination.json on stdout'),
} satisfies flag.FlagTable;
export type ContaminationFlags = flag.FlagsOf<typeof CONTAMINATION_FLAGS>;
