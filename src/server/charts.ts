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
import { HttpError } from './errors.js';
import { ChartsBusyError, type Scorer } from './scorer.js';

/** Seconds a page is asked to wait while the chart lane is full. */
const BUSY_RETRY_AFTER_S = 5;

/** A drawn chart, ready for a page. */
export interface ChartBlock {
  id: string;
  title: string;
  description: string;
  svg: string;
  /** The same chart drawn for a phone's box (phone-charts.ts); '' where `svg` fits one already. */
  phoneSvg: string;
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
    row: `${d.task === 'RuMedOverall' ? r.overall : d.task} ${d.metric === 'score' ? r.score : r.metricName(d.metric)}`,
    delta: d.delta.delta,
    ci: d.delta.ci,
    p: d.delta.p,
  }));
  return rows.length > 0 ? [forestChart(rows, [b.model], r)] : [];
}

/** Drawn charts kept at most, and their SVG text at most (the bound that holds whatever a chart weighs). */
const KEPT_CHARTS = 500;
const KEPT_BYTES = 64 << 20;

/**
 * Drawn charts, kept by what they show. Invariant: a drawn chart is served only to a page that asked to draw the very
 * same charts, so nothing drawn for one view (the admin's exact closed scores) reaches another (a visitor's page).
 * The key is a digest of the charts themselves, not a name the caller makes up: a key that left out who was looking
 * once served the admin's chart to every visitor (issue #42). Building a spec is cheap; drawing it is what is kept.
 *
 * The cache is bounded (entries and bytes) and evicts the least recently used drawing, one at a time: cleared whole
 * when full, as it was, one reader cycling through more entries than it held made every page of every visitor a
 * drawing again (issue #57). A drawing asked for again while it is being drawn is drawn once.
 */
export class ChartCache {
  /** In order of use, the least recently used first (a Map keeps insertion order; a hit is moved to the end). */
  private readonly cache = new Map<string, { at: number; blocks: ChartBlock[]; bytes: number }>();
  private readonly drawing = new Map<string, Promise<ChartBlock[]>>();
  private bytes = 0;
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly maxBytes: number;

  constructor(
    private readonly scorer: Pick<Scorer, 'render'>,
    options: { ttlMs?: number; max?: number; maxBytes?: number } = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.max = options.max ?? KEPT_CHARTS;
    this.maxBytes = options.maxBytes ?? KEPT_BYTES;
  }

  /** The charts drawn (kept, being drawn, or drawn now); a `ChartsBusyError` when the chart lane is full. */
  draw(list: readonly Chart[]): Promise<ChartBlock[]> {
    if (list.length === 0) return Promise.resolve([]);
    const key = chartsKey(list);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      if (Date.now() - hit.at < this.ttlMs) {
        this.cache.set(key, hit);
        return Promise.resolve(hit.blocks);
      }
      this.bytes -= hit.bytes;
    }
    const pending = this.drawing.get(key);
    if (pending) return pending;
    const made = this.scorer
      .render(list.map((c) => [c.id, c.spec, c.description]))
      .then((drawn) => {
        const svgs = new Map(drawn.map(([id, wide, phone]) => [id, { wide, phone }]));
        const blocks = list.map((c) => ({
          id: c.id,
          title: c.title,
          description: c.description,
          svg: svgs.get(c.id)?.wide ?? '',
          phoneSvg: svgs.get(c.id)?.phone ?? '',
        }));
        this.keep(key, blocks);
        return blocks;
      })
      .catch((e: unknown) => {
        if (e instanceof ChartsBusyError)
          throw new HttpError(503, 'BUSY', 'charts are being drawn for others; try again in a few seconds', {
            retryAfter: BUSY_RETRY_AFTER_S,
          });
        throw e;
      })
      .finally(() => this.drawing.delete(key));
    this.drawing.set(key, made);
    return made;
  }

  private keep(key: string, blocks: ChartBlock[]): void {
    const bytes = blocks.reduce(
      (n, b) => n + b.svg.length + b.phoneSvg.length + b.title.length + b.description.length,
      0,
    );
    const old = this.cache.get(key);
    if (old) {
      this.cache.delete(key);
      this.bytes -= old.bytes;
    }
    this.cache.set(key, { at: Date.now(), blocks, bytes });
    this.bytes += bytes;
    for (const [k, v] of this.cache) {
      if (this.cache.size <= this.max && this.bytes <= this.maxBytes) break;
      this.cache.delete(k);
      this.bytes -= v.bytes;
    }
  }

  /** Drawings kept now, and their size. */
  get size(): { charts: number; bytes: number } {
    return { charts: this.cache.size, bytes: this.bytes };
  }

  clear(): void {
    this.cache.clear();
    this.bytes = 0;
  }
}

/** Everything a drawn block is made of: each chart's id, title, description and spec. */
function chartsKey(list: readonly Chart[]): string {
  const h = createHash('sha256');
  for (const c of list) h.update(JSON.stringify([c.id, c.title, c.description, c.spec])).update('\n');
  return h.digest('hex');
}
