/** `rumedbench contamination`: has the model seen the split? (src/llm/contamination.ts) */

import type { ContaminationResult } from '../engine/contamination.js';
import { CONTAMINATION_FLAGS, type ContaminationFlags } from '../engine/contamination-flags.js';
import { runEvaluation } from '../engine/run.js';
import type { ContaminationSpec } from '../engine/spec.js';
import { renderTable } from '../text-table.js';
import { type CliIo, EXIT } from './io.js';
import { modelSpecOf } from './llm.js';

export { CONTAMINATION_FLAGS, type ContaminationFlags } from '../engine/contamination-flags.js';

/** The run spec the flags of `contamination` stand for: each field where CONTAMINATION_FLAGS binds it. */
export function contaminationSpecOf(flags: ContaminationFlags): ContaminationSpec {
  return modelSpecOf('contamination', CONTAMINATION_FLAGS, flags) as ContaminationSpec;
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
