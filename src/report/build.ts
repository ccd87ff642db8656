/**
 * A report's content, before it is drawn: the systems, their paired comparisons against the first, the charts as
 * specs, and where everything came from. `html.tsx` and `markdown.ts` render this model; nothing here writes HTML.
 */
import { existsSync } from 'node:fs';
import { sha256File } from '../data/checksum.js';
import { splitPath } from '../data/paths.js';
import { UsageError } from '../errors.js';
import type { Delta } from '../metrics/bootstrap.js';
import { type ComparisonResult, clustersOfTasks, compareValidated } from '../scoring/compare.js';
import { readGoldDir } from '../scoring/gold-dir.js';
import { type RankResult, rankValidated } from '../scoring/rank.js';
import { ReferenceLoader } from '../scoring/reference.js';
import { OVERALL_TASKS, TASKS } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import { VERSION } from '../version.js';
import {
  type Chart,
  confusionChart,
  costChart,
  coverageChart,
  entityChart,
  type ForestRow,
  forestChart,
  type Level,
  labelChart,
  latencyChart,
  type RankPoint,
  rankingChart,
  reliabilityChart,
  scoreChart,
  unparsedChart,
} from './charts.js';
import { ciText, f2, pValue, rankInterval, signed } from './format.js';
import { type Lang, STRINGS, type Strings } from './i18n.js';
import { PAPER_ROWS, type PaperRow } from './paper.js';
import { loadInput, type ReportSystem } from './sources.js';

export interface ReportOptions {
  dataDir?: string;
  /** The split the predictions answer: `test` (default) or `dev`. */
  split?: Extract<Split, 'test' | 'dev'>;
  title?: string;
  /** Display names, in the order of the paths; by default each path's base name (an LLM run: its model). */
  names?: readonly string[];
  /** Show the paper's rows in the summary. */
  reference?: boolean;
  lang?: Lang;
  bootstrap?: number;
  seed?: number;
  /** Gold labels shown in the RuMedTop3 / RuMedSymptomRec charts. */
  maxLabels?: number;
  /** Wrong or unparsed LLM answers listed per task and system. */
  maxExamples?: number;
  /** Score RuMedBench-format files on the gold they carry, without checking ids (as `eval --file-gold`). */
  fileGold?: boolean;
  /**
   * Gold held apart (`--gold DIR`, as `eval --gold`): the gold of the split scored. Only scores come of it: the
   * per-item lists show what the run folders hold, and a run on held gold holds none.
   */
  goldDir?: string;
  /** The command line, for the provenance section. */
  commandLine?: string;
  /** The report's date; now by default (tests fix it). */
  date?: Date;
}

export interface PairComparison {
  base: string;
  system: string;
  result: ComparisonResult | null;
  /** Why there is no result. */
  why?: string;
}

export interface TaskSection {
  task: string;
  charts: Chart[];
}

export interface Report {
  title: string;
  lang: Lang;
  t: Strings;
  split: Split;
  systems: ReportSystem[];
  paperRows: readonly PaperRow[];
  comparisons: PairComparison[];
  /** Which systems differ (scoring/rank.ts), when two or more systems have item-level results. */
  ranking: RankResult | null;
  charts: {
    overall?: Chart;
    tasks: TaskSection[];
    forest?: Chart;
    /** Scores with intervals, coloured by group (two or more systems). */
    ranking?: Chart;
    llm: Chart[];
  };
  provenance: {
    version: string;
    date: string;
    commandLine?: string;
    dataDir: string;
    dataFiles: { file: string; sha256: string }[];
    resamples: number;
    seed: number;
  };
}

/** One ranking table's rows (best first) and its title, for the report's HTML and Markdown alike. */
export function rankingTables(
  r: RankResult,
  t: Pick<Strings, 'detectable' | 'overallName' | 'pairTests' | 'yes' | 'no'>,
): { title: string; rows: string[][]; pairs: string[][]; differ: number }[] {
  const rowsOf = (systems: RankResult['tasks'][string]['systems']) =>
    [...systems]
      .sort((a, b) => b.score - a.score)
      .map((s) => [
        s.name,
        `${f2(s.score)} ± ${f2(s.se)}`,
        `${s.rank} (${rankInterval(s.rank_ci)})`,
        s.group,
      ]);
  // Every Holm-tested pair, the smallest p first: what `rank` prints as "differ at α", with the pairs that do not.
  const pairsOf = (pairs: RankResult['tasks'][string]['pairs']) =>
    [...pairs]
      .sort((a, b) => a.p_holm - b.p_holm)
      .map((p) => [
        `${p.b} − ${p.a}`,
        `${signed(p.diff)} ${ciText(p.ci)}`,
        pValue(p.p_holm),
        t.pairTests[p.test] ?? p.test,
        p.p_holm < r.method.alpha ? t.yes : t.no,
      ]);
  const differing = (pairs: RankResult['tasks'][string]['pairs']) =>
    pairs.filter((p) => p.p_holm < r.method.alpha).length;
  const out = Object.entries(r.tasks).map(([task, x]) => ({
    title: `${task}${x.mde !== null ? ` · ${t.detectable(f2(x.mde))}` : ''}`,
    rows: rowsOf(x.systems),
    pairs: pairsOf(x.pairs),
    differ: differing(x.pairs),
  }));
  if (r.overall)
    out.push({
      title: t.overallName,
      rows: rowsOf(r.overall.systems),
      pairs: pairsOf(r.overall.pairs),
      differ: differing(r.overall.pairs),
    });
  return out;
}

/** One sentence per task left out of the ranking, naming the files that differ (HTML and Markdown alike). */
export function unrankedNotes(r: RankResult, t: Pick<Strings, 'notRanked' | 'unrankedFile'>): string[] {
  return r.unranked.map((u) =>
    t.notRanked(
      u.task,
      r.overall === null && OVERALL_TASKS.some((o) => o.name === u.task),
      u.differ.map((d) => t.unrankedFile(d)).join('; '),
    ),
  );
}

/** The mean of a paper row's metrics for a task: its task score. */
export function paperScore(row: PaperRow, task: string): number | undefined {
  const values = Object.values(row.tasks[task] ?? {});
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : undefined;
}

/** The paper's Naive and Human scores for a task (or the overall), drawn as reference lines. */
export function levelsFor(task: string | 'overall', t: Pick<Strings, 'paper' | 'paperRowName'>): Level[] {
  return PAPER_ROWS.filter((r) => r.model === 'Naive' || r.model === 'Human').flatMap((r) => {
    const value = task === 'overall' ? r.overall : paperScore(r, task);
    return value === undefined ? [] : [{ name: `${t.paperRowName(r.model)} (${t.paper})`, value }];
  });
}

/** Gives every system a distinct display name (charts colour by name). */
function uniqueNames(names: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const k = (seen.get(n) ?? 0) + 1;
    seen.set(n, k);
    return k === 1 ? n : `${n} (${k})`;
  });
}

/**
 * Reads and scores every path, compares each system with the first, and lays out the charts.
 * @example const report = await buildReport(['runs/a', 'runs/b'], { dataDir: 'data/', reference: true });
 */
export async function buildReport(paths: readonly string[], options: ReportOptions = {}): Promise<Report> {
  if (paths.length === 0) throw new UsageError('report: give at least one PATH');
  const lang = options.lang ?? 'en';
  const t = STRINGS[lang];
  const split = options.split ?? 'test';
  const bootstrap = options.bootstrap ?? 1000;
  const seed = options.seed ?? 0;
  const gold = options.goldDir !== undefined ? await readGoldDir(options.goldDir) : undefined;
  const references = new ReferenceLoader(options.dataDir, gold ? { gold } : {});
  const sourceOptions = {
    references,
    split,
    bootstrap,
    seed,
    maxExamples: options.maxExamples ?? 200,
    ...(options.fileGold ? { fileGold: true } : {}),
  };

  const systems: ReportSystem[] = [];
  const pathOf: number[] = [];
  const saved: [ReportSystem, ReportSystem, ComparisonResult][] = [];
  for (const [i, path] of paths.entries()) {
    const input = await loadInput(path, sourceOptions);
    for (const s of input.systems) {
      systems.push(s);
      pathOf.push(i);
    }
    const [a, b] = input.systems;
    if (input.comparison && a && b) saved.push([a, b, input.comparison]);
  }
  if (options.names) {
    if (options.names.length !== paths.length) {
      throw new UsageError(`--name gives ${options.names.length} name(s) for ${paths.length} path(s)`);
    }
    systems.forEach((s, i) => {
      const name = options.names?.[pathOf[i] as number] as string;
      // A saved comparison brings two systems from one path: A and B.
      const twins = pathOf.filter((p) => p === pathOf[i]).length;
      const before = pathOf.slice(0, i).filter((p) => p === pathOf[i]).length;
      s.name = twins > 1 ? `${name} ${before === 0 ? 'A' : 'B'}` : name;
    });
  }
  const names = uniqueNames(systems.map((s) => s.name));
  systems.forEach((s, i) => {
    s.name = names[i] as string;
  });

  const comparisons: PairComparison[] = saved.map(([a, b, result]) => ({
    base: a.name,
    system: b.name,
    result,
  }));
  const [first, ...rest] = systems as [ReportSystem, ...ReportSystem[]];
  for (const [i, s] of rest.entries()) {
    if (pathOf[i + 1] === pathOf[0]) continue; // the other side of a saved comparison, compared there
    if (!first.validated || !s.validated) {
      comparisons.push({ base: first.name, system: s.name, result: null, why: t.noItems });
      continue;
    }
    comparisons.push({
      base: first.name,
      system: s.name,
      result: compareValidated(first.validated, s.validated, {
        bootstrap,
        seed,
        clusters: await clustersOfTasks(references, first.validated),
      }),
    });
  }

  const ranked = systems.filter((s) => s.validated);
  const ranking =
    ranked.length >= 2 && bootstrap > 0
      ? await rankValidated(
          ranked.map((s) => s.validated as NonNullable<ReportSystem['validated']>),
          ranked.map((s) => s.name),
          { references, bootstrap, seed, split },
        )
      : null;

  return {
    title: options.title ?? t.title,
    lang,
    t,
    split,
    systems,
    paperRows: options.reference ? PAPER_ROWS : [],
    comparisons,
    ranking,
    charts: {
      ...layoutCharts(systems, comparisons, t, options.maxLabels ?? 15),
      ...(ranking
        ? {
            ranking: rankingChart(
              rankingPoints(ranking),
              t,
              systems.map((s) => s.name),
            ),
          }
        : {}),
    },
    provenance: {
      version: VERSION,
      date: (options.date ?? new Date()).toISOString(),
      ...(options.commandLine !== undefined ? { commandLine: options.commandLine } : {}),
      dataDir: references.dataDir,
      dataFiles: await dataChecksums(references.dataDir, systems, split),
      resamples: bootstrap,
      seed,
    },
  };
}

async function dataChecksums(dataDir: string, systems: readonly ReportSystem[], split: Split) {
  const files: { file: string; sha256: string }[] = [];
  for (const task of TASKS) {
    if (!systems.some((s) => s.tasks[task.name] || s.unscored[task.name])) continue;
    const file = splitPath(dataDir, task, split);
    if (existsSync(file))
      files.push({ file: `${task.name}/${split}_v1.jsonl`, sha256: (await sha256File(file)).sha256 });
  }
  return files;
}

function layoutCharts(
  systems: readonly ReportSystem[],
  comparisons: readonly PairComparison[],
  t: Strings,
  maxLabels: number,
): Report['charts'] {
  const names = systems.map((s) => s.name);
  const scored = systems.filter((s) => s.overall !== null);
  const overall =
    scored.length > 0
      ? scoreChart(
          'RuMedOverall',
          scored.map((s) => ({ system: s.name, score: s.overall as number, ci: s.overall_ci })),
          levelsFor('overall', t),
          t,
          names,
        )
      : undefined;

  const tasks: TaskSection[] = [];
  for (const task of TASKS) {
    const withTask = systems.filter((s) => s.tasks[task.name]);
    if (withTask.length === 0) continue;
    const charts: Chart[] = [
      scoreChart(
        task.name,
        withTask.map((s) => ({
          system: s.name,
          score: s.tasks[task.name]?.score as number,
          ci: s.tasks[task.name]?.score_ci ?? null,
        })),
        levelsFor(task.name, t),
        t,
        names,
      ),
    ];
    const breakdowns = withTask.flatMap((s) => {
      const b = s.tasks[task.name]?.breakdown;
      return b ? [{ system: s.name, breakdown: b }] : [];
    });
    const extra =
      task.kind === 'ranking'
        ? labelChart(task.name, breakdowns, maxLabels, t, names)
        : task.kind === 'classification'
          ? confusionChart(task.name, breakdowns, t)
          : entityChart(breakdowns, t, names);
    if (extra) charts.push(extra);
    tasks.push({ task: task.name, charts });
  }

  const forestRows: ForestRow[] = comparisons.flatMap((c) =>
    c.result
      ? deltaRows(c.result).map((d) => ({
          system: c.system,
          row: `${d.task} ${d.metric === 'score' ? t.score : t.metricName(d.metric)}`,
          delta: d.delta.delta,
          ci: d.delta.ci,
          p: d.delta.p,
        }))
      : [],
  );
  const compared = [...new Set(forestRows.map((r) => r.system))];
  const forest = forestRows.length > 0 ? forestChart(forestRows, compared, t, names) : undefined;

  const llm: Chart[] = [];
  const llmSystems = systems.filter((s) => s.llm);
  if (llmSystems.length > 0) {
    const rows = llmSystems.flatMap((s) =>
      OVERALL_TASKS.concat(TASKS.filter((x) => !OVERALL_TASKS.includes(x))).flatMap((task) => {
        const r = s.llm?.summary.tasks[task.name];
        return r
          ? [
              {
                system: s.name,
                task: task.name,
                rate: r.unparsed_rate,
                unparsed: r.unparsed,
                samples: r.samples,
              },
            ]
          : [];
      }),
    );
    const llmNames = llmSystems.map((s) => s.name);
    llm.push(unparsedChart(rows, llmNames, t, names));
    const series = llmSystems
      .filter((s) => (s.llm?.latencyMs.length ?? 0) > 0)
      .map((s) => ({ system: s.name, latencyMs: s.llm?.latencyMs ?? [] }));
    if (series.length > 0) llm.push(latencyChart(series, t, names));
    // Cost against score where at least two runs were priced: what each point of score costs.
    const priced = llmSystems.flatMap((s) =>
      typeof s.llm?.summary.cost === 'number' && s.overall !== null
        ? [{ system: s.name, cost: s.llm.summary.cost, score: s.overall }]
        : [],
    );
    if (priced.length >= 2) llm.push(costChart(priced, t, names));
    const calibrated = llmSystems.flatMap((s) =>
      Object.entries(s.llm?.summary.tasks ?? {}).flatMap(([task, r]) =>
        r.calibration && r.calibration.n > 0
          ? [
              {
                system: s.name,
                task,
                bins: r.calibration.bins ?? [],
                coverage: r.calibration.accuracy_at_coverage,
              },
            ]
          : [],
      ),
    );
    if (calibrated.some((c) => c.bins.length > 0))
      llm.push(
        reliabilityChart(
          calibrated.filter((c) => c.bins.length > 0),
          t,
          names,
        ),
      );
    if (calibrated.length > 0) llm.push(coverageChart(calibrated, t, names));
  }
  return { ...(overall ? { overall } : {}), tasks, ...(forest ? { forest } : {}), llm };
}

interface DeltaRow {
  task: string;
  metric: string;
  a: number | undefined;
  b: number | undefined;
  delta: Delta;
}

/** A comparison's differences in the paper's order, each metric of each task, then the overall score. */
export function deltaRows(c: ComparisonResult): DeltaRow[] {
  const rows: DeltaRow[] = [];
  for (const task of TASKS) {
    const r = c.tasks[task.name];
    if (!r) continue;
    for (const m of task.metrics) {
      const d = r.metrics[m];
      if (d) rows.push({ task: task.name, metric: m, a: r.a[m], b: r.b[m], delta: d });
    }
  }
  if (c.overall)
    rows.push({ task: 'RuMedOverall', metric: 'score', a: c.overall.a, b: c.overall.b, delta: c.overall });
  return rows;
}

/** Every chart of a report, in reading order. */
export function allCharts(report: Report): Chart[] {
  const c = report.charts;
  return [
    ...(c.overall ? [c.overall] : []),
    ...c.tasks.flatMap((s) => s.charts),
    ...(c.forest ? [c.forest] : []),
    ...(c.ranking ? [c.ranking] : []),
    ...c.llm,
  ];
}

/** A ranking's systems as chart points: per task, then the overall. */
function rankingPoints(r: RankResult): RankPoint[] {
  const rows: [string, { systems: RankResult['tasks'][string]['systems'] }][] = [
    ...Object.entries(r.tasks),
    ...(r.overall
      ? [['RuMedOverall', r.overall] as [string, { systems: RankResult['tasks'][string]['systems'] }]]
      : []),
  ];
  return rows.flatMap(([row, x]) =>
    x.systems.map((s) => ({
      system: s.name,
      row,
      score: s.score,
      se: s.se,
      rank_ci: s.rank_ci,
      group: s.group,
    })),
  );
}
