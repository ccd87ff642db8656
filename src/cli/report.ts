/** `rumedbench report`: a thin wrapper over runReport. */
import { UsageError } from '../errors.js';
import type { Lang } from '../report/i18n.js';
import { runReport } from '../report/run.js';
import { formatIssue } from '../scoring/issues.js';
import { type CliIo, EXIT } from './io.js';

export interface ReportFlags {
  out?: string;
  data?: string;
  split: 'test' | 'dev';
  title?: string;
  name?: string;
  reference?: boolean;
  lang: Lang;
  svgDir?: string;
  format: 'html' | 'markdown';
  bootstrap: number;
  seed: number;
  maxLabels: number;
  maxExamples: number;
  fileGold?: boolean;
}

export async function runReportCommand(paths: string[], flags: ReportFlags, io: CliIo): Promise<number> {
  const names = flags.name?.split(',').map((n) => n.trim());
  if (names?.some((n) => n === '')) throw new UsageError('--name: empty name in the list');
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
  const scored = report.systems.filter((s) => Object.keys(s.tasks).length > 0).length;
  io.log.info(
    `report: ${report.systems.length} system(s), ${scored} with scored tasks${written.length ? `; wrote ${written.length > 3 ? `${written.length} files, ` : ''}${written.slice(-1)[0]}` : ''}`,
  );
  return scored === report.systems.length ? EXIT.ok : EXIT.submissionErrors;
}
