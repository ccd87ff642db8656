/**
 * The charts of the leaderboard pages, built with the report's spec builders (one definition of each chart) and
 * drawn in the scoring workers; drawn charts are kept for a while, since a submission's result rarely changes.
 */
import { createHash } from 'node:crypto';
import { deltaRows, levelsFor } from '../report/build.js';
import {
  type Chart,
  confusionChart,
  costChart,
  entityChart,
  type ForestRow,
  forestChart,
  labelChart,
  scoreChart,
} from '../report/charts.js';
import type { Strings } from '../report/i18n.js';
import type { ComparisonResult } from '../scoring/compare.js';
import { TASKS } from '../tasks/registry.js';
import type { Entry } from './boards/entries.js';
import type { Scorer } from './scorer.js';

/** A drawn chart, ready for a page. */
export interface ChartBlock {
  id: string;
  title: string;
  description: string;
  svg: string;
}

/** Score charts for every task; on the public board also the breakdowns (closed tests have none to show). */
export function entryCharts(e: Entry, r: Strings): Chart[] {
  const charts: Chart[] = [];
  for (const task of TASKS) {
    const t = e.result?.tasks[task.name];
    if (!t) continue;
    const levels = e.board === 'public' ? levelsFor(task.name, r) : [];
    charts.push(scoreChart(task.name, [{ system: e.model, score: t.score, ci: t.score_ci }], levels, r));
    const b = t.breakdown;
    if (e.board !== 'public' || !b) continue;
    const one = [{ system: e.model, breakdown: b }];
    const extra =
      task.kind === 'ranking'
        ? labelChart(task.name, one, 15, r)
        : task.kind === 'classification'
          ? confusionChart(task.name, one, r)
          : entityChart(one, r);
    if (extra) charts.push(extra);
  }
  return charts;
}

/** The most entries a board's cost chart shows (the best by overall): more points are a cloud, not a chart. */
const COST_CHART_MAX = 60;

/**
 * A board's cost against overall score, where two or more entries were priced (their uploads carried a cost): the
 * report's chart, one point per entry, the Pareto front marked. Entries of one model are told apart by their ids.
 */
export function boardCostChart(entries: readonly Entry[], r: Strings): Chart | null {
  const priced = entries
    .filter((e) => e.overall !== null && typeof e.usage?.cost_usd === 'number')
    .slice(0, COST_CHART_MAX);
  if (priced.length < 2) return null;
  const seen = new Map<string, number>();
  for (const e of priced) seen.set(e.model, (seen.get(e.model) ?? 0) + 1);
  const points = priced.map((e) => ({
    system: (seen.get(e.model) ?? 0) > 1 ? `${e.model} · ${e.id.slice(0, 8)}` : e.model,
    cost: e.usage?.cost_usd as number,
    score: e.overall as number,
  }));
  return costChart(
    points,
    r,
    points.map((p) => p.system),
  );
}

export function comparisonCharts(c: ComparisonResult, b: Entry, r: Strings): Chart[] {
  const rows: ForestRow[] = deltaRows(c).map((d) => ({
    system: b.model,
    row: `${d.task} ${d.metric}`,
    delta: d.delta.delta,
    ci: d.delta.ci,
    p: d.delta.p,
  }));
  return rows.length > 0 ? [forestChart(rows, [b.model], r)] : [];
}

/**
 * Drawn charts, kept by what they show. Invariant: a drawn chart is served only to a page that asked to draw the very
 * same charts, so nothing drawn for one view (the admin's exact closed scores) reaches another (a visitor's page).
 * The key is a digest of the charts themselves, not a name the caller makes up: a key that left out who was looking
 * once served the admin's chart to every visitor (issue #42). Building a spec is cheap; drawing it is what is kept.
 */
export class ChartCache {
  private readonly cache = new Map<string, { at: number; blocks: ChartBlock[] }>();
  constructor(
    private readonly scorer: Scorer,
    private readonly ttlMs = 10 * 60_000,
    private readonly max = 500,
  ) {}

  async draw(list: readonly Chart[]): Promise<ChartBlock[]> {
    if (list.length === 0) return [];
    const key = chartsKey(list);
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.blocks;
    const svgs = new Map(await this.scorer.render(list.map((c) => [c.id, c.spec, c.description])));
    const blocks = list.map((c) => ({
      id: c.id,
      title: c.title,
      description: c.description,
      svg: svgs.get(c.id) ?? '',
    }));
    if (this.cache.size >= this.max) this.cache.clear();
    this.cache.set(key, { at: Date.now(), blocks });
    return blocks;
  }

  clear(): void {
    this.cache.clear();
  }
}

/** Everything a drawn block is made of: each chart's id, title, description and spec. */
function chartsKey(list: readonly Chart[]): string {
  const h = createHash('sha256');
  for (const c of list) h.update(JSON.stringify([c.id, c.title, c.description, c.spec])).update('\n');
  return h.digest('hex');
}
