/**
 * `llm --perturb`: after the clean run, each perturbation (./perturb.ts) is run as a run folder of its own,
 * `<out>/perturbed/<name>/`, over the same items and settings; then each is compared with the clean run, item by
 * item (scoring/compare.ts: paired bootstrap interval and approximate-randomization p-value of the difference), and
 * the comparisons are written to `<out>/perturbations.json`, the one writer of that file.
 */
import { join } from 'node:path';
import type { Logger } from '../log.js';
import type { Delta } from '../metrics/bootstrap.js';
import { type ComparisonResult, compareSubmissions } from '../scoring/compare.js';
import { writePerturbations } from '../scoring/trust-files.js';
import { renderTable } from '../text-table.js';
import { type Perturbation, perturbationName } from './perturb.js';
import type { LlmRunOptions, LlmRunResult } from './run.js';

export interface PerturbationRuns {
  seed: number;
  variants: Record<
    string,
    {
      dir: string;
      skipped: Record<string, string>;
      /** Per task: the clean and the perturbed score, and perturbed − clean with its interval and p-value. */
      tasks: Record<string, { n: number; clean: number; perturbed: number; delta: Delta }>;
    }
  >;
}

/** Two run folders of one run's variants compared item by item (B − A), with the run's data, seed and bootstrap. */
export function compareRunFolders(run: LlmRunOptions, a: string, b: string): Promise<ComparisonResult> {
  return compareSubmissions(join(a, 'predictions'), join(b, 'predictions'), {
    dataDir: run.dataDir,
    seed: run.seed ?? 0,
    ...(run.bootstrap !== undefined ? { bootstrap: Math.max(run.bootstrap, 100) } : {}),
    // A quick look (--limit) answers some items: compared on them, with the gold the predictions carry.
    ...(run.limit !== undefined ? { fileGold: true } : {}),
  });
}

export async function runPerturbations(
  clean: LlmRunOptions,
  perturbations: readonly Perturbation[],
  log: Logger,
  /** The engine's run loop (../engine/loop.ts `runLlm`), which runs each perturbed run. */
  runLlm: (o: LlmRunOptions) => Promise<LlmRunResult>,
): Promise<PerturbationRuns> {
  const out: PerturbationRuns = { seed: clean.seed ?? 0, variants: {} };
  for (const p of perturbations) {
    const name = perturbationName(p);
    const dir = join(clean.outDir, 'perturbed', name.replace(/=/g, '-'));
    log.info(`perturbed run ${name}: ${dir}`);
    const run = await runLlm({ ...clean, outDir: dir, perturb: p });
    const c = await compareRunFolders(clean, clean.outDir, dir);
    const tasks: PerturbationRuns['variants'][string]['tasks'] = {};
    for (const [t, v] of Object.entries(c.tasks))
      tasks[t] = { n: v.n, clean: v.a.score, perturbed: v.b.score, delta: v.score };
    out.variants[name] = {
      dir,
      skipped: (run.summary.llm as { skipped: Record<string, string> }).skipped,
      tasks,
    };
  }
  writePerturbations(clean.outDir, out);
  return out;
}

export function renderPerturbations(r: PerturbationRuns): string {
  const rows = Object.entries(r.variants).flatMap(([name, v]) =>
    Object.entries(v.tasks).map(([t, x]) => [
      name,
      t,
      String(x.n),
      x.clean.toFixed(2),
      x.perturbed.toFixed(2),
      `${x.delta.delta >= 0 ? '+' : ''}${x.delta.delta.toFixed(2)}`,
      `[${x.delta.ci[0].toFixed(2)}, ${x.delta.ci[1].toFixed(2)}]`,
      x.delta.p < 0.001 ? '<0.001' : x.delta.p.toFixed(3),
    ]),
  );
  return renderTable(['perturbation', 'task', 'n', 'clean', 'perturbed', 'Δ', '95% CI', 'p'], rows, 2);
}
