/**
 * `rumedbench run SPEC.json --out DIR`: runs a run spec (a spec file, or a run folder's manifest.json, whose `spec`
 * repeats that run exactly) with the engine every other command uses.
 */
import { readRunSpec, runEvaluation } from '../engine/run.js';
import { printBaseline } from './baseline.js';
import { printContamination } from './contamination.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { printOutcome, progressOf } from './llm.js';

export const RUN_FLAGS = {
  out: flag.text('--out <dir>', 'run folder', { required: true }),
  resume: flag.on('--resume', 'continue the run in --out, sending only unanswered requests'),
  retryErrors: flag.on(
    '--retry-errors',
    'continue the run in --out, re-asking the requests that failed (and any never sent)',
  ),
  data: flag.text('--data <dir>', "this machine's data folder, in place of the one the spec names"),
  progress: flag.on('--no-progress', 'no progress bar'),
  json: flag.jsonFlag('print summary.json (an LLM run) or the evaluation (a baseline) on stdout'),
} satisfies FlagTable;

export async function runSpecCommand(
  file: string,
  flags: FlagsOf<typeof RUN_FLAGS>,
  io: CliIo,
): Promise<number> {
  const spec = readRunSpec(file);
  const outcome = await runEvaluation(spec, {
    out: flags.out,
    log: io.log,
    ...(flags.data !== undefined ? { dataDir: flags.data } : {}),
    ...(flags.resume ? { resume: true } : {}),
    ...(flags.retryErrors ? { retryErrors: true } : {}),
    ...progressOf(io, flags.progress),
  });
  if (outcome.kind === 'llm') printOutcome(outcome, flags.json, io);
  else if (outcome.kind === 'baseline') printBaseline(outcome.result, outcome.spec, flags.json, io);
  else printContamination(outcome.result, flags.json, io);
  return EXIT.ok;
}
