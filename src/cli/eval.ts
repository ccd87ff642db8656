/** `rumedbench eval` and `rumedbench compare`: thin wrappers over evaluateSubmission / compareSubmissions. */

import { UsageError } from '../errors.js';
import { formatIssue, type SubmissionIssue } from '../scoring/issues.js';
import { evaluateSubmission } from '../scoring/score.js';
import { OVERALL_TASKS } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { parseSplit } from './options.js';

/** The flags `eval` and `compare` share. */
export const SCORING_FLAGS = {
  data: flag.dataFlag(),
  split: flag.custom('--split <split>', 'split the predictions answer', parseSplit, {
    default: 'test' as Split,
  }),
  bootstrap: flag.bootstrapFlag(),
  seed: flag.seedFlag(),
  fileGold: flag.fileGoldFlag(),
  gold: flag.goldDirFlag(),
  maxIssues: flag.count('--max-issues <n>', 'problems printed per kind', { min: 0, default: 20 }),
  json: flag.jsonFlag(),
} satisfies FlagTable;

export const EVAL_FLAGS = {
  ...SCORING_FLAGS,
  reference: flag.on('--reference', "show the paper's rows (Naive … Human) beside the result"),
  breakdown: flag.on('--breakdown', 'per-label and per-entity-type tables, confusion matrices'),
  out: flag.text(
    '--out <dir>',
    'PATH is an lm-evaluation-harness output folder: also write it here as a run folder (predictions, samples, manifest, summary)',
  ),
} satisfies FlagTable;
export const COMPARE_FLAGS = SCORING_FLAGS;
export type EvalFlags = FlagsOf<typeof EVAL_FLAGS>;
export type CompareFlags = FlagsOf<typeof COMPARE_FLAGS>;

/** Errors and warnings, as `eval` prints them (also `submit`'s answer). */
export function reportIssues(
  io: CliIo,
  errors: SubmissionIssue[],
  warnings: SubmissionIssue[],
  max: number,
): void {
  for (const [list, write] of [
    [errors, io.log.error],
    [warnings, io.log.warn],
  ] as const) {
    for (const issue of list.slice(0, max)) write(formatIssue(issue).replace(/^(error|warning): /, ''));
    if (list.length > max) write(`… and ${list.length - max} more (--max-issues or --json lists them all)`);
  }
}

function evaluateOptions(flags: CompareFlags) {
  return {
    split: flags.split,
    bootstrap: flags.bootstrap,
    seed: flags.seed,
    ...(flags.data !== undefined ? { dataDir: flags.data } : {}),
    ...(flags.fileGold ? { fileGold: true } : {}),
    ...(flags.gold !== undefined ? { goldDir: flags.gold } : {}),
  };
}

export async function runEval(path: string, flags: EvalFlags, io: CliIo): Promise<number> {
  if (flags.out !== undefined) {
    const { isLmEvalOutput } = await import('../scoring/lm-eval.js');
    if (!isLmEvalOutput(path))
      throw new UsageError(
        `--out: ${path} is not an lm-evaluation-harness output folder (results_<time>.json and samples_<task>_<time>.jsonl); only such a run is written as a run folder`,
      );
  }
  // A run folder, an empty folder, nothing scored: the library reads and judges them as the CLI shows them.
  const result = await evaluateSubmission(path, evaluateOptions(flags));
  // Nothing scored: the error says why; "RuMedTop3 is not in the submission" four more times adds nothing.
  if (Object.keys(result.tasks).length === 0)
    result.warnings = result.warnings.filter((w) => w.code !== 'MISSING_TASK');
  if (flags.json) io.out(`${JSON.stringify(result)}\n`);
  else {
    // Loaded here: `eval --json` starts without the tables' modules.
    const { renderBreakdown, renderDetails, renderSummary } = await import('../report/table.js');
    const scored = Object.keys(result.tasks).length > 0;
    // Tasks defined in files only: the paper's five-column table would be all dashes.
    const paperTasks = OVERALL_TASKS.some((t) => result.tasks[t.name] !== undefined);
    const parts = scored
      ? [
          ...(paperTasks ? [renderSummary(result, { reference: flags.reference ?? false })] : []),
          renderDetails(result),
        ]
      : ['No task scored.'];
    // The paper's rows beside a row of dashes compare nothing: say so, once, instead.
    if (scored && flags.reference && !paperTasks)
      parts.push(
        "--reference: the paper's rows are of its own tasks, and none of them is scored here; not shown.",
      );
    if (flags.breakdown && scored) parts.push(renderBreakdown(result));
    const unscored = Object.entries(result.unscored).map(([t, why]) => `${t}: not scored: ${why}`);
    if (unscored.length > 0) parts.push(unscored.join('\n'));
    if (result.overall_six) {
      const { score, ci } = result.overall_six;
      parts.push(
        `Overall of six tasks (MedBench's, with ECG2Pathology): ${score.toFixed(2)}${ci ? ` [${ci[0].toFixed(2)}, ${ci[1].toFixed(2)}]` : ''}; the paper's overall above is of the five public tasks.`,
      );
    }
    if (result.overall === null && paperTasks) {
      parts.push(
        'Overall: not reported: it needs all five public tasks scored (RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI, RuMedNER).',
      );
    }
    io.out(`${parts.join('\n\n')}\n`);
  }
  reportIssues(io, result.errors, flags.json ? [] : result.warnings, flags.maxIssues);
  if (flags.out !== undefined && result.errors.length === 0) {
    const { readLmEval } = await import('../scoring/lm-eval.js');
    const { writeLmEvalRunFolder } = await import('../scoring/lm-eval-run.js');
    await writeLmEvalRunFolder(
      await readLmEval(path, flags.data !== undefined ? { dataDir: flags.data } : {}),
      result,
      flags.out,
    );
    io.log.info(`run folder written: ${flags.out} (rank, report and submit read it)`);
  } else if (flags.out !== undefined) io.log.error(`${flags.out}: not written: the run has errors (above)`);
  return result.errors.length > 0 ? EXIT.submissionErrors : EXIT.ok;
}

export async function runCompare(a: string, b: string, flags: CompareFlags, io: CliIo): Promise<number> {
  // Loaded here: `eval` starts without the comparison's modules.
  const [{ compareSubmissions }, { compareCalibration }] = await Promise.all([
    import('../scoring/compare.js'),
    import('../llm/compare-calibration.js'),
  ]);
  const result = await compareSubmissions(a, b, evaluateOptions(flags));
  // Two log-likelihood run folders: also the paired difference in calibration.
  const calibration = await compareCalibration(a, b, {
    bootstrap: result.method.resamples,
    seed: result.method.seed,
  });
  if (flags.json) io.out(`${JSON.stringify(calibration ? { ...result, calibration } : result)}\n`);
  else {
    const { renderComparison, renderTable } = await import('../report/table.js');
    io.out(
      `A: ${result.a}\nB: ${result.b}\n` +
        `interval: ${result.method.interval}; p: ${result.method.p_value}; ${result.method.resamples} resamples, seed ${result.method.seed}\n\n` +
        `${renderComparison(result)}\n`,
    );
    if (calibration)
      io.out(
        `\n${renderTable(
          ['task', 'n', 'ECE A', 'ECE B', 'B − A', '95% CI', 'p'],
          Object.entries(calibration).map(([t, d]) => [
            t,
            String(d.n),
            d.a.toFixed(3),
            d.b.toFixed(3),
            d.delta.toFixed(3),
            `[${d.ci[0].toFixed(3)}, ${d.ci[1].toFixed(3)}]`,
            d.p < 0.001 ? '<0.001' : d.p.toFixed(3),
          ]),
          2,
        )}\n`,
      );
  }
  reportIssues(io, result.errors, flags.json ? [] : result.warnings, flags.maxIssues);
  return result.errors.length > 0 ? EXIT.submissionErrors : EXIT.ok;
}
