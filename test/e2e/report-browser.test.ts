/**
 * The report in a real browser (Debian's Chromium, headless): with JavaScript off it must read fully, with it on
 * the tables sort, the marks show their values and the answer list filters; it asks for nothing over the network.
 * Screenshots of each view are kept in test-artifacts/report/ for a person to look at.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReport } from '../../src/report/run.js';
import {
  ARTIFACTS,
  artifactPath,
  BROWSER_REQUIRED,
  HAVE_BROWSER,
  launchBrowser,
  NO_BROWSER_REASON,
} from '../helpers/browser.js';
import { DATA_DIR, NO_DATA_REASON, REFERENCE_PREDICTIONS } from '../helpers/data.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import { smallLlmRun } from '../helpers/llm-run.js';

const HOSTILE = '<img src=x onerror=alert(1)>';
/** A name longer than Vega's guess of text widths let an axis show whole (it was cut to "BiLSTM (upstream, Glo…"). */
const LONG = 'BiLSTM (upstream, GloVe embeddings)';
const haveData = DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined;
const runs = haveData && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = !haveData ? NO_DATA_REASON : NO_BROWSER_REASON;

describe.skipIf(!runs)(`report in a browser (${runs ? 'Chromium and data found' : why})`, () => {
  let browser: Browser;
  let server: FakeOpenAI | undefined;
  let four: string;
  let llm: string;
  let llmEn: string;
  const requests: string[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-report-browser-'));
    const ref = (n: string) => join(REFERENCE_PREDICTIONS as string, n);
    const common = { dataDir: DATA_DIR as string, bootstrap: 1000, date: new Date('2026-01-02T00:00:00Z') };
    four = join(dir, 'four.html');
    await runReport(['linear_models', 'bilstm', 'naive', 'human'].map(ref), {
      ...common,
      out: four,
      names: ['Feature-based', LONG, 'Naive', HOSTILE],
      reference: true,
      fileGold: true,
    });
    const run = await smallLlmRun('fake-model-1', 40);
    server = run.server;
    llm = join(dir, 'llm.html');
    await runReport([run.dir, ref('linear_models')], { ...common, out: llm, lang: 'ru' });
    llmEn = join(dir, 'llm-en.html');
    await runReport([run.dir, ref('linear_models')], { ...common, out: llmEn, lang: 'en' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(file: string, options: { js: boolean; dark?: boolean }): Promise<Page> {
    const context = await browser.newContext({
      javaScriptEnabled: options.js,
      colorScheme: options.dark ? 'dark' : 'light',
      viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) requests.push(r.url());
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('dialog', (d) => {
      errors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(pathToFileURL(file).href);
    expect(errors).toEqual([]);
    return page;
  }

  it('reads fully with JavaScript off: tables, every chart drawn, details open on click', async () => {
    const page = await open(four, { js: false });
    await page.screenshot({ path: artifactPath('report', 'four-systems-nojs.png'), fullPage: true });
    await page.locator('#summary').screenshot({ path: artifactPath('report', 'summary-nojs.png') });
    const charts = await page.locator('figure .chart svg').evaluateAll((svgs) =>
      svgs.map((s) => {
        const r = s.getBoundingClientRect();
        return r.width > 100 && r.height > 40;
      }),
    );
    expect(charts.length).toBe(13); // 11 as for one system, the forest plot and the ranking
    expect(charts.every(Boolean)).toBe(true);
    // The hostile name is text on the page.
    await expect(
      page.getByRole('rowheader', { name: HOSTILE, exact: true }).count(),
    ).resolves.toBeGreaterThan(0);
    // The long CI table is folded away and opens without a script.
    const all = page.locator('details.all-metrics');
    expect(await all.evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(false);
    await all.locator('summary').click();
    expect(await all.evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(true);
    expect(await page.locator('#tip').count()).toBe(0);
    await page.context().close();
  });

  it('with JavaScript on: sorts a table, shows a mark’s value on hover; dark', async () => {
    const page = await open(four, { js: true, dark: true });
    await page.screenshot({ path: artifactPath('report', 'four-systems-dark.png'), fullPage: true });
    await page.locator('#comparison').screenshot({ path: artifactPath('report', 'comparison-dark.png') });
    const overall = page.locator('table.summary thead th', { hasText: 'Overall' });
    await overall.click();
    const firstRows = await page.locator('table.summary tbody tr th').allTextContents();
    expect(firstRows[0]?.trim()).toBe('RuPoolBERT paper');
    await overall.click();
    const ascending = await page.locator('table.summary tbody tr th').allTextContents();
    expect(ascending.slice(0, 2).map((s) => s.trim())).toEqual(['Naive paper', 'Naive']);

    const point = page.locator('#score-rumednli g.score_marks path').first();
    await point.hover();
    await expect(page.locator('#tip').textContent()).resolves.toBe('Feature-based: 59.70 [57.17, 62.24]');
    await page.context().close();
  });

  it('reads on a phone: ranking tables fit, charts keep their text size, one colour per system, the pairs', async () => {
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
    });
    const page = await context.newPage();
    await page.goto(pathToFileURL(four).href);
    for (const summary of await page.locator('#ranking details.pairs > summary').all()) await summary.click();
    await page.screenshot({ path: artifactPath('report', 'four-systems-phone.png'), fullPage: true });
    await page.locator('section#ranking').screenshot({ path: artifactPath('report', 'ranking-phone.png') });
    // Nothing runs off the page, and each ranking table and table of pairs fits the screen without scrolling.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    const tables = page.locator('section#ranking table.ranking, section#ranking table.pairs');
    type Box = { scrollWidth: number; clientWidth: number };
    const fit = await tables.evaluateAll((ts) =>
      ts.map((t) => {
        const wrap = t.parentElement as unknown as Box;
        return wrap.scrollWidth <= wrap.clientWidth;
      }),
    );
    expect(fit).toEqual(fit.map(() => true));
    // The summary, wider than the screen, scrolls in its box: its names stay whole, never squeezed to a letter a line.
    const nameWidths = await page
      .locator('table.summary tbody th')
      .evaluateAll((ths) => ths.map((th) => th.getBoundingClientRect().width));
    expect(Math.min(...nameWidths)).toBeGreaterThan(60);
    // Each task's ranking has its Holm-tested pairs: four systems, six pairs; "yes" where they differ.
    const rankings = await page.locator('section#ranking table.ranking').count();
    expect(rankings).toBeGreaterThan(0);
    const pairs = page.locator('section#ranking table.pairs');
    await expect(pairs.count()).resolves.toBe(rankings);
    await expect(pairs.first().locator('thead th').allTextContents()).resolves.toEqual([
      'Pair (B − A)',
      'Difference [95% CI]',
      'p (Holm)',
      'Test',
      'Differ',
    ]);
    await expect(pairs.first().locator('tbody tr').count()).resolves.toBe(6);
    const differ = await pairs.first().locator('tbody td:last-child').allTextContents();
    await expect(page.locator('#ranking details.pairs > summary').first().textContent()).resolves.toBe(
      `6 pairs tested on the same items, ${differ.filter((d) => d === 'yes').length} differ at α 0.05 (p Holm-corrected over the task’s pairs)`,
    );
    // Charts are drawn at their own size (their text 10-11 px), scrolling in their box, never shrunk to fit.
    const scales = await page
      .locator('figure .chart svg')
      .evaluateAll((svgs) =>
        svgs.map(
          (s) =>
            s.getBoundingClientRect().width /
            (s as unknown as { width: { baseVal: { value: number } } }).width.baseVal.value,
        ),
      );
    expect(scales.every((x) => Math.abs(x - 1) < 0.01)).toBe(true);
    // One colour per system in every chart, "Which systems differ" included (it coloured by group letter).
    const names: string[] = ['Feature-based', LONG, 'Naive', HOSTILE];
    const colours = (figure: string, sep: string): Promise<[string, string | null][]> =>
      page.locator(`figure#${figure} .chart [aria-label]`).evaluateAll(
        (marks, [known, sep]) =>
          marks.flatMap((m): [string, string | null][] => {
            const label = m.getAttribute('aria-label') ?? '';
            const name = known.find((n) => label.startsWith(`${n}${sep}`));
            return name ? [[name, m.getAttribute('fill')]] : [];
          }),
        [names, sep] as [string[], string],
      );
    const overall = new Map(await colours('score-rumedoverall', ': '));
    expect(overall.size).toBe(4);
    const ranking = await colours('ranking', ', ');
    expect(ranking.length).toBeGreaterThan(4);
    expect(ranking.filter(([name, fill]) => overall.get(name) !== fill)).toEqual([]);
    // The overall chart's axis writes each name whole.
    const labels = await page.locator('figure#score-rumedoverall svg text').allTextContents();
    expect(labels).toContain(LONG);
    expect(labels.filter((l) => l.includes('…'))).toEqual([]);
    await context.close();
  });

  it('shows an LLM run in Russian, its wrong answers filterable', async () => {
    const page = await open(llm, { js: true });
    await page.screenshot({ path: artifactPath('report', 'llm-ru.png'), fullPage: true });
    await page.locator('#llm').screenshot({ path: artifactPath('report', 'llm-section-ru.png') });
    const samples = page.locator('details.sample');
    const total = await samples.count();
    expect(total).toBeGreaterThan(5);
    await page.locator('details.failures > summary').first().click();
    await page.locator('#sample-filter').fill('Затрудняюсь');
    const visible = await samples.evaluateAll(
      (ds) => ds.filter((d) => !(d as unknown as { hidden: boolean }).hidden).length,
    );
    expect(visible).toBeGreaterThan(0);
    expect(visible).toBeLessThan(total);
    await page.locator('#llm').screenshot({ path: artifactPath('report', 'llm-filtered-ru.png') });
    await page.context().close();
  });

  /** Where each table's box stands: its section or figure, and whether its table is wider than it (it scrolls). */
  const wraps = (page: Page) =>
    page.locator('.table-wrap').evaluateAll((ws) =>
      ws
        .filter((w) => w.getClientRects().length > 0)
        .map((w) => ({
          in: w.closest('figure, section')?.id ?? '',
          scrolls: w.scrollWidth > w.clientWidth,
        })),
    );

  /**
   * The strips along a box's left and right edges as drawn, and drawn again without the box's background (its
   * scroll hint): equal where no hint is drawn.
   */
  async function hinted(page: Page, wrap: Locator): Promise<{ left: boolean; right: boolean }> {
    await wrap.scrollIntoViewIfNeeded();
    const box = await wrap.boundingBox();
    if (!box) throw new Error('no box');
    const strip = (x: number) => ({ x, y: box.y, width: 8, height: Math.min(box.height, 300) });
    const shoot = () =>
      Promise.all([
        page.screenshot({ clip: strip(box.x) }),
        page.screenshot({ clip: strip(box.x + box.width - 8) }),
      ]);
    const [left, right] = await shoot();
    await wrap.evaluate((w) => {
      (w as unknown as { style: { background: string } }).style.background = 'none';
    });
    const [bareLeft, bareRight] = await shoot();
    await wrap.evaluate((w) => {
      (w as unknown as { style: { background: string } }).style.background = '';
    });
    return { left: !left.equals(bareLeft), right: !right.equals(bareRight) };
  }

  for (const lang of ['en', 'ru'] as const) {
    it(`fits an LLM run's tables at 1,080 px, nothing off a phone's screen, dates as people write them (${lang})`, async () => {
      const file = lang === 'ru' ? llm : llmEn;
      const wide = await browser.newContext({ viewport: { width: 1080, height: 900 } });
      const page = await wide.newPage();
      await page.goto(pathToFileURL(file).href);
      await page.locator('#llm').screenshot({ path: artifactPath('report', `llm-1080-${lang}.png`) });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(1080);
      // The LLM section's tables whole, their headers wrapping where they must ("нераспознано, %").
      const llmTables = (await wraps(page)).filter((w) => w.in === 'llm');
      expect(llmTables.length).toBe(3); // tasks, usage, settings (the charts’ data are folded)
      expect(llmTables.filter((w) => w.scrolls)).toEqual([]);
      // When the run was made: the page's language's date, the ISO text kept for machines; no ISO time in the text.
      const created = page
        .locator('#llm tr', { has: page.locator('code', { hasText: /^created$/ }) })
        .locator('time');
      const iso = (await created.getAttribute('datetime')) as string;
      expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const day = new Date(iso);
      await expect(created.textContent()).resolves.toMatch(
        lang === 'ru'
          ? new RegExp(`^${day.getUTCDate()} [а-я]+ ${day.getUTCFullYear()} г\\.(,| в) \\d\\d:\\d\\d UTC$`)
          : new RegExp(`^${day.getUTCDate()} [A-Z][a-z]+ ${day.getUTCFullYear()}(,| at) \\d\\d:\\d\\d UTC$`),
      );
      // biome-ignore lint/performance/useDomNodeTextContent: what a reader sees, not the inlined script's text
      expect((await page.locator('body').innerText()).match(/\d{4}-\d\d-\d\dT\d\d:\d\d/g)).toBeNull();
      await wide.close();

      // A phone: nothing runs off the screen; a table wider than it scrolls in its box, its edge shadowed on the side
      // that has more, the shadow gone once scrolled to the end.
      const phone = await browser.newContext({
        viewport: { width: 390, height: 844 },
        isMobile: true,
        hasTouch: true,
      });
      const small = await phone.newPage();
      await small.goto(pathToFileURL(file).href);
      await small.screenshot({ path: artifactPath('report', `llm-phone-${lang}.png`), fullPage: true });
      expect(await small.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      const first = small.locator('#llm .table-wrap').first();
      expect(await first.evaluate((w) => w.scrollWidth > w.clientWidth)).toBe(true);
      await first.screenshot({ path: artifactPath('report', `llm-table-phone-${lang}.png`) });
      await expect(hinted(small, first)).resolves.toEqual({ left: false, right: true });
      await first.evaluate((w) => {
        w.scrollLeft = w.scrollWidth;
      });
      await first.screenshot({ path: artifactPath('report', `llm-table-phone-scrolled-${lang}.png`) });
      await expect(hinted(small, first)).resolves.toEqual({ left: true, right: false });
      // A table that fits shows no hint.
      const settings = small.locator('#llm details .table-wrap').first();
      expect(await settings.evaluate((w) => w.scrollWidth <= w.clientWidth)).toBe(true);
      await expect(hinted(small, settings)).resolves.toEqual({ left: false, right: false });
      await phone.close();
    });
  }

  it('asked for nothing beyond the file itself', () => {
    expect(requests).toEqual([]);
    writeFileSync(
      join(ARTIFACTS, 'report', 'README.txt'),
      'Screenshots from test/e2e/report-browser.test.ts.\n',
    );
  });
});
