/** `rumedbench report`: a thin wrapper over runReport. */
import { UsageError } from '../errors.js';
import { formatIssue } from '../scoring/issues.js';
import { reportIssues } from './eval.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const REPORT_FLAGS = {
  out: flag.text('--out <file>', 'HTML file to write (default: report.html); with --format markdown, stdout'),
  data: flag.dataFlag(),
  split: flag.choice('--split <split>', 'split the predictions answer', ['test', 'dev'], { default: 'test' }),
  title: flag.text('--title <text>', 'the report title'),
  name: flag.text('--name <list>', 'comma-separated display names, one per PATH'),
  reference: flag.on('--reference', "the paper's rows in the summary table"),
  lang: flag.choice('--lang <lang>', 'language of the report', ['en', 'ru'], { default: 'en' }),
  svgDir: flag.text('--svg-dir <dir>', 'also write every chart as its own SVG file'),
  fileGold: flag.fileGoldFlag(),
  gold: flag.goldDirFlag(),
  format: flag.choice('--format <format>', 'html, or Markdown tables on stdout', ['html', 'markdown'], {
    default: 'html',
  }),
  bootstrap: flag.bootstrapFlag(),
  seed: flag.seedFlag(),
  maxLabels: flag.count('--max-labels <n>', 'gold labels in the RuMedTop3/RuMedSymptomRec charts', {
    min: 1,
    default: 15,
  }),
  maxExamples: flag.count('--max-examples <n>', 'wrong or unparsed LLM answers listed per task', {
    min: 0,
    default: 200,
  }),
} satisfies FlagTable;
export type ReportFlags = FlagsOf<typeof REPORT_FLAGS>;

export async function runReportCommand(paths: string[], flags: ReportFlags, io: CliIo): Promise<number> {
  const names = flags.name?.split(',').map((n) => n.trim());
  if (names?.some((n) => n === '')) throw new UsageError('--name: empty name in the list');
  // Vega and the views load with the command, so that `eval` and `tasks` start without them.
  const { runReport } = await import('../report/run.js');
  const { report, text, written } = await runReport(paths, {
    split: flags.split,
    lang: flags.lang,
    format: flags.format,
    bootstrap: flags.bootstrap,
    seed: flags.seed,
    maxLabels: flags.maxLabels,
    maxExamples: flags.maxExamples,
    reference: flags.reference ?? false,
    fileGold: flags.fileGold ?? false,
    commandLine: ['rumedbench', ...process.argv.slice(2)].join(' '),
    ...(flags.out !== undefined ? { out: flags.out } : {}),
    ...(flags.data !== undefined ? { dataDir: flags.data } : {}),
    ...(flags.gold !== undefined ? { goldDir: flags.gold } : {}),
    ...(flags.title !== undefined ? { title: flags.title } : {}),
    ...(names ? { names } : {}),
    ...(flags.svgDir !== undefined ? { svgDir: flags.svgDir } : {}),
  });
  if (flags.format === 'markdown' && flags.out === undefined) io.out(text);
  for (const s of report.systems) {
    for (const e of s.errors.slice(0, 5)) io.log.warn(`${s.name}: ${formatIssue(e)}`);
    if (s.errors.length > 5)
      io.log.warn(`${s.name}: … and ${s.errors.length - 5} more errors (listed in the report)`);
  }
  // A task left out of "Which systems differ": the files that keep it out, by name (the page says the same).
  const notRanked = (report.ranking?.warnings ?? []).filter((w) => w.code === 'TASK_NOT_RANKED');
  reportIssues(io, [], notRanked, notRanked.length);
  const scored = report.systems.filter((s) => Object.keys(s.tasks).length > 0).length;
  io.log.info(
    `report: ${report.systems.length} system(s), ${scored} with scored tasks${written.length ? `; wrote ${written.length > 3 ? `${written.length} files, ` : ''}${written.slice(-1)[0]}` : ''}`,
  );
  return scored === report.systems.length ? EXIT.ok : EXIT.submissionErrors;
}
