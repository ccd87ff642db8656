/**
 * The report as one self-contained HTML file: inline CSS, the charts as inline SVG, no external resource of any
 * kind, readable with JavaScript off (a small inline script only adds table sorting, chart tooltips and a filter for
 * the answer list), printable, light and dark. Views are hono/jsx components over the report model, so every string
 * that came from a user (a system name, a model reply) is escaped by the renderer, never by hand.
 */

import { raw } from 'hono/html';
import type { FC } from 'hono/jsx';
import type { Prediction } from '../metrics/item-stats.js';
import { ISSUE_FRAME, issueText } from '../scoring/issue-words.js';
import { formatIssue, type SubmissionIssue } from '../scoring/issues.js';
import { manifestSettings } from '../scoring/run-log.js';
import { type SayingPart, sayingParts } from '../tasks/reasons.js';
import { getTask, OVERALL_TASKS, TASKS, tasksIn } from '../tasks/registry.js';
import type { MetricName } from '../tasks/types.js';
import { browserAsset } from './assets.js';
import { allCharts, deltaRows, type Report, rankingTables, unrankedNotes } from './build.js';
import type { Chart } from './charts.js';
import { ciText, count, dateTime, f2, pValue, signed } from './format.js';
import { type Lang, STRINGS, type Strings } from './i18n.js';
import type { EncoderProvenance, LlmSample, ReportSystem } from './sources.js';
import { renderSvg } from './svg.js';

const cell = (metrics: Partial<Record<MetricName, number>> | undefined, names: readonly MetricName[]) =>
  metrics ? names.map((m) => f2(metrics[m])).join('/') : '–';
const show = (p: Prediction | null | undefined): string =>
  p === null || p === undefined ? '–' : typeof p === 'string' ? p : p.join(', ');
/** Milliseconds as a person reads them: "850 ms", "2.41 s" ("850 мс", "2.41 с"). */
const duration = (ms: number | null | undefined, t: Strings): string =>
  ms === null || ms === undefined
    ? '–'
    : ms < 1000
      ? `${Math.round(ms)} ${t.ms}`
      : `${(ms / 1000).toFixed(2)} ${t.sec}`;
/** Long model replies and prompts are cut for the page; samples.jsonl keeps them whole. */
const clip = (s: string, t: Strings, max = 4000): string =>
  s.length > max ? `${s.slice(0, max)}… [${t.moreChars(String(s.length - max))}]` : s;

/**
 * A table cell: words, or text that is no word of a language (a command line, a path, a file name, a settings key),
 * shown as code so that a Russian page does not read it as English.
 */
type Cell = string | { code: string } | { iso: string; text: string } | { parts: SayingPart[] };
const partText = (p: SayingPart): string => (typeof p === 'string' ? p : p.code);
const cellText = (c: Cell | undefined): string =>
  c === undefined
    ? ''
    : typeof c === 'string'
      ? c
      : 'code' in c
        ? c.code
        : 'parts' in c
          ? c.parts.map(partText).join('')
          : c.text;
/** Words with values inside them (an id, a parser's quote of the reply, a probe's name) shown as code. */
const Parts: FC<{ parts: readonly SayingPart[] }> = ({ parts }) => (
  <>{parts.map((p) => (typeof p === 'string' ? p : <code>{p.code}</code>))}</>
);
/** A moment is written as the page's language writes it, its ISO text kept in `datetime` for machines. */
const CellView: FC<{ c: Cell }> = ({ c }) =>
  typeof c === 'string' ? (
    // biome-ignore lint/complexity/noUselessFragments: the text stays a JSX child, escaped like every other
    <>{c}</>
  ) : 'code' in c ? (
    <code>{c.code}</code>
  ) : 'parts' in c ? (
    <Parts parts={c.parts} />
  ) : (
    <time datetime={c.iso}>{c.text}</time>
  );

/** Cells that hold a number, an interval or a p-value are right-aligned; words are not. */
const NUMERIC = /^(?:[-+<[]?\d|–$)/;
const numericColumn = (rows: readonly Cell[][], i: number): boolean =>
  rows.length > 0 && rows.every((r) => NUMERIC.test(cellText(r[i])));

const Table: FC<{
  header: string[];
  rows: Cell[][];
  sortable?: boolean;
  className?: string;
  /** Key-value tables: every cell left-aligned. */
  plain?: boolean;
}> = (p) => (
  <div class="table-wrap">
    <table class={`${p.sortable ? 'sortable ' : ''}${p.className ?? ''}`.trim()}>
      <thead>
        <tr>
          {p.header.map((h, i) => (
            <th scope="col" class={!p.plain && i > 0 && numericColumn(p.rows, i) ? 'num' : undefined}>
              {h}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {p.rows.map((r) => (
          <tr>
            {r.map((c, i) =>
              i === 0 ? (
                <th scope="row">
                  <CellView c={c} />
                </th>
              ) : (
                <td class={!p.plain && NUMERIC.test(cellText(c)) ? 'num' : undefined}>
                  <CellView c={c} />
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

const Figure: FC<{ chart: Chart; svg: string; t: Strings }> = ({ chart, svg, t }) => (
  <figure id={chart.id}>
    <div class="chart">{raw(svg)}</div>
    {chart.description.length <= 400 ? <figcaption>{chart.description}</figcaption> : ''}
    <details>
      <summary>{t.chartData}</summary>
      <Table header={chart.table.header} rows={chart.table.rows} sortable />
    </details>
  </figure>
);

const SummaryTable: FC<{ report: Report }> = ({ report }) => {
  const { t } = report;
  // Tasks defined in files follow the overall they are no part of.
  const defined = tasksIn(new Set(report.systems.flatMap((s) => Object.keys(s.tasks)))).filter(
    (x) => x.source !== undefined,
  );
  const header = [t.model, ...OVERALL_TASKS.map((x) => x.name), t.overall, ...defined.map((x) => x.name)];
  return (
    <div class="table-wrap">
      <table class="sortable summary">
        <thead>
          <tr>
            {header.map((h, i) => (
              <th scope="col" class={i > 0 ? 'num' : undefined}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {report.paperRows.map((p) => (
            <tr class="reference">
              <th scope="row">
                {t.paperRowName(p.model)} <span class="tag">{t.paper}</span>
              </th>
              {OVERALL_TASKS.map((x) => (
                <td class="num">{cell(p.tasks[x.name], x.metrics)}</td>
              ))}
              <td class="num">{f2(p.overall)}</td>
              {defined.map(() => (
                <td class="num">–</td>
              ))}
            </tr>
          ))}
          {report.systems.map((s) => (
            <tr class="system">
              <th scope="row">{s.name}</th>
              {OVERALL_TASKS.map((x) => {
                const r = s.tasks[x.name];
                // Two metrics share a cell: the interval under them is the task score's, and says so.
                const label = r && x.metrics.length > 1 ? `${report.t.score} ${f2(r.score)} ` : '';
                return (
                  <td class="num">
                    {cell(r?.metrics, x.metrics)}
                    {r?.score_ci ? <small class="ci">{`${label}${ciText(r.score_ci)}`}</small> : ''}
                  </td>
                );
              })}
              <td class="num">
                <strong>{f2(s.overall)}</strong>
                {s.overall_ci ? <small class="ci">{ciText(s.overall_ci)}</small> : ''}
              </td>
              {defined.map((x) => {
                const r = s.tasks[x.name];
                return (
                  <td class="num">
                    {r ? f2(r.score) : '–'}
                    {r?.score_ci ? <small class="ci">{ciText(r.score_ci)}</small> : ''}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};

/**
 * Why a task of a system is not scored, in the page's language: in English the scorer's words; in Russian from its
 * lines of that task (no gold here, or how many errors and the first one's meaning, its code beside it).
 */
function unscoredWhy(s: ReportSystem, task: string, why: string, lang: Lang): Cell {
  if (lang === 'en') return why;
  const mine = (i: SubmissionIssue) => i.task === task || i.file.endsWith(`${task}.jsonl`);
  const noGold = s.warnings.find((i) => i.code === 'NO_GOLD' && mine(i));
  const errors = s.errors.filter(mine);
  const first = noGold ?? errors[0];
  if (!first) return { code: why };
  return {
    parts: [
      noGold ? '' : STRINGS[lang].unscoredErrors(count(errors.length, lang)),
      issueText(first, lang),
      ' ',
      { code: `[${first.code}]` },
    ],
  };
}

function ciRows(report: Report): Cell[][] {
  const rows: Cell[][] = [];
  for (const s of report.systems) {
    for (const task of TASKS) {
      const r = s.tasks[task.name];
      if (!r) continue;
      for (const m of task.metrics)
        rows.push([
          s.name,
          task.name,
          count(r.n, report.lang),
          report.t.metricName(m),
          f2(r.metrics[m]),
          ciText(r.ci[m]),
        ]);
      if (task.metrics.length > 1)
        rows.push([
          s.name,
          task.name,
          count(r.n, report.lang),
          report.t.score,
          f2(r.score),
          ciText(r.score_ci),
        ]);
    }
    if (s.overall !== null)
      rows.push([s.name, 'RuMedOverall', '', report.t.score, f2(s.overall), ciText(s.overall_ci)]);
    for (const [task, why] of Object.entries(s.unscored))
      rows.push([s.name, task, '', report.t.notScored, '–', unscoredWhy(s, task, why, report.lang)]);
  }
  return rows;
}

const ComparisonSection: FC<{ report: Report; svgs: Map<string, string> }> = ({ report, svgs }) => {
  const { t } = report;
  const rows: string[][] = [];
  const notes: SayingPart[][] = [];
  let resamples = report.provenance.resamples;
  for (const c of report.comparisons) {
    if (!c.result) {
      notes.push([t.noComparison(c.system, c.why ?? '')]);
      continue;
    }
    for (const e of c.result.errors)
      notes.push(
        e.code === 'UNKNOWN_ID' && e.task !== undefined
          ? [t.notComparedTask(c.system, e.task)]
          : report.lang === 'en'
            ? [`${c.system}: ${e.message}`]
            : [
                `${c.system}: ${issueText(e, report.lang)}`,
                ...(e.id !== undefined ? [' (', { code: e.id }, ')'] : []),
                ' ',
                { code: `[${e.code}]` },
              ],
      );
    resamples = c.result.method.resamples;
    for (const d of deltaRows(c.result)) {
      rows.push([
        `${c.system} − ${c.base}`,
        d.task,
        d.metric === 'score' ? t.score : t.metricName(d.metric),
        f2(d.a),
        f2(d.b),
        signed(d.delta.delta),
        ciText(d.delta.ci),
        pValue(d.delta.p),
      ]);
    }
  }
  const forest = report.charts.forest;
  return (
    <section id="comparison">
      <h2>{t.comparison}</h2>
      <p class="note">{t.comparisonNote(resamples)}</p>
      {notes.map((n) => (
        <p class="note">
          <Parts parts={n} />
        </p>
      ))}
      {rows.length > 0 ? (
        <Table header={[t.system, t.task, t.metric, 'A', 'B', 'B − A', t.ci95, 'p']} rows={rows} sortable />
      ) : (
        ''
      )}
      {forest ? <Figure chart={forest} svg={svgs.get(forest.id) ?? ''} t={t} /> : ''}
    </section>
  );
};

const RankingSection: FC<{ report: Report; svgs: Map<string, string> }> = ({ report, svgs }) => {
  const { t } = report;
  const r = report.ranking;
  if (!r) return null;
  return (
    <section id="ranking">
      <h2>{t.ranking}</h2>
      <p class="note">{t.rankingNote(r.method.alpha, r.method.resamples)}</p>
      {unrankedNotes(r, t).map((n) => (
        <p class="note">{n}</p>
      ))}
      {report.charts.ranking ? (
        <Figure chart={report.charts.ranking} svg={svgs.get(report.charts.ranking.id) ?? ''} t={t} />
      ) : (
        ''
      )}
      {rankingTables(r, t).map((x) => (
        <>
          <h3>{x.title}</h3>
          <Table header={t.rankColumns} rows={x.rows} className="ranking" />
          {x.pairs.length > 0 ? (
            <details class="pairs">
              <summary>{t.pairsCaption(x.pairs.length, x.differ, r.method.alpha)}</summary>
              <Table header={t.pairColumns} rows={x.pairs} className="pairs" />
            </details>
          ) : (
            ''
          )}
        </>
      ))}
    </section>
  );
};

/**
 * A gold or parsed answer: a label as the page's language names it; a tag sequence (RuMedNER) or a list of codes is
 * data, shown as code.
 */
const Answer: FC<{ p: Prediction | null | undefined; task: string; t: Strings }> = ({ p, task, t }) =>
  typeof p === 'string' ? (
    <b>{t.labelName(task, p)}</b>
  ) : p === null || p === undefined ? (
    <b>–</b>
  ) : (
    <b>
      <code>{show(p)}</code>
    </b>
  );

const Sample: FC<{ s: LlmSample; t: Strings; lang: Lang }> = ({ s, t, lang }) => (
  <details class={`sample ${s.status}`}>
    <summary>
      <code>{s.id}</code>{' '}
      <span class={`tag ${s.status}`}>
        {s.status === 'parsed' ? t.wrong : s.status === 'unparsed' ? t.unparsed : t.failed}
      </span>{' '}
      {t.gold}: <Answer p={s.gold} task={s.task} t={t} /> · {t.parsed}:{' '}
      <Answer p={s.answer} task={s.task} t={t} />
    </summary>
    <dl>
      <dt>{t.prompt}</dt>
      <dd>
        <pre>{clip(s.prompt, t)}</pre>
      </dd>
      {s.candidates ? (
        <>
          <dt>{t.candidates}</dt>
          <dd>
            <Table
              header={['#', t.answerLabel, 'log p']}
              rows={s.candidates.map((c) => [
                String(c.rank),
                `${c.label}${c.label === s.gold ? ` (${t.gold})` : ''}`,
                f2(c.logprob),
              ])}
              plain
            />
          </dd>
        </>
      ) : (
        <>
          <dt>{t.reply}</dt>
          <dd>
            <pre>{s.reply === null ? '–' : clip(s.reply, t)}</pre>
          </dd>
        </>
      )}
      {s.reason ? (
        <>
          <dt>{t.reason}</dt>
          <dd>
            <Parts parts={sayingParts(s.reason, lang)} />
          </dd>
        </>
      ) : (
        ''
      )}
      {s.notes?.length ? (
        <>
          <dt>{t.notes}</dt>
          <dd>
            <Parts parts={s.notes.flatMap((n, k) => [...(k > 0 ? ['; '] : []), ...sayingParts(n, lang)])} />
          </dd>
        </>
      ) : (
        ''
      )}
    </dl>
  </details>
);

/** One line of where an encoder run's numbers come from: the model, its hash, and how it was run. */
function encoderLine(e: EncoderProvenance, t: Strings): string {
  return [
    `${t.encoder} ${e.model} (${e.dtype}, sha256 ${e.sha256.slice(0, 12)}…)`,
    e.pooling ? `${t.pooling} ${e.pooling}` : '',
    e.maxLength !== undefined ? `${t.maxLength} ${e.maxLength}` : '',
    e.C !== undefined ? `C = ${e.C}` : '',
    e.labels ? `${t.labels}: ${e.labels.slice(0, 8).join(', ')}${e.labels.length > 8 ? ', …' : ''}` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/**
 * The run's settings from its manifest (the endpoint's address stays in manifest.json: a report links nowhere); when
 * the run was made is written as the page's language writes a date, not as the ISO text the manifest keeps.
 */
function settingsRows(s: ReportSystem, lang: Report['lang']): Cell[][] {
  const m = s.llm?.manifest;
  return m
    ? manifestSettings(m).map(([k, v]) => [
        { code: k },
        k === 'created' && typeof v === 'string'
          ? { iso: v, text: dateTime(v, lang) }
          : { code: typeof v === 'string' ? v : JSON.stringify(v) },
      ])
    : [];
}

const LlmSection: FC<{ report: Report; svgs: Map<string, string> }> = ({ report, svgs }) => {
  const { t, lang } = report;
  const n = (x: number | undefined) => (x === undefined ? '–' : count(x, lang));
  const llmSystems = report.systems.filter((s) => s.llm);
  const usageRows = llmSystems.map((s) => {
    const u = s.llm?.summary;
    return [
      s.name,
      n(u?.requests?.total),
      n(u?.usage?.prompt_tokens),
      n(u?.usage?.completion_tokens),
      u?.cost !== undefined ? u.cost.toFixed(4) : '–',
      f2(u?.requests?.throughput_rps),
      duration(u?.latency_ms?.median, t),
      duration(u?.latency_ms?.p95, t),
    ];
  });
  const taskRows: Cell[][] = llmSystems.flatMap((s) =>
    Object.entries(s.llm?.summary.tasks ?? {}).map(([task, r]) => [
      s.name,
      task,
      { code: r.mode ?? 'generate' },
      n(r.samples),
      n(r.unparsed),
      f2(r.unparsed_rate),
      n(r.failed),
      // Log-likelihood runs: accuracy of the argmax of the sum, and of the sum per character and per byte.
      r.acc === undefined ? '–' : `${f2(r.acc)} / ${f2(r.acc_norm_char)} / ${f2(r.acc_norm_byte)}`,
    ]),
  );
  const f3 = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(3));
  const calibrationRows = llmSystems.flatMap((s) =>
    Object.entries(s.llm?.summary.tasks ?? {}).flatMap(([task, r]) => {
      const c = r.calibration;
      if (!c) return [];
      const half = c.accuracy_at_coverage.find((x) => x.coverage === 0.5)?.accuracy;
      return [
        [
          s.name,
          task,
          String(c.n),
          f3(c.ece),
          f3(c.ece_adaptive),
          f3(c.brier),
          f3(c.nll),
          f2(half === undefined ? undefined : 100 * half),
        ],
      ];
    }),
  );
  return (
    <section id="llm">
      <h2>{t.llm}</h2>
      <Table
        header={[t.system, t.task, t.mode, t.samples, t.unparsed, `${t.unparsed}, %`, t.failed, t.loglikAcc]}
        rows={taskRows}
        sortable
      />
      {calibrationRows.length > 0 ? (
        <>
          <h3 id="calibration">{t.calibration}</h3>
          <p class="note">{t.calibrationNote}</p>
          <Table
            header={[t.system, t.task, 'n', t.eceWide, t.eceCount, t.brier, t.nll, t.surestHalf]}
            rows={calibrationRows}
            sortable
          />
        </>
      ) : (
        ''
      )}
      {report.charts.llm.map((c) => (
        <Figure chart={c} svg={svgs.get(c.id) ?? ''} t={t} />
      ))}
      <h3>{t.usage}</h3>
      <Table
        header={[
          t.system,
          t.requests,
          t.promptTokens,
          t.completionTokens,
          t.cost,
          t.throughput,
          t.medianLatency,
          t.p95Latency,
        ]}
        rows={usageRows}
        sortable
      />
      <h3>{t.settings}</h3>
      {llmSystems.map((s) => (
        <details open={llmSystems.length === 1}>
          <summary>{s.name}</summary>
          <Table header={[t.setting, t.value]} rows={settingsRows(s, lang)} plain />
        </details>
      ))}
      <h3 id="failures">{t.failures}</h3>
      <p class="filter-row" hidden>
        <label>
          {t.filter}: <input type="search" id="sample-filter" autocomplete="off" />
        </label>
      </p>
      {llmSystems.map((s) =>
        Object.entries(s.llm?.failureCounts ?? {}).map(([task, total]) => {
          const shown = (s.llm?.failures ?? []).filter((f) => f.task === task);
          return (
            <details class="failures">
              <summary>
                {llmSystems.length > 1 ? `${s.name} · ` : ''}
                {task}: {total} · <span class="note">{t.failuresNote(shown.length, total)}</span>
              </summary>
              {shown.map((f) => (
                <Sample s={f} t={t} lang={report.lang} />
              ))}
            </details>
          );
        }),
      )}
    </section>
  );
};

const ciOf = (d: { delta: number; ci: [number, number]; p: number }) =>
  `${signed(d.delta)} [${f2(d.ci[0])}, ${f2(d.ci[1])}], p ${pValue(d.p)}`;

/** Systems with anything to say about trust: formulations, perturbations, repeats or contamination probes. */
const hasTrust = (s: Report['systems'][number]) =>
  s.llm !== undefined &&
  (s.llm.trust.promptVariants !== undefined ||
    s.llm.trust.perturbations !== undefined ||
    s.llm.trust.contamination !== undefined ||
    Object.keys(s.llm.summary.repeats ?? {}).length > 0);

const TrustSection: FC<{ report: Report }> = ({ report }) => {
  const { t, lang } = report;
  const systems = report.systems.filter(hasTrust);
  const many = systems.length > 1;
  const who = (name: string) => (many ? [name] : []);
  const head = (...h: string[]) => [...(many ? [t.system] : []), ...h];
  const n = (x: number) => count(x, lang);
  // Formulation ids (p1…p5) and perturbations (typos=0.1, yo) are the command line's names: code on a page.
  const formulations: Cell[][] = systems.flatMap((s) =>
    Object.entries(s.llm?.trust.promptVariants?.tasks ?? {}).map(([task, v]) => [
      ...who(s.name),
      task,
      {
        parts: (s.llm?.trust.promptVariants?.variants ?? []).flatMap((id, k): SayingPart[] => [
          ...(k > 0 ? [' · '] : []),
          { code: id },
          ` ${v.scores[id] ? f2(v.scores[id].score) : '–'}`,
        ]),
      },
      `${f2(v.mean)} ± ${f2(v.sd)}`,
      `${f2(v.min)}–${f2(v.max)}`,
      { parts: [{ code: v.best }, ' − ', { code: v.worst }, `: ${ciOf(v.best_vs_worst)}`] },
    ]),
  );
  const perturbations: Cell[][] = systems.flatMap((s) =>
    Object.entries(s.llm?.trust.perturbations?.variants ?? {}).flatMap(([name, v]) =>
      Object.entries(v.tasks).map(([task, r]) => [
        ...who(s.name),
        { code: name },
        task,
        n(r.n),
        f2(r.clean),
        f2(r.perturbed),
        ciOf(r.delta),
      ]),
    ),
  );
  const repeats = systems.flatMap((s) =>
    Object.entries(s.llm?.summary.repeats ?? {}).map(([task, r]) => [
      ...who(s.name),
      task,
      String(r.k),
      r.mean_accuracy === null
        ? '–'
        : `${f2(r.mean_accuracy)}${r.mean_accuracy_ci ? ` [${f2(r.mean_accuracy_ci[0])}, ${f2(r.mean_accuracy_ci[1])}]` : ''}`,
      f2(r.consistency),
      n(r.flipped),
    ]),
  );
  /** A probe's name in the page's language, its command-line name beside it where they differ. */
  const probe = (name: 'order' | 'guided' | 'options'): Cell => {
    const said = t.probeNames[name] ?? name;
    return said === name ? name : { parts: [`${said} `, { code: name }] };
  };
  const verdict = (v: string) => t.verdicts[v] ?? v;
  const p4 = (x: number) => (x < 1e-4 ? '<0.0001' : x.toFixed(4));
  const contamination = systems.flatMap((s) =>
    Object.entries(s.llm?.trust.contamination?.tasks ?? {}).flatMap(([task, r]) => [
      ...(r.order
        ? [
            [
              ...who(s.name),
              task,
              probe('order'),
              n(r.order.n),
              t.orderStatistic(r.order.mean_difference.toFixed(3), r.order.statistic.toFixed(2)),
              p4(r.order.p_value),
              verdict(r.order.verdict),
            ],
          ]
        : []),
      ...(r.guided
        ? [
            [
              ...who(s.name),
              task,
              probe('guided'),
              n(r.guided.n),
              t.guidedStatistic(r.guided.rouge_guided.toFixed(3), r.guided.rouge_general.toFixed(3)),
              p4(r.guided.p_value),
              verdict(r.guided.verdict),
            ],
          ]
        : []),
      ...(r.options && 'probe' in r.options
        ? [
            [
              ...who(s.name),
              task,
              probe('options'),
              n(r.options.n),
              t.optionsStatistic(f2(100 * r.options.exact_match), f2(100 * r.options.chance)),
              p4(r.options.p_value),
              verdict(r.options.verdict),
            ],
          ]
        : []),
    ]),
  );
  return (
    <section id="trust">
      <h2>{t.trust}</h2>
      <p class="note">{t.trustNote}</p>
      {formulations.length > 0 ? (
        <>
          <h3>{t.formulations}</h3>
          <p class="note">{t.formulationsNote}</p>
          <Table header={head(t.task, t.formulations, t.meanSd, t.range, t.bestWorst)} rows={formulations} />
        </>
      ) : (
        ''
      )}
      {perturbations.length > 0 ? (
        <>
          <h3>{t.perturbations}</h3>
          <p class="note">{t.perturbationsNote}</p>
          <Table
            header={head(t.variant, t.task, 'n', t.clean, t.perturbed, t.delta)}
            rows={perturbations}
            sortable
          />
        </>
      ) : (
        ''
      )}
      {repeats.length > 0 ? (
        <>
          <h3>{t.repeats}</h3>
          <p class="note">{t.repeatsNote}</p>
          <Table header={head(t.task, 'k', t.meanAccuracy, t.consistency, t.flipped)} rows={repeats} />
        </>
      ) : (
        ''
      )}
      {contamination.length > 0 ? (
        <>
          <h3>{t.contamination}</h3>
          <p class="note">{t.contaminationNote}</p>
          <Table header={head(t.task, t.probe, 'n', t.statistic, 'p', t.verdict)} rows={contamination} />
        </>
      ) : (
        ''
      )}
    </section>
  );
};

const Provenance: FC<{ report: Report }> = ({ report }) => {
  const { t, provenance: p, lang } = report;
  return (
    <section id="provenance">
      <h2>{t.provenance}</h2>
      <Table
        plain
        header={[t.setting, t.value]}
        rows={[
          [t.version, p.version],
          [t.date, { iso: p.date, text: dateTime(p.date, lang) }],
          ...(p.commandLine ? [[t.command, { code: p.commandLine }]] : []),
          [t.split, t.splitName(report.split)],
          [t.data, { code: p.dataDir }],
          [t.bootstrapRow, t.bootstrapValue(count(p.resamples, lang), p.seed)],
        ]}
      />
      <Table
        header={[t.system, t.kind, t.source]}
        rows={report.systems.map((s) => [s.name, t.kinds[s.kind], { code: s.source }])}
      />
      {p.dataFiles.length > 0 ? (
        <>
          <h3>{t.dataFiles}</h3>
          <Table
            header={[t.file, 'sha256']}
            rows={p.dataFiles.map((f) => [{ code: f.file }, { code: f.sha256 }])}
            className="mono"
          />
        </>
      ) : (
        ''
      )}
    </section>
  );
};

/**
 * A validation line: in English as the command line prints it; in Russian its code's meaning (issue-words.ts), the
 * code, the file and the values it names (ids, expected and found) kept as code.
 */
const IssueLine: FC<{ i: SubmissionIssue; lang: Lang }> = ({ i, lang }) => {
  if (lang === 'en') return <code>{formatIssue(i)}</code>;
  const w = ISSUE_FRAME[lang];
  const parts: SayingPart[] = [
    `${w[i.severity]}: `,
    { code: `${i.file}${i.line !== undefined ? `:${i.line}` : ''}` },
    ...(i.id !== undefined ? [` (${w.id} `, { code: i.id }, ')'] : []),
    `: ${issueText(i, lang)}`,
    ...(i.expected !== undefined ? [` (${w.expected} `, { code: i.expected }] : []),
    ...(i.found !== undefined
      ? [i.expected !== undefined ? `; ${w.found} ` : ` (${w.found} `, { code: i.found }]
      : []),
    ...(i.expected !== undefined || i.found !== undefined ? [')'] : []),
    ' ',
    { code: `[${i.code}]` },
  ];
  return <Parts parts={parts} />;
};

const Issues: FC<{ report: Report }> = ({ report }) => {
  const { t } = report;
  const withIssues = report.systems.filter((s) => s.errors.length + s.warnings.length > 0);
  if (withIssues.length === 0) return null;
  const max = 50;
  return (
    <section id="issues">
      <h2>{t.issues}</h2>
      {withIssues.map((s) => {
        const all = [...s.errors, ...s.warnings];
        return (
          <details open={s.errors.length > 0}>
            <summary>
              {s.name}: {t.issuesCount(s.errors.length, s.warnings.length)}
            </summary>
            <ul class="issues">
              {all.slice(0, max).map((i) => (
                <li class={i.severity}>
                  <IssueLine i={i} lang={report.lang} />
                </li>
              ))}
            </ul>
            <p class="note">
              {t.issuesNote(Math.min(max, all.length), all.length)} {t.issuesAsPrinted}
            </p>
          </details>
        );
      })}
    </section>
  );
};

const Page: FC<{ report: Report; svgs: Map<string, string> }> = ({ report, svgs }) => {
  const { t } = report;
  const overall = report.charts.overall;
  const baselines = report.systems.filter((s) => s.baseline);
  return (
    <html lang={report.lang}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <meta name="generator" content={`rumedbench ${report.provenance.version}`} />
        <title>{report.title}</title>
        <style>{raw(browserAsset('report.css'))}</style>
      </head>
      <body>
        <header>
          <h1>{report.title}</h1>
          <p class="note">
            {t.generated}{' '}
            <time datetime={report.provenance.date}>{dateTime(report.provenance.date, report.lang)}</time> ·
            rumedbench {report.provenance.version} · {t.split} {t.splitName(report.split)} ·{' '}
            {report.systems.map((s) => s.name).join(', ')}
          </p>
          <nav>
            <a href="#summary">{t.summary}</a>
            <a href="#tasks">{t.perTask}</a>
            {report.ranking ? <a href="#ranking">{t.ranking}</a> : ''}
            {report.comparisons.length > 0 ? <a href="#comparison">{t.comparison}</a> : ''}
            {report.charts.llm.length > 0 ? <a href="#llm">{t.llm}</a> : ''}
            {report.systems.some(hasTrust) ? <a href="#trust">{t.trust}</a> : ''}
            <a href="#provenance">{t.provenance}</a>
          </nav>
        </header>
        <main>
          <section id="summary">
            <h2>{t.summary}</h2>
            <p class="note">{t.summaryNote}</p>
            <SummaryTable report={report} />
            <p class="note">
              {t.overallNote} <span class="js-only">{t.sortHint}</span>
            </p>
            {report.systems
              .filter((s) => s.limit !== undefined)
              .map((s) => (
                <p class="note warn">{t.limited(s.name, s.limit as number)}</p>
              ))}
            {overall ? <Figure chart={overall} svg={svgs.get(overall.id) ?? ''} t={t} /> : ''}
            <details class="all-metrics">
              <summary>{t.scoresWithCi}</summary>
              <p class="note">{t.ciNote}</p>
              <Table
                header={[t.system, t.task, 'n', t.metric, t.value, t.ci95]}
                rows={ciRows(report)}
                sortable
              />
            </details>
          </section>
          <RankingSection report={report} svgs={svgs} />
          <section id="tasks">
            <h2>{t.perTask}</h2>
            {report.charts.tasks.map((s) => (
              <section id={`task-${s.task}`} class="task">
                <h3>{s.task}</h3>
                {getTask(s.task).source === undefined ? <p class="note">{t.levels}</p> : ''}
                {s.charts.map((c) => (
                  <Figure chart={c} svg={svgs.get(c.id) ?? ''} t={t} />
                ))}
              </section>
            ))}
          </section>
          {report.comparisons.length > 0 ? <ComparisonSection report={report} svgs={svgs} /> : ''}
          {report.charts.llm.length > 0 ? <LlmSection report={report} svgs={svgs} /> : ''}
          {report.systems.some(hasTrust) ? <TrustSection report={report} /> : ''}
          {baselines.length > 0 ? (
            <section id="baselines">
              <h2>{t.baseline}</h2>
              <Table
                header={[t.system, t.task, t.trainedOn, t.seconds, t.skipped]}
                rows={baselines.flatMap((s) =>
                  (s.baseline?.runs ?? []).map((r) => [
                    s.name,
                    r.task,
                    r.trainedOn ? `${t.splitName(r.trainedOn.split)} (${r.trainedOn.records})` : '–',
                    r.seconds.toFixed(1),
                    r.skipped ?? '',
                  ]),
                )}
              />
              {baselines
                .filter((s) => s.baseline?.encoder)
                .map((s) => (
                  <p>
                    {s.name}: {encoderLine(s.baseline?.encoder as EncoderProvenance, t)}
                  </p>
                ))}
            </section>
          ) : (
            ''
          )}
          <Issues report={report} />
          <Provenance report={report} />
        </main>
        <script type="module">{raw(browserAsset('report.js'))}</script>
      </body>
    </html>
  );
};

/** Draws every chart of the report into SVG, keyed by chart id. */
export async function renderCharts(report: Report): Promise<Map<string, string>> {
  const svgs = new Map<string, string>();
  for (const c of allCharts(report)) svgs.set(c.id, await renderSvg(c.spec, c.description));
  return svgs;
}

/** The whole report as one HTML document. */
export async function renderReportHtml(report: Report, svgs?: Map<string, string>): Promise<string> {
  const charts = svgs ?? (await renderCharts(report));
  return `<!DOCTYPE html>\n${await (<Page report={report} svgs={charts} />).toString()}\n`;
}
