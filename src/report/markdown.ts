import { OVERALL_TASKS, TASKS } from '../tasks/registry.js';
import type { MetricName } from '../tasks/types.js';
import { deltaRows, type Report, rankingTables, unrankedNotes } from './build.js';
import { ciText, f2, pValue, signed } from './format.js';

/** Pipes and line breaks would end a cell; backslashes and HTML would be read as markup. */
const esc = (s: string): string => s.replace(/[\\|`*_<>[\]]/g, (c) => `\\${c}`).replace(/\r?\n/g, ' ');
const cell = (metrics: Partial<Record<MetricName, number>> | undefined, names: readonly MetricName[]) =>
  metrics ? names.map((m) => f2(metrics[m])).join('/') : '–';

function table(header: readonly string[], rows: readonly (readonly string[])[], leftColumns = 1): string {
  const align = header.map((_, i) => (i < leftColumns ? ':--' : '--:'));
  return [header, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

export function renderReportMarkdown(report: Report): string {
  const { t } = report;
  const parts: string[] = [`## ${esc(report.title)}`];
  const summary: string[][] = [
    ...report.paperRows.map((p) => [
      `${esc(p.model)} (${t.paper})`,
      ...OVERALL_TASKS.map((x) => cell(p.tasks[x.name], x.metrics)),
      f2(p.overall),
    ]),
    ...report.systems.map((s) => [
      `**${esc(s.name)}**`,
      ...OVERALL_TASKS.map((x) => cell(s.tasks[x.name]?.metrics, x.metrics)),
      f2(s.overall),
    ]),
  ];
  parts.push(table([t.model, ...OVERALL_TASKS.map((x) => x.name), t.overall], summary));

  const ci: string[][] = [];
  for (const s of report.systems) {
    for (const task of TASKS) {
      const r = s.tasks[task.name];
      if (r) ci.push([esc(s.name), task.name, String(r.n), f2(r.score), ciText(r.score_ci)]);
    }
    if (s.overall !== null) ci.push([esc(s.name), 'RuMedOverall', '', f2(s.overall), ciText(s.overall_ci)]);
  }
  parts.push(`### ${t.scoresWithCi}`, table([t.system, t.task, 'n', t.score, t.ci95], ci, 2));

  const cmp: string[][] = [];
  for (const c of report.comparisons) {
    if (!c.result) continue;
    const pair = `${esc(c.system)} − ${esc(c.base)}`;
    for (const d of deltaRows(c.result)) {
      cmp.push([pair, d.task, d.metric, signed(d.delta.delta), ciText(d.delta.ci), pValue(d.delta.p)]);
    }
  }
  if (report.ranking) {
    parts.push(
      `### ${t.ranking}`,
      t.rankingNote(report.ranking.method.alpha, report.ranking.method.resamples),
      ...unrankedNotes(report.ranking, t).map(esc),
    );
    for (const x of rankingTables(report.ranking, t))
      parts.push(
        `#### ${x.title}`,
        table(
          t.rankColumns,
          x.rows.map((r) => [esc(r[0] as string), ...r.slice(1)]),
          1,
        ),
        ...(x.pairs.length > 0
          ? [
              `${t.pairsCaption(x.pairs.length, x.differ, report.ranking.method.alpha)}:`,
              table(
                t.pairColumns,
                x.pairs.map((r) => [esc(r[0] as string), ...r.slice(1)]),
                1,
              ),
            ]
          : []),
      );
  }
  if (cmp.length > 0) {
    parts.push(`### ${t.comparison}`, table([t.system, t.task, t.metric, 'B − A', t.ci95, 'p'], cmp, 3));
  }
  return `${parts.join('\n\n')}\n`;
}
