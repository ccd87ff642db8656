/** Plain-text tables for the terminal: the paper-style summary, per-task intervals and the breakdowns. */
import type { Delta, Interval } from '../metrics/bootstrap.js';
import type { ComparisonResult } from '../scoring/compare.js';
import type { EvaluationResult } from '../scoring/score.js';
import { OVERALL_TASKS, tasksIn } from '../tasks/registry.js';
import type { MetricName } from '../tasks/types.js';
import { ciText, f2, pValue, signed } from './format.js';
import { PAPER_ROWS, type PaperRow } from './paper.js';

const ci = (i: Interval | null | undefined): string => ciText(i);

import { renderTable } from '../text-table.js';

export { renderTable };

const metricCell = (
  metrics: Partial<Record<MetricName, number>> | undefined,
  names: readonly MetricName[],
): string => (metrics ? names.map((m) => f2(metrics[m])).join('/') : '–');

/**
 * Whether a result scores any of the paper's five public tasks: where it does not (tasks of your own only), the
 * paper's table has no column for what was scored, so it is not printed at all rather than with an empty row.
 */
export const scoresPaperTask = (result: Pick<EvaluationResult, 'tasks'>): boolean =>
  OVERALL_TASKS.some((t) => result.tasks[t.name] !== undefined);

/** The paper's layout: one column per public task, `accuracy/Hit@3` or `accuracy/F1` where a task has two metrics. */
export function renderSummary(
  result: EvaluationResult,
  options: { reference?: boolean; label?: string; rows?: readonly PaperRow[] } = {},
): string {
  const header = ['Model', ...OVERALL_TASKS.map((t) => t.name), 'Overall'];
  const rows: string[][] = [];
  if (options.reference) {
    for (const p of options.rows ?? PAPER_ROWS) {
      rows.push([
        `${p.model}${PAPER_ROWS.includes(p) ? ' (paper)' : ''}`,
        ...OVERALL_TASKS.map((t) => metricCell(p.tasks[t.name], t.metrics)),
        f2(p.overall),
      ]);
    }
  }
  rows.push([
    options.label ?? 'this submission',
    ...OVERALL_TASKS.map((t) => metricCell(result.tasks[t.name]?.metrics, t.metrics)),
    f2(result.overall),
  ]);
  return renderTable(header, rows);
}

/** One line per metric: n, value and its bootstrap interval; then the task scores and the overall. */
export function renderDetails(result: EvaluationResult): string {
  const pct = Math.round(result.bootstrap.level * 100);
  const rows: string[][] = [];
  for (const t of tasksIn(Object.keys(result.tasks))) {
    const r = result.tasks[t.name];
    if (!r) continue;
    for (const m of t.metrics) rows.push([t.name, String(r.n), m, f2(r.metrics[m]), ci(r.ci[m])]);
    if (t.metrics.length > 1) rows.push([t.name, String(r.n), 'score', f2(r.score), ci(r.score_ci)]);
  }
  // Tasks defined in files only: no overall to speak of.
  if (OVERALL_TASKS.some((t) => result.tasks[t.name] !== undefined))
    rows.push(['RuMedOverall', '', 'score', f2(result.overall), ci(result.overall_ci)]);
  const header = ['Task', 'n', 'metric', 'value', result.bootstrap.resamples > 0 ? `${pct}% CI` : 'CI (off)'];
  return renderTable(header, rows);
}

/** Per-label or per-entity-type tables, and confusion matrices for classification tasks. */
export function renderBreakdown(result: EvaluationResult, maxLabels = 15): string {
  const parts: string[] = [];
  for (const t of tasksIn(Object.keys(result.tasks))) {
    const r = result.tasks[t.name];
    if (!r) continue;
    const b = r.breakdown;
    if (b.kind === 'entities') {
      parts.push(
        `${t.name}: per entity type (seqeval, exact span and type)`,
        renderTable(
          ['type', 'precision', 'recall', 'f1', 'support', 'predicted'],
          b.types.map((e) => [
            e.type,
            f2(e.precision),
            f2(e.recall),
            f2(e.f1),
            String(e.support),
            String(e.predicted),
          ]),
        ),
      );
      continue;
    }
    const shown = b.labels.slice(0, maxLabels);
    const more =
      b.labels.length > shown.length ? `\n… ${b.labels.length - shown.length} more labels (see --json)` : '';
    if (t.kind === 'ranking') {
      parts.push(
        `${t.name}: per gold label (most frequent first)`,
        renderTable(
          ['label', 'n', 'accuracy', 'hit@3', 'predicted'],
          shown.map((l) => [l.label, String(l.n), f2(l.accuracy), f2(l.hit_at_3), String(l.predicted)]),
        ) + more,
      );
    } else {
      parts.push(
        `${t.name}: per label`,
        renderTable(
          ['label', 'n', 'precision', 'recall', 'f1', 'predicted'],
          shown.map((l) => [
            l.label,
            String(l.n),
            f2(l.precision),
            f2(l.recall),
            f2(l.f1),
            String(l.predicted),
          ]),
        ) + more,
      );
    }
    if (b.confusion) {
      const { labels, matrix } = b.confusion;
      parts.push(
        `${t.name}: confusion matrix (rows gold, columns predicted)`,
        renderTable(
          ['gold \\ predicted', ...labels],
          labels.map((l, i) => [l, ...(matrix[i] ?? []).map(String)]),
        ),
      );
    }
  }
  return parts.join('\n\n');
}

const deltaRow = (task: string, metric: string, d: Delta): string[] => [
  task,
  metric,
  signed(d.delta),
  ci(d.ci),
  pValue(d.p),
  TEST_SHORT[d.test],
];

/** The test behind a p-value, in a word or two (the method line says the rest). */
const TEST_SHORT: Record<Delta['test'], string> = {
  'exact McNemar': 'McNemar',
  'approximate randomization': 'randomization',
  'approximate randomization by cluster': 'randomization by cluster',
};

export function renderComparison(c: ComparisonResult): string {
  const rows: string[][] = [];
  for (const t of tasksIn(Object.keys(c.tasks))) {
    const r = c.tasks[t.name];
    if (!r) continue;
    for (const m of t.metrics) {
      const d = r.metrics[m];
      if (d)
        rows.push([
          ...deltaRow(t.name, m, d).slice(0, 2),
          f2(r.a[m]),
          f2(r.b[m]),
          ...deltaRow(t.name, m, d).slice(2),
        ]);
    }
  }
  if (c.overall)
    rows.push([
      'RuMedOverall',
      'score',
      f2(c.overall.a),
      f2(c.overall.b),
      ...deltaRow('', '', c.overall).slice(2),
    ]);
  return renderTable(['Task', 'metric', 'A', 'B', 'B − A', '95% CI', 'p', 'test'], rows);
}
