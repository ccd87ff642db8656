/**
 * Prompt sensitivity (`llm --prompts all|ID,…`): the same items asked with each of a task's formulations of its
 * instruction (`TaskPrompt.variants`; p1 is the task's own, the run itself), each formulation a run folder of its
 * own, `<out>/prompts/<id>/`. Per task: each formulation's score with its interval, their mean, standard deviation
 * and range, and the paired difference between the best and the worst (scoring/compare.ts), in
 * `<out>/prompt-variants.json`, the one writer of that file. MERA asks its tasks in several wordings for this reason.
 */

import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { Delta } from '../metrics/bootstrap.js';
import { readRunLog } from '../scoring/run-log.js';
import { writePromptVariants } from '../scoring/trust-files.js';
import { renderTable } from '../text-table.js';
import { compareRunFolders } from './perturbations.js';
import type { LlmRunOptions } from './run.js';

export interface PromptVariantRuns {
  variants: string[];
  tasks: Record<
    string,
    {
      scores: Record<string, { score: number; ci: [number, number] | null; dir: string }>;
      mean: number;
      sd: number;
      min: number;
      max: number;
      best: string;
      worst: string;
      /** Best − worst on the same items. */
      best_vs_worst: Delta;
    }
  >;
}

export async function runPromptVariants(
  base: LlmRunOptions,
  ids: readonly string[],
  log: Logger,
  /** The engine's run loop (../engine/loop.ts `runLlm`), which runs each formulation. */
  runLlm: (o: LlmRunOptions) => Promise<unknown>,
): Promise<PromptVariantRuns> {
  const dirs: Record<string, string> = { p1: base.outDir };
  for (const id of ids) {
    if (id === 'p1') continue;
    const dir = join(base.outDir, 'prompts', id);
    log.info(`prompt formulation ${id}: ${dir}`);
    await runLlm({ ...base, outDir: dir, promptVariant: id });
    dirs[id] = dir;
  }
  const variants = ['p1', ...ids.filter((id) => id !== 'p1')];
  const summaries = Object.fromEntries(variants.map((id) => [id, readRunLog(dirs[id] as string).summary]));
  const out: PromptVariantRuns = { variants, tasks: {} };
  const compared = new Map<string, ReturnType<typeof compareRunFolders>>();
  for (const task of base.tasks) {
    const scores: PromptVariantRuns['tasks'][string]['scores'] = {};
    for (const id of variants) {
      const s = summaries[id];
      const t = s?.kind === 'llm' ? s.tasks[task.name] : undefined;
      if (t) scores[id] = { score: t.score, ci: t.score_ci, dir: dirs[id] as string };
    }
    const entries = Object.entries(scores);
    if (entries.length < 2) continue;
    const values = entries.map(([, v]) => v.score);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const sd = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1));
    const best = entries.reduce((a, b) => (b[1].score > a[1].score ? b : a))[0];
    const worst = entries.reduce((a, b) => (b[1].score < a[1].score ? b : a))[0];
    // One comparison per pair of formulations, whichever tasks it serves.
    const pair = `${worst}\u0000${best}`;
    if (!compared.has(pair))
      compared.set(pair, compareRunFolders(base, dirs[worst] as string, dirs[best] as string));
    const c = await (compared.get(pair) as ReturnType<typeof compareRunFolders>);
    const delta = c.tasks[task.name]?.score;
    if (!delta) continue;
    out.tasks[task.name] = {
      scores,
      mean,
      sd,
      min: Math.min(...values),
      max: Math.max(...values),
      best,
      worst,
      best_vs_worst: delta,
    };
  }
  writePromptVariants(base.outDir, out);
  return out;
}

export function renderPromptVariants(r: PromptVariantRuns): string {
  const rows = Object.entries(r.tasks).map(([t, v]) => [
    t,
    r.variants.map((id) => (v.scores[id] ? `${id} ${v.scores[id].score.toFixed(2)}` : `${id} –`)).join('  '),
    `${v.mean.toFixed(2)} ± ${v.sd.toFixed(2)}`,
    `${v.min.toFixed(2)}–${v.max.toFixed(2)}`,
    `${v.best} − ${v.worst}: ${v.best_vs_worst.delta.toFixed(2)} [${v.best_vs_worst.ci[0].toFixed(2)}, ${v.best_vs_worst.ci[1].toFixed(2)}], p ${v.best_vs_worst.p < 0.001 ? '<0.001' : v.best_vs_worst.p.toFixed(3)}`,
  ]);
  return renderTable(['task', 'formulations', 'mean ± sd', 'range', 'best − worst'], rows, 2);
}
