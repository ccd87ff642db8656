/**
 * Charts on a phone (issue #63 item 4), in a real browser at 390 × 844: every chart of an entry's page, the board's
 * cost chart and the comparison's forest plot fit their box (nothing scrolls sideways), every mark lies inside its
 * SVG's visible box, and no text is smaller than 10 px, in English and in Russian. Screenshots of each chart are kept
 * in test-artifacts/phone-charts/ for a person to look at.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  artifactPath,
  BROWSER_REQUIRED,
  HAVE_BROWSER,
  launchBrowser,
  NO_BROWSER_REASON,
} from '../helpers/browser.js';
import { DATA_DIR, NO_DATA_REASON, REFERENCE_PREDICTIONS } from '../helpers/data.js';
import { referenceFiles, type ServerProcess, startServe, uploadTo } from '../helpers/server.js';

const haveData = DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined;
const runs = haveData && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = !haveData ? NO_DATA_REASON : NO_BROWSER_REASON;

/** What the page shows of each chart: measured in the page, the drawing that the stylesheet left visible. */
interface Measured {
  id: string;
  scrollWidth: number;
  clientWidth: number;
  shown: number;
  /** Marks (points, rules, cells) whose box is not inside the SVG's box: names of their layers. */
  outside: string[];
  marks: number;
  minFontPx: number;
}

describe.skipIf(!runs)(`charts on a phone (${runs ? 'Chromium and data found' : why})`, () => {
  let browser: Browser;
  let server: ServerProcess;
  const ids: string[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-phone-charts-'));
    server = await startServe(['--db', join(dir, 'board.sqlite'), '--api-per-minute', '0']);
    // Two priced entries (the board's cost chart), one with a long name (labels cut to a phone's room).
    for (const [folder, model, cost] of [
      ['bilstm', 'BiLSTM (upstream)', 0.0021],
      ['linear_models', 'Linear models, tf-idf and logistic regression (upstream)', 12.4],
    ] as const) {
      const r = await uploadTo(server.url, referenceFiles(folder), {
        model,
        kind: 'LLM',
        usage: JSON.stringify({ prompt_tokens: 1_200_000, completion_tokens: 3_400, cost_usd: cost }),
      });
      expect(r.status).toBe(201);
      ids.push(r.body.id as string);
    }
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function measure(path: string, lang: 'en' | 'ru', name: string): Promise<Measured[]> {
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    const page = await context.newPage();
    await page.goto(`${server.url}${path}${path.includes('?') ? '&' : '?'}lang=${lang}`);
    expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(390);
    const figures = page.locator('figure');
    for (let i = 0; i < (await figures.count()); i++)
      await figures.nth(i).screenshot({ path: artifactPath('phone-charts', `${name}-${lang}-${i}.png`) });
    const measured = await figures.evaluateAll((figs) =>
      figs.map((f) => {
        const boxes = [...f.querySelectorAll('.chart')].filter((b) => b.getClientRects().length > 0);
        const box = boxes[0];
        const svg = box?.querySelector('svg');
        if (!box || !svg) throw new Error(`${f.id}: no chart drawn`);
        const r = svg.getBoundingClientRect();
        // The test's own types have no DOM: the SVG's and the window's parts it reads, named here.
        const vb = (svg as unknown as { viewBox: { baseVal: { width: number } | null } }).viewBox.baseVal;
        const style = (globalThis as unknown as { getComputedStyle: (e: unknown) => { fontSize: string } })
          .getComputedStyle;
        // Text is drawn at its font size times the SVG's scale (its shown width over its drawn width).
        const scale = vb && vb.width > 0 ? r.width / vb.width : 1;
        let minFontPx = Number.POSITIVE_INFINITY;
        for (const t of svg.querySelectorAll('text'))
          if (t.textContent?.trim())
            minFontPx = Math.min(minFontPx, Number.parseFloat(style(t).fontSize) * scale);
        const outside: string[] = [];
        let marks = 0;
        for (const m of svg.querySelectorAll(
          '.mark-symbol path, .mark-rule line, .mark-rect path, .mark-text text',
        )) {
          const q = m.getBoundingClientRect();
          if (q.width + q.height === 0) continue;
          marks++;
          if (
            q.left < r.left - 0.5 ||
            q.right > r.right + 0.5 ||
            q.top < r.top - 0.5 ||
            q.bottom > r.bottom + 0.5
          )
            outside.push(m.parentElement?.getAttribute('class') ?? '?');
        }
        return {
          id: f.id,
          scrollWidth: box.scrollWidth,
          clientWidth: box.clientWidth,
          shown: boxes.length,
          outside,
          marks,
          minFontPx,
        };
      }),
    );
    await context.close();
    return measured;
  }

  /** Each chart one drawing shown, in its box whole, its marks inside, its text at 10 px or more. */
  function expectFits(charts: Measured[]): void {
    for (const c of charts) {
      expect({ id: c.id, shown: c.shown, outside: c.outside }).toEqual({ id: c.id, shown: 1, outside: [] });
      expect(c.scrollWidth, c.id).toBeLessThanOrEqual(c.clientWidth);
      expect(c.marks, c.id).toBeGreaterThan(0);
      expect(c.minFontPx, c.id).toBeGreaterThanOrEqual(10);
    }
  }

  for (const lang of ['en', 'ru'] as const) {
    it(`fits an entry's charts, the board's cost chart and a comparison's forest plot to 390 px (${lang})`, async () => {
      const entry = await measure(`/submissions/${ids[1]}`, lang, 'entry');
      expect(entry.map((c) => c.id)).toEqual([
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
      expectFits(entry);
      const board = await measure('/', lang, 'board');
      expect(board.map((c) => c.id)).toEqual(['llm-cost']);
      expectFits(board);
      const compare = await measure(`/compare?a=${ids[0]}&b=${ids[1]}`, lang, 'compare');
      expect(compare.map((c) => c.id)).toEqual(['forest']);
      expectFits(compare);
    });
  }
});
