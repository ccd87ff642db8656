/**
 * The report's charts as Vega-Lite specs: pure functions from result data to a spec, so that the static report and
 * the leaderboard pages draw the same charts (`svg.ts` turns a spec into SVG). Each chart also carries its data as a
 * small table, the text alternative for readers who cannot see the picture.
 *
 * Every mark layer has a `name`; Vega writes it into the SVG as the class `<name>_marks`, which is how the tests
 * count what was drawn.
 */
import type { TopLevelSpec } from 'vega-lite';
import type { Interval } from '../metrics/bootstrap.js';
import { percentile } from '../metrics/quantile.js';
import type { Breakdown } from '../scoring/breakdown.js';
import { ciText, f2, pValue, rankInterval } from './format.js';
import type { Strings } from './i18n.js';

export interface Chart {
  /** A file-name-safe id, unique in a report (`--svg-dir` writes `<id>.svg`). */
  id: string;
  title: string;
  /** One sentence that says what the chart shows: the SVG's aria-label. */
  description: string;
  spec: TopLevelSpec;
  /** The data behind the chart, as a table. */
  table: { header: string[]; rows: string[][] };
}

/**
 * Okabe and Ito's palette (2008), distinguishable with the common colour-vision deficiencies; black and yellow are
 * left out because they vanish on a dark or a light page.
 */
export const SYSTEM_COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#D55E00', '#56B4E9'];

/** Each mark's `aria-label` (what a screen reader says, and the report's hover text) is its `tip` field. */
const TIP = { field: 'tip', type: 'nominal' } as const;

const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif';
/** Text and axes in `currentColor` follow the page's colour, so one SVG reads on a light and on a dark page. */
const INK = 'currentColor';
const CONFIG = {
  background: 'transparent',
  font: FONT,
  view: { stroke: null },
  axis: {
    labelColor: INK,
    titleColor: INK,
    domainColor: INK,
    tickColor: INK,
    gridColor: 'rgba(128,128,128,0.35)',
    labelFontSize: 11,
    titleFontSize: 12,
    labelLimit: 260,
  },
  legend: { labelColor: INK, titleColor: INK, orient: 'bottom', labelLimit: 260 },
  header: { labelColor: INK, titleColor: INK, labelFontSize: 12 },
  title: { color: INK, anchor: 'start', fontSize: 13, subtitleColor: INK },
} as const;

/** Chart ids become file names: keep letters, digits and dashes. */
export const slug = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

function top(title: string, description: string, body: Record<string, unknown>): TopLevelSpec {
  return { title, description, config: CONFIG, ...body } as unknown as TopLevelSpec;
}

/**
 * Colours by system: the legend lists only the systems in the chart, and each keeps the colour of its place in the
 * report (`palette`, every system in order), so one system has one colour in every chart.
 */
const systemColor = (
  present: readonly string[],
  palette: readonly string[] = present,
  title: string | null = null,
) => ({
  field: 'system',
  type: 'nominal' as const,
  title,
  scale: {
    domain: [...present],
    range: present.map(
      (n) => SYSTEM_COLORS[Math.max(0, palette.indexOf(n)) % SYSTEM_COLORS.length] as string,
    ),
  },
  legend: present.length > 1 ? { title } : null,
});

export interface ScorePoint {
  system: string;
  score: number;
  ci: Interval | null;
}
export interface Level {
  name: string;
  value: number;
}

/** One task's score (or the overall) for each system with its interval, and reference levels as vertical lines. */
export function scoreChart(
  task: string,
  points: readonly ScorePoint[],
  levels: readonly Level[],
  t: Strings,
  systems: readonly string[] = points.map((p) => p.system),
): Chart {
  const values = points.map((p) => ({
    system: p.system,
    score: p.score,
    lo: p.ci?.[0] ?? null,
    hi: p.ci?.[1] ?? null,
    tip: `${p.system}: ${f2(p.score)} ${ciText(p.ci)}`,
  }));
  const present = points.map((p) => p.system);
  const y = { field: 'system', type: 'nominal', title: null, sort: null, axis: { labelLimit: 260 } };
  const x = { type: 'quantitative', title: t.scoreAxis, scale: { domain: [0, 100] } };
  const layer: Record<string, unknown>[] = [
    {
      name: 'interval',
      transform: [{ filter: 'datum.lo !== null' }],
      mark: { type: 'rule', strokeWidth: 2 },
      encoding: {
        y,
        x: { ...x, field: 'lo' },
        x2: { field: 'hi' },
        color: systemColor(present, systems),
        description: TIP,
      },
    },
    {
      name: 'score',
      mark: { type: 'point', filled: true, size: 90, opacity: 1 },
      encoding: {
        y,
        x: { ...x, field: 'score' },
        color: systemColor(present, systems),
        description: TIP,
        tooltip: [
          { field: 'system', type: 'nominal' },
          { field: 'score', type: 'quantitative', format: '.2f' },
        ],
      },
    },
  ];
  if (levels.length > 0) {
    const values = levels.map((l, i) => ({
      name: l.name,
      value: l.value,
      tip: `${l.name}: ${f2(l.value)}`,
      i,
    }));
    layer.push({
      name: 'level',
      data: { values },
      mark: { type: 'rule', strokeDash: [5, 4], color: '#777777' },
      encoding: { x: { field: 'value', type: 'quantitative' }, description: TIP },
    });
    // Labels alternate between two heights, so that two close levels do not print over each other.
    for (const [k, dy] of [
      [0, -3],
      [1, -14],
    ] as const) {
      layer.push({
        name: `levelLabel${k}`,
        data: { values },
        transform: [{ filter: `datum.i % 2 === ${k}` }],
        mark: {
          type: 'text',
          align: 'left',
          dx: 3,
          dy,
          baseline: 'bottom',
          y: 0,
          fontSize: 10,
          color: '#777777',
        },
        encoding: { x: { field: 'value', type: 'quantitative' }, text: { field: 'name' } },
      });
    }
  }
  const title = t.scoreChart(task);
  const description = `${title}: ${points.map((p) => `${p.system} ${f2(p.score)} ${ciText(p.ci)}`).join('; ')}${
    levels.length ? `; ${levels.map((l) => `${l.name} ${f2(l.value)}`).join('; ')}` : ''
  }.`;
  return {
    id: `score-${slug(task)}`,
    title,
    description,
    spec: top(title, description, {
      width: 420,
      height: { step: 26 },
      data: { values },
      layer,
    }),
    table: {
      header: [t.system, t.score, t.ci95],
      rows: [
        ...points.map((p) => [p.system, f2(p.score), ciText(p.ci)]),
        ...levels.map((l) => [l.name, f2(l.value), '–']),
      ],
    },
  };
}

/** Ranking tasks: accuracy and Hit@3 by gold label, the most frequent labels, a dot per system. */
export function labelChart(
  task: string,
  systems: readonly { system: string; breakdown: Breakdown }[],
  maxLabels: number,
  t: Strings,
  palette: readonly string[] = systems.map((s) => s.system),
): Chart | undefined {
  const first = systems[0]?.breakdown;
  if (first?.kind !== 'labels') return undefined;
  const accuracy = t.metricName('accuracy');
  const hit3 = t.hit3;
  const shown = first.labels.slice(0, maxLabels);
  const names = systems.map((s) => s.system);
  const values: Record<string, unknown>[] = [];
  const rows: string[][] = [];
  for (const s of systems) {
    if (s.breakdown.kind !== 'labels') continue;
    const byLabel = new Map(s.breakdown.labels.map((l) => [l.label, l]));
    for (const g of shown) {
      const l = byLabel.get(g.label);
      if (!l) continue;
      const label = `${g.label} (n=${g.n})`;
      for (const [metric, value] of [
        [accuracy, l.accuracy],
        [hit3, l.hit_at_3 ?? 0],
      ] as const) {
        values.push({
          system: s.system,
          label,
          metric,
          value,
          tip: `${s.system} · ${label} · ${metric} ${f2(value)}`,
        });
      }
      rows.push([s.system, g.label, String(g.n), f2(l.accuracy), f2(l.hit_at_3 ?? 0)]);
    }
  }
  const title = t.byLabel(task, shown.length);
  return {
    id: `labels-${slug(task)}`,
    title,
    description: `${title}; ${t.systemsCount(names.length)}.`,
    spec: metricDots(title, values, {
      field: 'label',
      fieldTitle: null,
      metrics: [accuracy, hit3],
      mark: 'labelValue',
      width: 230,
      step: 16,
      size: 50,
      color: systemColor(names, palette),
    }),
    table: { header: [t.system, t.labelWord, 'n', accuracy, hit3], rows },
  };
}

/**
 * One panel per metric, one row per `field` value (a label, an entity type), one dot per system: the per-label and
 * per-entity charts.
 */
function metricDots(
  title: string,
  values: Record<string, unknown>[],
  o: {
    field: string;
    fieldTitle: string | null;
    metrics: readonly string[];
    mark: string;
    width: number;
    step: number;
    size: number;
    color: ReturnType<typeof systemColor>;
  },
): TopLevelSpec {
  return top(title, `${title}.`, {
    data: { values },
    facet: { column: { field: 'metric', type: 'nominal', title: null, sort: [...o.metrics] } },
    spec: {
      width: o.width,
      height: { step: o.step },
      layer: [
        {
          name: o.mark,
          mark: { type: 'point', filled: true, size: o.size, opacity: 0.9 },
          encoding: {
            y: { field: o.field, type: 'nominal', title: o.fieldTitle, sort: null },
            x: { field: 'value', type: 'quantitative', title: '%', scale: { domain: [0, 100] } },
            color: o.color,
            description: TIP,
            tooltip: [
              { field: 'system', type: 'nominal' },
              { field: o.field, type: 'nominal' },
              { field: 'metric', type: 'nominal' },
              { field: 'value', type: 'quantitative', format: '.1f' },
            ],
          },
        },
      ],
    },
  });
}

/** Classification tasks: a heat map per system, rows gold and columns predicted, shaded by the row's share. */
export function confusionChart(
  task: string,
  systems: readonly { system: string; breakdown: Breakdown }[],
  t: Strings,
): Chart | undefined {
  const values: Record<string, unknown>[] = [];
  const rows: string[][] = [];
  let labels: string[] = [];
  for (const s of systems) {
    if (s.breakdown.kind !== 'labels' || !s.breakdown.confusion) continue;
    const { labels: space, matrix } = s.breakdown.confusion;
    labels = space;
    const said = space.map((l) => t.labelName(task, l));
    labels = said;
    space.forEach((_, i) => {
      const gold = said[i] as string;
      const row = matrix[i] ?? [];
      const total = row.reduce((a, b) => a + b, 0);
      said.forEach((pred, j) => {
        const count = row[j] ?? 0;
        const share = total ? (100 * count) / total : 0;
        const tip = `${s.system}: ${t.gold} ${gold}, ${t.predicted} ${pred}: ${count} (${share.toFixed(1)}%)`;
        values.push({ system: s.system, gold, predicted: pred, count, share, tip });
      });
      rows.push([s.system, gold, ...row.map(String)]);
    });
  }
  if (values.length === 0) return undefined;
  const title = t.confusion(task);
  const axis = (field: string, name: string) => ({
    field,
    type: 'nominal',
    title: name,
    sort: labels,
    axis: { labelAngle: 0 },
  });
  return {
    id: `confusion-${slug(task)}`,
    title,
    description: `${title}.`,
    spec: top(title, `${title}.`, {
      data: { values },
      facet: {
        column: { field: 'system', type: 'nominal', title: null, sort: systems.map((s) => s.system) },
      },
      spec: {
        width: 70 * labels.length,
        height: 44 * labels.length,
        encoding: { x: axis('predicted', t.predicted), y: axis('gold', t.gold) },
        layer: [
          {
            name: 'cell',
            mark: { type: 'rect' },
            encoding: {
              color: {
                field: 'share',
                type: 'quantitative',
                title: `% ${t.gold}`,
                scale: { scheme: 'blues', domain: [0, 100] },
              },
              description: TIP,
              tooltip: [
                { field: 'gold', type: 'nominal' },
                { field: 'predicted', type: 'nominal' },
                { field: 'count', type: 'quantitative' },
              ],
            },
          },
          {
            name: 'cellCount',
            mark: { type: 'text', fontSize: 12 },
            encoding: {
              text: { field: 'count', type: 'quantitative' },
              color: { condition: { test: 'datum.share > 55', value: '#ffffff' }, value: '#111111' },
            },
          },
        ],
      },
    }),
    table: { header: [`${t.system}`, `${t.gold} \\ ${t.predicted}`, ...labels], rows },
  };
}

/** RuMedNER: precision, recall and F1 per entity type, a dot per system. */
export function entityChart(
  systems: readonly { system: string; breakdown: Breakdown }[],
  t: Strings,
  palette: readonly string[] = systems.map((s) => s.system),
): Chart | undefined {
  const values: Record<string, unknown>[] = [];
  const rows: string[][] = [];
  const precision = t.metricName('precision');
  const recall = t.metricName('recall');
  for (const s of systems) {
    if (s.breakdown.kind !== 'entities') continue;
    for (const e of s.breakdown.types) {
      const name = t.labelName('RuMedNER', e.type);
      const type = `${name} (n=${e.support})`;
      for (const [metric, value] of [
        [precision, e.precision],
        [recall, e.recall],
        ['F1', e.f1],
      ] as const) {
        values.push({
          system: s.system,
          type,
          metric,
          value,
          tip: `${s.system} · ${type} · ${metric} ${f2(value)}`,
        });
      }
      rows.push([s.system, name, String(e.support), f2(e.precision), f2(e.recall), f2(e.f1)]);
    }
  }
  if (values.length === 0) return undefined;
  const names = systems.map((s) => s.system);
  return {
    id: 'entities-rumedner',
    title: t.byEntity,
    description: `${t.byEntity}.`,
    spec: metricDots(t.byEntity, values, {
      field: 'type',
      fieldTitle: t.entityType,
      metrics: [precision, recall, 'F1'],
      mark: 'entityValue',
      width: 170,
      step: 22,
      size: 60,
      color: systemColor(names, palette),
    }),
    table: { header: [t.system, t.entityType, t.support, precision, recall, 'F1'], rows },
  };
}

export interface ForestRow {
  /** The system compared with the first. */
  system: string;
  /** e.g. "RuMedTop3 accuracy", "RuMedOverall score". */
  row: string;
  delta: number;
  ci: Interval | null;
  p: number;
}

/** The paired comparisons as a forest plot: one line per metric and system, a zero line. */
export function forestChart(
  rows: readonly ForestRow[],
  systems: readonly string[],
  t: Strings,
  /** Every system of the report, so that a system keeps its colour from the other charts. */
  palette: readonly string[] = systems,
): Chart {
  const values = rows.map((r) => ({
    system: r.system,
    row: r.row,
    delta: r.delta,
    lo: r.ci?.[0] ?? null,
    hi: r.ci?.[1] ?? null,
    p: r.p,
    tip: `${r.system} · ${r.row}: ${r.delta > 0 ? '+' : ''}${f2(r.delta)} ${ciText(r.ci)}, p ${pValue(r.p)}`,
  }));
  const order = [...new Set(rows.map((r) => r.row))];
  const y = { field: 'row', type: 'nominal', title: null, sort: order };
  const yOffset = { field: 'system', type: 'nominal', sort: [...systems] };
  return {
    id: 'forest',
    title: t.forest,
    description: `${t.forest}: ${rows.map((r) => `${r.system} ${r.row} ${f2(r.delta)} ${ciText(r.ci)}`).join('; ')}.`,
    spec: top(t.forest, `${t.forest}.`, {
      width: 440,
      // With an offset channel the step is per system within a row.
      height: { step: 14 },
      data: { values },
      layer: [
        {
          name: 'zero',
          data: { values: [{ zero: 0 }] },
          mark: { type: 'rule', color: '#777777', strokeDash: [4, 3] },
          encoding: { x: { field: 'zero', type: 'quantitative' } },
        },
        {
          name: 'deltaInterval',
          transform: [{ filter: 'datum.lo !== null' }],
          mark: { type: 'rule', strokeWidth: 2 },
          encoding: {
            y,
            yOffset,
            x: { field: 'lo', type: 'quantitative', title: t.delta },
            x2: { field: 'hi' },
            color: systemColor(systems, palette, t.system),
          },
        },
        {
          name: 'delta',
          mark: { type: 'point', filled: true, size: 60, opacity: 1 },
          encoding: {
            y,
            yOffset,
            x: { field: 'delta', type: 'quantitative' },
            color: systemColor(systems, palette, t.system),
            description: TIP,
            tooltip: [
              { field: 'system', type: 'nominal' },
              { field: 'row', type: 'nominal' },
              { field: 'delta', type: 'quantitative', format: '+.2f' },
              { field: 'p', type: 'quantitative', format: '.3f' },
            ],
          },
        },
      ],
    }),
    table: {
      header: [t.system, t.metric, t.delta, t.ci95, 'p'],
      rows: rows.map((r) => [r.system, r.row, f2(r.delta), ciText(r.ci), pValue(r.p)]),
    },
  };
}

export interface RankPoint {
  system: string;
  /** A task, or the overall. */
  row: string;
  score: number;
  se: number;
  rank_ci: [number, number];
  /** Group letters: systems sharing any letter are not distinguishable. */
  group: string;
}

/**
 * Which systems differ: each system's score with ±1.96 standard errors per task and overall, in its colour of every
 * other chart (`palette`: the report's systems in order), its name and group letters written beside it (systems
 * sharing a letter are not distinguishable). Groups are letters, not colours: a colour per letter would give one
 * system a different colour in each task.
 */
export function rankingChart(
  points: readonly RankPoint[],
  t: Strings,
  palette: readonly string[] = [...new Set(points.map((p) => p.system))],
): Chart {
  const values = points.map((p) => ({
    ...p,
    lo: p.score - 1.959963984540054 * p.se,
    hi: p.score + 1.959963984540054 * p.se,
    ranks: rankInterval(p.rank_ci),
    label: `${p.system} · ${p.group}`,
    tip: `${p.system}, ${p.row}: ${f2(p.score)} ± ${f2(p.se)}, ${t.rankColumns[2]} ${rankInterval(p.rank_ci)}, ${t.rankColumns[3]} ${p.group}`,
  }));
  const rows = [...new Set(points.map((p) => p.row))];
  const systems = [...new Set(points.map((p) => p.system))];
  const y = { field: 'row', type: 'nominal', title: null, sort: rows };
  const yOffset = { field: 'system', type: 'nominal', sort: systems };
  // The names are written beside the marks: no legend.
  const color = { ...systemColor(systems, palette, t.system), legend: null };
  return {
    id: 'ranking',
    title: t.ranking,
    description: `${t.ranking}: ${points.map((p) => `${p.row} ${p.system} ${f2(p.score)} ± ${f2(p.se)} (${p.group})`).join('; ')}.`,
    spec: top(t.ranking, `${t.ranking}.`, {
      width: 440,
      height: { step: 16 },
      data: { values },
      layer: [
        {
          name: 'interval',
          mark: { type: 'rule', strokeWidth: 2 },
          encoding: {
            y,
            yOffset,
            x: { field: 'lo', type: 'quantitative', title: `${t.score}, ${t.ci95}` },
            x2: { field: 'hi' },
            color,
          },
        },
        {
          name: 'score',
          mark: { type: 'point', filled: true, size: 60, opacity: 1 },
          encoding: {
            y,
            yOffset,
            x: { field: 'score', type: 'quantitative' },
            color,
            description: TIP,
            tooltip: [
              { field: 'system', type: 'nominal' },
              { field: 'row', type: 'nominal' },
              { field: 'score', type: 'quantitative', format: '.2f' },
              { field: 'ranks', type: 'nominal' },
              { field: 'group', type: 'nominal' },
            ],
          },
        },
        {
          name: 'letters',
          mark: { type: 'text', align: 'left', dx: 8, fontSize: 10 },
          encoding: { y, yOffset, x: { field: 'hi', type: 'quantitative' }, text: { field: 'label' }, color },
        },
      ],
    }),
    table: {
      header: [t.system, t.metric, ...t.rankColumns.slice(1)],
      rows: points.map((p) => [
        p.system,
        p.row,
        `${f2(p.score)} ± ${f2(p.se)}`,
        rankInterval(p.rank_ci),
        p.group,
      ]),
    },
  };
}

/** LLM runs: the share of replies that could not be read, per task. */
export function unparsedChart(
  rows: readonly { system: string; task: string; rate: number; unparsed: number; samples: number }[],
  systems: readonly string[],
  t: Strings,
  palette: readonly string[] = systems,
): Chart {
  return {
    id: 'llm-unparsed',
    title: t.unparsedChart,
    description: `${t.unparsedChart}: ${rows.map((r) => `${r.system} ${r.task} ${f2(r.rate)}%`).join('; ')}.`,
    spec: top(t.unparsedChart, `${t.unparsedChart}.`, {
      width: 420,
      height: { step: 14 },
      data: {
        values: rows.map((r) => ({
          ...r,
          tip: `${r.system} · ${r.task}: ${r.unparsed}/${r.samples} (${f2(r.rate)}%)`,
        })),
      },
      layer: [
        {
          name: 'unparsed',
          mark: { type: 'bar' },
          encoding: {
            y: { field: 'task', type: 'nominal', title: null, sort: null },
            yOffset: { field: 'system', type: 'nominal', sort: [...systems] },
            x: {
              field: 'rate',
              type: 'quantitative',
              title: t.unparsedAxis,
              // With nothing unparsed the axis would collapse to a point: keep at least 0-1%.
              scale: { domain: [0, Math.max(1, ...rows.map((r) => r.rate))], nice: true },
              axis: { format: '~r' },
            },
            color: systemColor(systems, palette, t.system),
            description: TIP,
            tooltip: [
              { field: 'system', type: 'nominal' },
              { field: 'task', type: 'nominal' },
              { field: 'unparsed', type: 'quantitative' },
              { field: 'samples', type: 'quantitative' },
              { field: 'rate', type: 'quantitative', format: '.2f' },
            ],
          },
        },
      ],
    }),
    table: {
      header: [t.system, t.task, t.unparsed, t.samples, '%'],
      rows: rows.map((r) => [r.system, r.task, String(r.unparsed), String(r.samples), f2(r.rate)]),
    },
  };
}

/** Latency quantiles by the codebase's one rule (metrics/quantile.ts), the same numbers summary.json holds. */
const quantile = (sorted: readonly number[], q: number): number =>
  percentile(Float64Array.from(sorted), q * 100);

/** LLM runs: a histogram of request latencies per system. */
export function latencyChart(
  series: readonly { system: string; latencyMs: readonly number[] }[],
  t: Strings,
  palette: readonly string[] = series.map((s) => s.system),
): Chart {
  const values = series.flatMap((s) => s.latencyMs.map((ms) => ({ system: s.system, seconds: ms / 1000 })));
  const systems = series.map((s) => s.system);
  const summary = series.map((s) => {
    const sorted = [...s.latencyMs].sort((a, b) => a - b);
    return [
      s.system,
      String(sorted.length),
      f2(quantile(sorted, 0.5) / 1000),
      f2(quantile(sorted, 0.95) / 1000),
      f2((sorted.at(-1) ?? Number.NaN) / 1000),
    ];
  });
  return {
    id: 'llm-latency',
    title: t.latencyChart,
    description: `${t.latencyChart}: ${summary.map((r) => `${r[0]} ${t.median} ${r[2]} ${t.sec}, p95 ${r[3]} ${t.sec}`).join('; ')}.`,
    spec: top(t.latencyChart, `${t.latencyChart}.`, {
      data: { values },
      facet: { row: { field: 'system', type: 'nominal', title: null, sort: systems } },
      spec: {
        width: 420,
        height: 90,
        layer: [
          {
            name: 'latency',
            mark: { type: 'bar' },
            encoding: {
              x: { field: 'seconds', type: 'quantitative', bin: { maxbins: 30 }, title: t.latencyAxis },
              y: { aggregate: 'count', type: 'quantitative', title: t.requests },
              color: systemColor(systems, palette),
            },
          },
        ],
      },
      resolve: { scale: { y: 'independent' } },
    }),
    table: {
      header: [t.system, t.requests, `${t.median}, ${t.sec}`, `p95, ${t.sec}`, `${t.max}, ${t.sec}`],
      rows: summary,
    },
  };
}

export interface CalibrationSeries {
  system: string;
  task: string;
  bins: readonly { lo: number; hi: number; n: number; accuracy: number; confidence: number }[];
  coverage: readonly { coverage: number; accuracy: number }[];
}

/** A 0–100 % axis. */
const percent = (field: string, title: string) => ({
  field,
  type: 'quantitative' as const,
  title,
  scale: { domain: [0, 100] },
});

/** One panel per task (the calibration charts), its layers drawn over the series' values. */
function taskPanels(
  series: readonly CalibrationSeries[],
  o: { id: string; title: string; description: string; values: object[]; height: number; layer: object[] },
): Pick<Chart, 'id' | 'title' | 'description' | 'spec'> {
  const tasks = [...new Set(series.map((s) => s.task))];
  return {
    id: o.id,
    title: o.title,
    description: o.description,
    spec: top(o.title, `${o.title}.`, {
      data: { values: o.values },
      facet: { column: { field: 'task', type: 'nominal', title: null, sort: tasks } },
      spec: { width: 200, height: o.height, layer: o.layer },
    }),
  };
}

/**
 * Log-likelihood runs: the reliability diagram (Guo et al., 2017): per confidence bin, accuracy against mean
 * confidence, a point sized by its items; on the diagonal a model is as right as it is sure. One panel per task.
 */
export function reliabilityChart(
  series: readonly CalibrationSeries[],
  t: Strings,
  palette: readonly string[] = [...new Set(series.map((s) => s.system))],
): Chart {
  const systems = [...new Set(series.map((s) => s.system))];
  const values = series.flatMap((s) =>
    s.bins.map((b) => ({
      system: s.system,
      task: s.task,
      confidence: 100 * b.confidence,
      accuracy: 100 * b.accuracy,
      n: b.n,
      tip: `${s.system} · ${s.task}: ${b.n} items, confidence ${f2(100 * b.confidence)}%, accuracy ${f2(100 * b.accuracy)}%`,
    })),
  );
  return {
    ...taskPanels(series, {
      id: 'llm-reliability',
      title: t.reliabilityChart,
      description: `${t.reliabilityChart}: ${series.map((s) => `${s.system} ${s.task} ${s.bins.length} bins`).join('; ')}.`,
      values,
      height: 200,
      layer: [
        {
          name: 'diagonal',
          data: {
            values: [
              { x: 0, y: 0 },
              { x: 100, y: 100 },
            ],
          },
          mark: { type: 'line', color: 'gray', strokeDash: [4, 4] },
          encoding: { x: percent('x', t.confidenceAxis), y: percent('y', t.accuracyAxis) },
        },
        {
          name: 'bins',
          mark: { type: 'point', filled: true, opacity: 0.8 },
          encoding: {
            x: percent('confidence', t.confidenceAxis),
            y: percent('accuracy', t.accuracyAxis),
            size: { field: 'n', type: 'quantitative', title: t.items },
            color: systemColor(systems, palette, t.system),
            description: TIP,
          },
        },
      ],
    }),
    table: {
      header: [t.system, t.task, t.items, t.confidenceAxis, t.accuracyAxis],
      rows: values.map((v) => [v.system, v.task, String(v.n), f2(v.confidence), f2(v.accuracy)]),
    },
  };
}

/** Selective prediction: the accuracy of the model's surest k % of the items, k from 10 to 100. */
export function coverageChart(
  series: readonly CalibrationSeries[],
  t: Strings,
  palette: readonly string[] = [...new Set(series.map((s) => s.system))],
): Chart {
  const systems = [...new Set(series.map((s) => s.system))];
  const values = series.flatMap((s) =>
    s.coverage.map((c) => ({
      system: s.system,
      task: s.task,
      coverage: 100 * c.coverage,
      accuracy: 100 * c.accuracy,
      tip: `${s.system} · ${s.task}: the surest ${f2(100 * c.coverage)}% answered ${f2(100 * c.accuracy)}% right`,
    })),
  );
  return {
    ...taskPanels(series, {
      id: 'llm-coverage',
      title: t.coverageChart,
      description: `${t.coverageChart}: ${series.map((s) => `${s.system} ${s.task} ${f2(100 * (s.coverage.at(-1)?.accuracy ?? Number.NaN))}% at full coverage`).join('; ')}.`,
      values,
      height: 160,
      layer: [
        {
          name: 'coverage',
          mark: { type: 'line', point: true },
          encoding: {
            x: percent('coverage', t.coverageAxis),
            y: percent('accuracy', t.accuracyAxis),
            color: systemColor(systems, palette, t.system),
            description: TIP,
          },
        },
      ],
    }),
    table: {
      header: [t.system, t.task, t.coverageAxis, t.accuracyAxis],
      rows: values.map((v) => [v.system, v.task, f2(v.coverage), f2(v.accuracy)]),
    },
  };
}

export interface CostPoint {
  system: string;
  /** USD, as the run's summary prices it. */
  cost: number;
  score: number;
}

/**
 * The systems no other beats on both counts: none costs as little or less and scores as high or higher, one of the
 * two strictly (the Pareto front of cost against score). In order of cost.
 */
export function paretoFront(points: readonly CostPoint[]): CostPoint[] {
  const sorted = [...points].sort((a, b) => a.cost - b.cost || b.score - a.score);
  const front: CostPoint[] = [];
  for (const p of sorted)
    if (front.length === 0 || p.score > (front.at(-1) as CostPoint).score) front.push(p);
  return front;
}

/** Cost against the overall score, one point per system, the Pareto front drawn through the systems on it. */
export function costChart(points: readonly CostPoint[], t: Strings, palette: readonly string[]): Chart {
  const front = new Set(paretoFront(points).map((p) => p.system));
  const values = points.map((p) => ({
    ...p,
    front: front.has(p.system),
    tip: `${p.system}: ${f2(p.score)}, $${p.cost.toPrecision(3)}${front.has(p.system) ? ` (${t.paretoFront})` : ''}`,
  }));
  const systems = points.map((p) => p.system);
  // Costs span orders of magnitude (a small local model, a large hosted one): a log axis where none is free.
  const logScale = points.every((p) => p.cost > 0);
  const x = {
    field: 'cost',
    type: 'quantitative',
    title: logScale ? `${t.costAxis} (${t.logScale})` : t.costAxis,
    ...(logScale ? { scale: { type: 'log' } } : {}),
  };
  // Ticks to two decimals, as scores are shown (one score alone would get a tick of full precision).
  const y = {
    field: 'score',
    type: 'quantitative',
    title: t.score,
    scale: { zero: false },
    axis: { format: '.2~f' },
  };
  return {
    id: 'llm-cost',
    title: t.costChart,
    description: `${t.costChart}: ${values.map((v) => v.tip).join('; ')}.`,
    spec: top(t.costChart, `${t.costChart}.`, {
      width: 420,
      height: 240,
      layer: [
        {
          name: 'front',
          data: { values: values.filter((v) => v.front).sort((a, b) => a.cost - b.cost) },
          mark: { type: 'line', interpolate: 'step-after', strokeDash: [4, 3], color: 'currentColor' },
          encoding: { x, y },
        },
        {
          // Every system a ring; those on the front filled as well.
          name: 'system',
          data: { values },
          mark: { type: 'point', size: 80, opacity: 1, strokeWidth: 2 },
          encoding: { x, y, color: systemColor(systems, palette), description: TIP },
        },
        {
          name: 'pareto',
          data: { values: values.filter((v) => v.front) },
          mark: { type: 'point', filled: true, size: 80, opacity: 1 },
          encoding: { x, y, color: systemColor(systems, palette), description: TIP },
        },
      ],
    }),
    table: {
      header: [t.system, t.costAxis, t.score, t.paretoFront],
      rows: points.map((p) => [p.system, p.cost.toPrecision(3), f2(p.score), front.has(p.system) ? '✓' : '']),
    },
  };
}
