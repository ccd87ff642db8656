/**
 * `rumedbench report` on upstream's own prediction files: the HTML read back with a real HTML parser (nothing
 * external, every user string escaped, every chart there with the right number of marks, numbers equal to the
 * scorer's), the Markdown tables, the SVG files, saved JSON results and an LLM run folder.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReport } from '../../src/report/build.js';
import { renderReportHtml } from '../../src/report/html.js';
import { ReportInputError } from '../../src/report/sources.js';
import { evaluateSubmission } from '../../src/scoring/score.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON, REFERENCE_PREDICTIONS } from '../helpers/data.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import {
  attr,
  byId,
  type Element,
  elements,
  markCount,
  type Node,
  parseHtml,
  tableRows,
  textOf,
} from '../helpers/html.js';
import { smallLlmRun } from '../helpers/llm-run.js';

const HOSTILE = '<img src=x onerror=alert(1)>';
const ready = DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined;
const ref = (name: string) => join(REFERENCE_PREDICTIONS as string, name);
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-report-'));

/** Every URL-like value in the document: attributes (but the SVG namespace declarations) and CSS. */
function externalReferences(doc: Node, html: string): string[] {
  const found: string[] = [];
  for (const e of elements(doc)) {
    for (const a of e.attrs) {
      if (a.name === 'xmlns' || a.prefix === 'xmlns') continue;
      if (
        /^(href|src|srcset|action|formaction|poster|data|xlink:href)$/.test(a.name) &&
        !a.value.startsWith('#')
      )
        found.push(`${e.tagName}[${a.name}=${a.value}]`);
      // A fragment (`url(#gradient)`, a legend's fill) stays inside the document.
      if (/(https?:|\/\/|url\((?!#))/i.test(a.value) && a.name !== 'aria-label')
        found.push(`${e.tagName}[${a.name}]`);
    }
    if (['link', 'iframe', 'img', 'object', 'embed', 'base'].includes(e.tagName))
      found.push(`<${e.tagName}>`);
    if (e.tagName === 'script' && attr(e, 'src') !== undefined) found.push('<script src>');
  }
  for (const s of elements(doc, (e) => e.tagName === 'style')) {
    if (/url\(|@import/i.test(textOf(s))) found.push('CSS url()/@import');
  }
  const urls = html.match(/https?:\/\/[^\s"'<>)]+/g) ?? [];
  found.push(...urls.filter((u) => !/^http:\/\/www\.w3\.org\/(2000\/svg|1999\/xlink)$/.test(u)));
  return found;
}

const figure = (doc: Node, id: string): Element => {
  const f = byId(doc, id);
  if (!f) throw new Error(`no figure #${id}`);
  return f;
};

describe.skipIf(!ready)(`rumedbench report (${ready ? 'data found' : NO_DATA_REASON})`, () => {
  describe('one system with the paper rows', () => {
    let html: string;
    let doc: Node;
    let out: string;
    beforeAll(async () => {
      out = tmp();
      await rumedbenchOk(
        'report',
        ref('linear_models'),
        '--reference',
        '--out',
        join(out, 'report.html'),
        '--svg-dir',
        join(out, 'svg'),
        '--title',
        'Feature-based <b>&',
      );
      html = readFileSync(join(out, 'report.html'), 'utf8');
      doc = parseHtml(html);
    });

    it('is one self-contained file: no external resource, no external URL', () => {
      expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
      expect(externalReferences(doc, html)).toEqual([]);
      expect(textOf(elements(doc, (e) => e.tagName === 'title')[0] as Element)).toBe('Feature-based <b>&');
      expect(elements(doc, (e) => e.tagName === 'b' && textOf(e) === '&')).toEqual([]);
    });

    it("shows the scorer's numbers beside the paper's rows", () => {
      const table = elements(
        doc,
        (e) => e.tagName === 'table' && (attr(e, 'class') ?? '').includes('summary'),
      )[0];
      const rows = tableRows(table as Element);
      expect(rows[0]).toEqual([
        'Model',
        'RuMedTop3',
        'RuMedSymptomRec',
        'RuMedDaNet',
        'RuMedNLI',
        'RuMedNER',
        'Overall',
      ]);
      expect(rows.slice(1, 7).map((r) => r[0])).toEqual([
        'Naive paper',
        'Feature-based paper',
        'BiLSTM paper',
        'RuBERT paper',
        'RuPoolBERT paper',
        'Human paper',
      ]);
      // Each cell: the metrics, then the task score's interval on a smaller line.
      expect(rows[7]).toEqual([
        'linear_models',
        '49.76/72.75score 61.25 [58.45, 63.99]',
        '32.05/49.40score 40.72 [36.26, 44.94]',
        '51.95[45.70, 58.20]',
        '59.70[57.17, 62.24]',
        '94.40/62.89score 78.64 [76.28, 81.22]',
        '58.46[56.76, 60.27]',
      ]);
    });

    it('draws every chart with the right marks and a text alternative', () => {
      const ids = elements(doc, (e) => e.tagName === 'figure').map((f) => attr(f, 'id'));
      expect(ids).toEqual([
        'score-rumedoverall',
        'score-rumedtop3',
        'labels-rumedtop3',
        'score-rumedsymptomrec',
        'labels-rumedsymptomrec',
        'score-rumeddanet',
        'confusion-rumeddanet',
        'score-rumednli',
        'confusion-rumednli',
        'score-rumedner',
        'entities-rumedner',
      ]);
      const top3 = figure(doc, 'score-rumedtop3');
      expect([markCount(top3, 'score'), markCount(top3, 'interval'), markCount(top3, 'level')]).toEqual([
        1, 1, 2,
      ]);
      const svg = elements(top3, (e) => e.tagName === 'svg')[0] as Element;
      expect(attr(svg, 'role')).toBe('img');
      expect(attr(svg, 'aria-label')).toBe(
        'RuMedTop3: score by system: linear_models 61.25 [58.45, 63.99]; Naive (paper) 16.30; Human (paper) 36.80.',
      );
      expect(markCount(figure(doc, 'labels-rumedtop3'), 'labelValue')).toBe(15 * 2);
      expect(markCount(figure(doc, 'labels-rumedsymptomrec'), 'labelValue')).toBe(15 * 2);
      expect(markCount(figure(doc, 'confusion-rumednli'), 'cell')).toBe(9);
      expect(markCount(figure(doc, 'confusion-rumednli'), 'cellCount')).toBe(9);
      expect(markCount(figure(doc, 'confusion-rumeddanet'), 'cell')).toBe(4);
      expect(markCount(figure(doc, 'entities-rumedner'), 'entityValue')).toBe(6 * 3);
      // The heat map's numbers are the scorer's confusion matrix (rows gold, columns predicted).
      const nli = elements(figure(doc, 'confusion-rumednli'), (e) => e.tagName === 'table')[0] as Element;
      expect(tableRows(nli).slice(1)).toEqual([
        ['linear_models', 'entailment', '243', '80', '151'],
        ['linear_models', 'contradiction', '75', '325', '74'],
        ['linear_models', 'neutral', '125', '68', '281'],
      ]);
    });

    it('writes each chart as its own SVG file', () => {
      const files = readdirSync(join(out, 'svg')).sort();
      expect(files).toHaveLength(11);
      for (const f of files) {
        const svg = readFileSync(join(out, 'svg', f), 'utf8');
        expect(svg.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<svg ')).toBe(true);
        expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
      }
    });

    it('prints the tables in Markdown, in the paper form', async () => {
      const { stdout } = await rumedbenchOk(
        'report',
        ref('linear_models'),
        '--reference',
        '--format',
        'markdown',
      );
      const lines = stdout.split('\n');
      expect(lines).toContain(
        '| **linear\\_models** | 49.76/72.75 | 32.05/49.40 | 51.95 | 59.70 | 94.40/62.89 | 58.46 |',
      );
      expect(lines).toContain(
        '| Human (paper) | 25.06/48.54 | 7.23/12.53 | 93.36 | 83.26 | 96.09/76.18 | 61.89 |',
      );
      expect(lines).toContain('| linear\\_models | RuMedOverall |  | 58.46 | [56.76, 60.27] |');
    });

    it('says which systems differ: scores with standard errors, rank intervals and groups (#26)', async () => {
      const { stdout } = await rumedbenchOk(
        'report',
        ...['linear_models', 'bilstm', 'human'].map(ref),
        ...['--name', 'linear,bilstm,human', '--format', 'markdown'],
      );
      expect(stdout).toContain('### Which systems differ');
      const nli = stdout.slice(stdout.indexOf('#### RuMedNLI'));
      expect(nli).toMatch(/^#### RuMedNLI · detectable difference ≈ \d+\.\d\d points/);
      // The same figures `rank` prints (docs/scoring.md): the premise-clustered errors and two groups.
      expect(nli).toContain('| human | 83.26 ± 1.07 | 1 (1) | a |');
      expect(nli).toMatch(/\| bilstm \| 60\.06 ± 1\.39 \| 2 \(2–3\) \| b \|/);
      expect(nli).toMatch(/\| linear \| 59\.70 ± 1\.35 \| 3 \(2–3\) \| b \|/);
      // And the pairs Holm's correction was over, those that differ as `rank` lists them (docs/scoring.md).
      const pairs = nli.slice(0, nli.indexOf('#### RuMedNER'));
      expect(pairs).toContain(
        '3 pairs tested on the same items, 2 differ at α 0.05 (p Holm-corrected over the task’s pairs):',
      );
      expect(pairs).toContain(
        '| human − linear | +23.56 [20.41, 26.57] | <0.001 | z-test, clustered | yes |',
      );
      expect(pairs).toContain(
        '| human − bilstm | +23.21 [19.91, 26.36] | <0.001 | z-test, clustered | yes |',
      );
      expect(pairs).toMatch(
        /\| (bilstm − linear|linear − bilstm) \| [+-]0\.\d\d \[.+\] \| 0\.\d+ \| z-test, clustered \| no \|/,
      );
      // RuMedDaNet is left out, and the page names the file that keeps it out (#45).
      expect(stdout).toContain(
        `RuMedDaNet is not ranked, and so neither is the overall: a task is ranked only where every system answers the same items, and these files differ: human’s ${ref('human/RuMedDaNet.jsonl')} is not scored (36 error(s), under “Validation problems”).`,
      );
    });

    it('draws the scores with their intervals, each system in its colour, in the HTML report (#26, #45)', async () => {
      const html = join(mkdtempSync(join(tmpdir(), 'rumedbench-report-rank-')), 'r.html');
      await rumedbenchOk('report', ...['linear_models', 'bilstm', 'human'].map(ref), '--out', html);
      const doc = parseHtml(readFileSync(html, 'utf8'));
      const chart = figure(doc, 'ranking');
      // Four tasks, three systems each: a point, an interval and the group letters per system. (The human file
      // answers 18 RuMedDaNet items of another release, so RuMedDaNet, and with it the overall, is not ranked.)
      expect(markCount(chart, 'score')).toBe(4 * 3);
      expect(markCount(chart, 'letters')).toBe(4 * 3);
      const table = elements(chart, (e) => e.tagName === 'table')[0] as Element;
      expect(tableRows(table)).toContainEqual(['human', 'RuMedNLI', '83.26 ± 1.07', '1', 'a']);
      const notes = elements(byId(doc, 'ranking') as Element, (e) => e.tagName === 'p').map(textOf);
      expect(notes).toContain(
        `RuMedDaNet is not ranked, and so neither is the overall: a task is ranked only where every system answers the same items, and these files differ: human’s ${ref('human/RuMedDaNet.jsonl')} is not scored (36 error(s), under “Validation problems”).`,
      );
    });
  });

  describe('four systems, one with a hostile name', () => {
    let doc: Node;
    let html: string;
    // Made in the hook, not the describe body: without the data, the suite is skipped before this runs.
    let paths: string[] = [];
    beforeAll(async () => {
      paths = ['linear_models', 'bilstm', 'naive', 'human'].map(ref);
      const report = await buildReport(paths, {
        names: ['Feature-based', 'BiLSTM', 'Naive', HOSTILE],
        reference: true,
        fileGold: true,
        dataDir: DATA_DIR as string,
        date: new Date('2026-01-02T03:04:05Z'),
      });
      html = await renderReportHtml(report);
      doc = parseHtml(html);
    });

    it('escapes the name everywhere: shown as text, never as markup', () => {
      expect(elements(doc, (e) => e.tagName === 'img')).toEqual([]);
      expect(elements(doc, (e) => e.attrs.some((a) => a.name.startsWith('on')))).toEqual([]);
      expect(externalReferences(doc, html)).toEqual([]);
      const summary = elements(doc, (e) => e.tagName === 'table')[0] as Element;
      expect(tableRows(summary).map((r) => r[0])).toContain(HOSTILE);
      // In the charts too: Vega writes the axis label as text.
      const axisLabels = elements(figure(doc, 'score-rumednli'), (e) => e.tagName === 'text').map(textOf);
      expect(axisLabels).toContain(HOSTILE);
    });

    it('draws a mark per system and the paired comparison against the first', async () => {
      const nli = figure(doc, 'score-rumednli');
      expect([markCount(nli, 'score'), markCount(nli, 'interval')]).toEqual([4, 4]);
      expect(markCount(figure(doc, 'labels-rumedtop3'), 'labelValue')).toBe(15 * 2 * 4);
      expect(markCount(figure(doc, 'confusion-rumednli'), 'cell')).toBe(9 * 4);
      expect(markCount(figure(doc, 'confusion-rumeddanet'), 'cell')).toBe(4 * 4);

      // BiLSTM against Feature-based: all 8 metrics and the overall; Naive and Human: not RuMedDaNet (their file
      // answers 18 items the split no longer has), so 7 each and no overall.
      const forest = figure(doc, 'forest');
      expect(markCount(forest, 'delta')).toBe(9 + 7 + 7);
      expect(markCount(forest, 'deltaInterval')).toBe(9 + 7 + 7);
      const cmp = elements(byId(doc, 'comparison') as Element, (e) => e.tagName === 'table')[0] as Element;
      const rows = tableRows(cmp);
      expect(rows.find((r) => r[0] === 'BiLSTM − Feature-based' && r[1] === 'RuMedOverall')).toEqual([
        'BiLSTM − Feature-based',
        'RuMedOverall',
        'score',
        '58.46',
        '53.87',
        '-4.58',
        '[-6.55, -2.54]',
        '<0.001',
      ]);
      expect(textOf(byId(doc, 'comparison') as Element)).toContain(
        'Naive: RuMedDaNet: the two submissions do not cover the same items with the same gold; not compared',
      );
    });

    it("lists the scorer's numbers for every system", async () => {
      const expected = await evaluateSubmission(ref('bilstm'), {
        bootstrap: 1000,
        dataDir: DATA_DIR as string,
      });
      const rows = tableRows(elements(doc, (e) => e.tagName === 'table')[0] as Element);
      const bilstm = rows.find((r) => r[0] === 'BiLSTM') as string[];
      expect(bilstm[1]).toBe(
        `${expected.tasks.RuMedTop3?.metrics.accuracy?.toFixed(2)}/${expected.tasks.RuMedTop3?.metrics.hit_at_3?.toFixed(2)}score ${expected.tasks.RuMedTop3?.score.toFixed(2)} [${expected.tasks.RuMedTop3?.score_ci?.[0].toFixed(2)}, ${expected.tasks.RuMedTop3?.score_ci?.[1].toFixed(2)}]`,
      );
      expect(bilstm[6]).toBe(
        `${expected.overall?.toFixed(2)}[${expected.overall_ci?.[0].toFixed(2)}, ${expected.overall_ci?.[1].toFixed(2)}]`,
      );
      expect(bilstm[6]).toBe('53.87[52.33, 55.51]');
    });

    it('records where everything came from', () => {
      const prov = textOf(byId(doc, 'provenance') as Element);
      // The moment as English writes it, its ISO text for machines.
      expect(prov).toContain('2 January 2026 at 03:04 UTC');
      const time = elements(byId(doc, 'provenance') as Element, (e) => e.tagName === 'time');
      expect(time.map((e) => attr(e, 'datetime'))).toEqual(['2026-01-02T03:04:05.000Z']);
      expect(prov).toMatch(/RuMedNLI\/test_v1\.jsonl[0-9a-f]{64}/);
    });
  });

  describe('saved results and run folders', () => {
    const servers: FakeOpenAI[] = [];
    afterAll(async () => {
      await Promise.all(servers.map((s) => s.close()));
    });

    it('reads saved eval --json and compare --json results', async () => {
      const dir = tmp();
      const evalJson = (await rumedbenchOk('eval', ref('linear_models'), '--json')).stdout;
      writeFileSync(join(dir, 'a.json'), evalJson);
      const cmpJson = (await rumedbenchOk('compare', ref('linear_models'), ref('bilstm'), '--json')).stdout;
      writeFileSync(join(dir, 'cmp.json'), cmpJson);
      const report = await buildReport([join(dir, 'a.json'), join(dir, 'cmp.json')], {
        dataDir: DATA_DIR as string,
      });
      expect(report.systems.map((s) => [s.name, s.kind, s.overall?.toFixed(2)])).toEqual([
        ['a', 'eval-json', '58.46'],
        ['linear_models', 'compare-json', '58.46'],
        ['bilstm', 'compare-json', '53.87'],
      ]);
      expect(
        report.comparisons.map((c) => [c.base, c.system, c.result?.overall?.delta.toFixed(2) ?? c.why]),
      ).toEqual([
        ['linear_models', 'bilstm', '-4.58'],
        ['a', 'linear_models', 'a saved result has no per-item predictions to pair'],
        ['a', 'bilstm', 'a saved result has no per-item predictions to pair'],
      ]);
    });

    it('refuses what it cannot read, naming the file', async () => {
      const dir = tmp();
      writeFileSync(join(dir, 'x.json'), '{"hello": 1}');
      await expect(buildReport([join(dir, 'x.json')], { dataDir: DATA_DIR as string })).rejects.toThrow(
        ReportInputError,
      );
      const r = await rumedbench('report', join(dir, 'x.json'), '--out', join(dir, 'r.html'));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `${join(dir, 'x.json')}: neither a \`rumedbench eval --json\` nor a \`compare --json\``,
      );
      const missing = await rumedbench('report', join(dir, 'nope'));
      expect(missing.stderr).toContain(`${join(dir, 'nope')}: not found`);
      const names = await rumedbench('report', ref('naive'), '--name', 'a,b');
      expect([names.code, names.stderr.trim()]).toEqual([2, 'error: --name gives 2 name(s) for 1 path(s)']);
    });

    it('draws cost against the overall score for priced runs, the cheaper run of equal score on the front', async () => {
      const five = 'RuMedTop3,RuMedSymptomRec,RuMedDaNet,RuMedNLI,RuMedNER';
      // One request at a time: the fake model's answers follow the order it is asked in, so both runs score alike.
      const prices = (p: string, c: string) => [
        '--price-prompt',
        p,
        '--price-completion',
        c,
        '--concurrency',
        '1',
      ];
      const cheap = await smallLlmRun('cheap', 5, { tasks: five, extra: prices('1', '2') });
      const dear = await smallLlmRun('dear', 5, { tasks: five, extra: prices('10', '20') });
      servers.push(cheap.server, dear.server);
      const out = join(tmp(), 'cost.html');
      await rumedbenchOk('report', cheap.dir, dear.dir, '--name', 'cheap,dear', '--out', out);
      const doc = parseHtml(readFileSync(out, 'utf8'));
      const overall = (dir: string) => JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')).overall;
      expect(overall(cheap.dir)).toBe(overall(dear.dir));
      const chart = figure(doc, 'llm-cost');
      // The same model at ten times the price: both ringed, only the cheap one filled (on the front).
      expect(markCount(chart, 'system')).toBe(2);
      expect(markCount(chart, 'pareto')).toBe(1);
      const rows = elements(chart, (e) => e.tagName === 'table').flatMap(tableRows);
      expect(rows.filter((r) => r[0] === 'cheap' || r[0] === 'dear').map((r) => [r[0], r[3]])).toEqual([
        ['cheap', '✓'],
        ['dear', ''],
      ]);
    });

    it('shows an LLM run: unparsed rates, latencies, settings and the wrong answers, escaped', async () => {
      const { dir: run, server } = await smallLlmRun();
      servers.push(server);
      const samples = readFileSync(join(run, 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { status: string; correct?: boolean; task: string });
      const failing = samples.filter((s) => s.correct === false);
      expect(failing.length).toBeGreaterThan(0);

      const out = join(tmp(), 'llm.html');
      await rumedbenchOk('report', run, '--out', out, '--lang', 'ru');
      const html = readFileSync(out, 'utf8');
      const doc = parseHtml(html);
      expect(externalReferences(doc, html)).toEqual([]);
      expect(elements(doc, (e) => e.tagName === 'script')).toHaveLength(1); // ours, inline
      expect(attr(elements(doc, (e) => e.tagName === 'html')[0] as Element, 'lang')).toBe('ru');
      expect(elements(doc, (e) => e.tagName === 'b' && textOf(e) === '-1')).toEqual([]);

      expect(markCount(figure(doc, 'llm-unparsed'), 'unparsed')).toBe(2);
      expect(markCount(figure(doc, 'llm-latency'), 'latency')).toBeGreaterThan(0);
      const listed = elements(
        doc,
        (e) => e.tagName === 'details' && (attr(e, 'class') ?? '').startsWith('sample'),
      );
      expect(listed).toHaveLength(failing.length);
      const unparsed = samples.filter((s) => s.status === 'unparsed').length;
      expect(listed.filter((d) => attr(d, 'class') === 'sample unparsed')).toHaveLength(unparsed);
      expect(textOf(byId(doc, 'llm') as Element)).toContain('<script>alert(1)</script> Ответ: нейтрально');
      const settings = textOf(byId(doc, 'llm') as Element);
      expect(settings).toContain('fake-<b>-1');
      expect(settings).toContain('params.temperature0');
      expect(textOf(byId(doc, 'summary') as Element)).toContain(
        'fake-<b>-1: оценено только на первых 30 примерах каждой задачи (llm --limit)',
      );
    });
  });
});
