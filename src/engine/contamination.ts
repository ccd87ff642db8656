/**
 * A contamination spec run: the probes of llm/contamination.ts on a split, through the spec's provider. With a run
 * folder, every answer is journaled as it arrives (a run killed at any point continues with `resume`, asking only
 * what was in flight) and the result is written as contamination.json beside the manifest.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadSplit } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import {
  type GuidedProbeResult,
  guidedProbe,
  type OptionsProbeResult,
  type OrderProbeResult,
  optionsProbe,
  orderProbe,
} from '../llm/contamination.js';
import { Journal } from '../llm/journal.js';
import { journaled } from '../llm/journaled.js';
import { type Logger, silentLogger } from '../log.js';
import { writeManifest } from '../scoring/run-log.js';
import { writeContamination } from '../scoring/trust-files.js';
import { getTask, isChoiceTask } from '../tasks/registry.js';
import { VERSION } from '../version.js';
import { commandLineOf } from './command-line.js';
import { openProvider } from './provider.js';
import { providerRecord } from './providers/registry.js';
import type { ContaminationSpec } from './spec.js';

const JOURNAL = 'contamination.journal.jsonl';

export interface ContaminationResult {
  model: string;
  split: string;
  settings: {
    probes: string[];
    shards: number;
    permutations: number;
    items: number;
    alpha: number;
    seed: number;
  };
  tasks: Record<
    string,
    {
      order?: OrderProbeResult;
      guided?: GuidedProbeResult;
      options?: OptionsProbeResult | { skipped: string };
    }
  >;
}

export async function runContaminationSpec(
  spec: ContaminationSpec,
  ctx: { out?: string; resume?: boolean; dataDir?: string; log?: Logger },
): Promise<ContaminationResult> {
  const log = ctx.log ?? silentLogger;
  if (ctx.resume && !ctx.out)
    throw new UsageError('--resume continues the probes journaled in --out: give --out');
  let journal: Journal | undefined;
  if (ctx.out) {
    const file = join(ctx.out, JOURNAL);
    if (existsSync(file) && !ctx.resume)
      throw new UsageError(
        `${ctx.out} already holds probes (${JOURNAL}); --resume continues them, or choose another --out`,
      );
    mkdirSync(ctx.out, { recursive: true });
    journal = await Journal.open(file);
    if (ctx.resume) log.info(`${journal.size} answer(s) journaled in ${file}: not asked again`);
  }
  const made = await openProvider(spec.provider, {
    concurrency: spec.concurrency ?? providerRecord(spec.provider.name).concurrency,
    log,
  });
  const provider = journal ? journaled(made, journal, 'contamination') : made;
  const dataDir = ctx.dataDir ?? resolveDataDir(spec.data);
  const tasks: ContaminationResult['tasks'] = {};
  const probes = new Set(spec.probes);
  try {
    if (probes.has('order')) await provider.checkLoglik?.();
    for (const task of spec.tasks.map(getTask)) {
      if (!(task.splits as readonly string[]).includes(spec.split)) continue;
      const records = await loadSplit(task, spec.split, { dataDir });
      const common = {
        provider,
        task,
        records,
        split: spec.split,
        seed: spec.seed,
        alpha: spec.alpha,
        ...(spec.concurrency !== undefined ? { concurrency: spec.concurrency } : {}),
      };
      const found: ContaminationResult['tasks'][string] = {};
      if (probes.has('order')) {
        log.info(`${task.name} ${spec.split}: order probe over ${records.length} items`);
        found.order = await orderProbe({ ...common, shards: spec.shards, permutations: spec.permutations });
      }
      if (probes.has('guided')) {
        log.info(
          `${task.name} ${spec.split}: guided probe over ${Math.min(spec.items, records.length)} items`,
        );
        found.guided = await guidedProbe({ ...common, items: spec.items });
      }
      if (probes.has('options')) {
        if (!isChoiceTask(task)) found.options = { skipped: 'no options: not a multiple-choice task' };
        else {
          log.info(
            `${task.name} ${spec.split}: options probe over ${Math.min(spec.items, records.length)} items`,
          );
          found.options = await optionsProbe({ ...common, items: spec.items, permutations: 1000 });
        }
      }
      tasks[task.name] = found;
    }
  } finally {
    await provider.close?.();
  }
  const result: ContaminationResult = {
    model: spec.provider.model,
    split: spec.split,
    settings: {
      probes: [...spec.probes],
      shards: spec.shards,
      permutations: spec.permutations,
      items: spec.items,
      alpha: spec.alpha,
      seed: spec.seed,
    },
    tasks,
  };
  if (ctx.out) {
    writeContamination(ctx.out, result);
    // Not a run folder of its own when it sits in one (beside an LLM run's manifest): the probes' file says it all.
    if (!existsSync(join(ctx.out, 'manifest.json')))
      writeManifest(ctx.out, {
        rumedbench_version: VERSION,
        created: new Date().toISOString(),
        spec,
        command: commandLineOf(spec),
      });
  }
  return result;
}
