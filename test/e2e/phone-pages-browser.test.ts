/**
 * Every page type on a phone (issue #63 item 4), in a real browser at 390 × 844, in English and in Russian: nothing
 * makes the page scroll sideways, and a comparison's table fits the screen whole (its interval and p under the
 * difference, the metric under the task), as the board does with its model and overall. Screenshots of each page are
 * kept in test-artifacts/phone-pages/ for a person to look at.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  artifactPath,
  BROWSER_REQUIRED,
  HAVE_BROWSER,
  launchBrowser,
  NO_BROWSER_REASON,
} from '../helpers/browser.js';
import { rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON, REFERENCE_PREDICTIONS } from '../helpers/data.js';
import {
  referenceFiles,
  type ServerProcess,
  startServe,
  TEST_ADMIN_TOKEN,
  uploadTo,
} from '../helpers/server.js';

const haveData = DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined;
const runs = haveData && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = !haveData ? NO_DATA_REASON : NO_BROWSER_REASON;
const PHONE = { width: 390, height: 844 };

/** What sticks out of a page: its scrolling width, and the elements whose right edge passes the screen's. */
interface Overflow {
  scrollWidth: number;
  past: string[];
}

describe.skipIf(!runs)(`every page on a phone (${runs ? 'Chromium and data found' : why})`, () => {
  let browser: Browser;
  let server: ServerProcess;
  let dir: string;
  let db: string;
  const ids: string[] = [];
  let campaign: string;
  let invitation: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rumedbench-phone-pages-'));
    db = join(dir, 'board.sqlite');
    server = await startServe(['--db', db, '--api-per-minute', '0']);
    // Two entries (a comparison), one of them with a long name and a link, as people name their models.
    for (const [folder, model] of [
      ['bilstm', 'BiLSTM (upstream)'],
      ['linear_models', 'Linear models, tf-idf and logistic regression (upstream, sklearn 1.5)'],
    ] as const) {
      const r = await uploadTo(server.url, referenceFiles(folder), {
        model,
        kind: 'feature-based',
        link: 'https://github.com/sb-ai-lab/MedBench/tree/main/code/baselines/linear_models_tfidf',
      });
      expect(r.status).toBe(201);
      ids.push(r.body.id as string);
    }
    const { stdout } = await rumedbenchOk(
      'serve',
      'campaign',
      'create',
      '--db',
      db,
      '--base-url',
      server.url,
      '--task',
      'RuMedDaNet',
      '--items',
      '4',
      '--annotators',
      '2',
    );
    campaign = /campaign ([0-9a-f-]{36})/.exec(stdout)?.[1] as string;
    invitation = /(http:\/\/\S+\/annotate\/rmb_[\w-]+)/.exec(stdout)?.[1] as string;
    // The comparison's 1,000 paired resamples, made once and kept by the server, not within a page load's 30 s.
    expect((await fetch(`${server.url}/compare?a=${ids[0]}&b=${ids[1]}`)).status).toBe(200);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function phone(lang: 'en' | 'ru'): Promise<BrowserContext> {
    return browser.newContext({
      viewport: PHONE,
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      locale: lang === 'ru' ? 'ru-RU' : 'en-US',
    });
  }

  /** The page's width, and what passes the screen's right edge outside a box that scrolls it (named for the failure). */
  function overflow(page: Page): Promise<Overflow> {
    // The test's own types have no DOM: the parts of it this reads, named here.
    interface Box {
      tagName: string;
      className: string;
      textContent: string | null;
      scrollWidth: number;
      clientWidth: number;
      parentElement: Box | null;
      getBoundingClientRect(): { width: number; right: number };
    }
    return page.evaluate((width) => {
      const doc = (
        globalThis as unknown as {
          document: { body: Box; documentElement: Box; querySelectorAll(s: string): Iterable<Box> };
        }
      ).document;
      const scrolls = (e: Box): boolean => {
        // The page itself (html, body) is what must not scroll; a box inside it may.
        for (let p = e.parentElement; p && p !== doc.body; p = p.parentElement)
          if (p.scrollWidth > p.clientWidth + 1) return true;
        return false;
      };
      const past: string[] = [];
      for (const e of doc.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        if (r.width > 0 && r.right > width + 0.5 && !scrolls(e))
          past.push(`${e.tagName.toLowerCase()}.${e.className}: ${(e.textContent ?? '').slice(0, 40)}`);
      }
      return { scrollWidth: doc.documentElement.scrollWidth, past: past.slice(0, 5) };
    }, PHONE.width);
  }

  /** Screenshots the page and says what of it sticks out (nothing, on every page). */
  async function check(page: Page, name: string, lang: string): Promise<Overflow & { page: string }> {
    await page.screenshot({ path: artifactPath('phone-pages', `${name}-${lang}.png`), fullPage: true });
    return { page: name, ...(await overflow(page)) };
  }
  const fits = (page: string): Overflow & { page: string } => ({ page, scrollWidth: PHONE.width, past: [] });

  for (const lang of ['en', 'ru'] as const) {
    it(`shows a comparison's table whole on a phone, the interval and p under the difference (${lang})`, async () => {
      const context = await phone(lang);
      const page = await context.newPage();
      await page.goto(`${server.url}/compare?a=${ids[0]}&b=${ids[1]}&lang=${lang}`);
      const table = page.locator('table.compare');
      await table.screenshot({ path: artifactPath('phone-pages', `compare-table-${lang}.png`) });
      // The table fits its box: nothing to scroll, on the page or in the table's own box.
      const box = await table.evaluate((t) => {
        const wrap = t.parentElement as unknown as { scrollWidth: number; clientWidth: number };
        return { scroll: wrap.scrollWidth, client: wrap.clientWidth, right: t.getBoundingClientRect().right };
      });
      expect(box.scroll).toBeLessThanOrEqual(box.client);
      expect(box.right).toBeLessThanOrEqual(PHONE.width);
      // The columns a phone shows: task (its metric under it), A, B, and the difference with its interval and p.
      const shown = await table
        .locator('thead th')
        .evaluateAll((ths) => ths.filter((th) => th.getClientRects().length > 0).map((th) => th.className));
      expect(shown).toEqual(['', 'num', 'num', 'num delta']);
      const ru = lang === 'ru';
      const overall = table.locator('tbody tr', { hasText: ru ? 'Общий балл' : 'Overall' }).last();
      const cells = await overall
        .locator('th, td')
        .evaluateAll((cs) =>
          cs
            .filter((c) => c.getClientRects().length > 0)
            .map((c) =>
              [...c.querySelectorAll('*:not(:has(*))'), c]
                .filter((x) => x.getClientRects().length > 0)
                .map((x) => x.textContent?.trim() ?? ''),
            ),
        );
      // BiLSTM 53.87 and the linear models' 58.46 (docs/scoring.md): B − A +4.58 (of the unrounded scores), its
      // interval and p under it.
      expect(cells[2]?.at(-1)).toBe('58.46');
      expect(cells[1]?.at(-1)).toBe('53.87');
      expect(cells[3]?.at(-1)).toMatch(/^\+4\.\d\d\s*\[\d+\.\d\d, \d+\.\d\d\]\s*p\s*<0\.001$/);
      // Every shown cell's text stays inside the screen.
      expect(await check(page, 'compare', lang)).toEqual(fits('compare'));
      await context.close();
      // A laptop: the seven columns, each value once (the copies under others are a phone's).
      const wide = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const laptop = await wide.newPage();
      await laptop.goto(`${server.url}/compare?a=${ids[0]}&b=${ids[1]}&lang=${lang}`);
      await expect(laptop.locator('table.compare thead th:visible').count()).resolves.toBe(7);
      await expect(laptop.locator('table.compare small.under:visible').count()).resolves.toBe(0);
      await wide.close();
    });

    it(`lets no page scroll sideways on a phone: boards, entry, upload, runs, errors, admin, campaigns (${lang})`, async () => {
      const context = await phone(lang);
      const page = await context.newPage();
      const q = `lang=${lang}`;
      const pages: [string, string][] = [
        ['board', `/?${q}`],
        ['board-closed', `/board/closed?${q}`],
        ['board-sorted', `/?sort=model&dir=desc&${q}`],
        ['entry', `/submissions/${ids[1]}?${q}`],
        ['submit', `/submit?${q}`],
        ['runs', `/runs?${q}`],
        ['not-found', `/submissions/00000000-0000-4000-8000-000000000000?${q}`],
        ['bad-sort', `/?sort=bogus&${q}`],
        ['annotate', `${invitation.replace(server.url, '')}?${q}`],
        ['admin-login', `/admin/login?${q}`],
      ];
      const seen: (Overflow & { page: string })[] = [];
      for (const [name, path] of pages) {
        await page.goto(`${server.url}${path}`);
        seen.push(await check(page, name, lang));
      }
      // A rejected upload: its list of problems (long ids, file names) stays inside the screen.
      const broken = join(dir, 'RuMedNLI.jsonl');
      writeFileSync(broken, '{"pairID": "no-such-id-0123456789abcdef", "prediction": "neutral"}\nnot json\n');
      await page.goto(`${server.url}/submit?${q}`);
      await page.setInputFiles('input[type=file]', broken);
      await page.fill('input[name=model]', 'broken');
      await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
      await expect(page.locator('#upload-errors').count()).resolves.toBe(1);
      seen.push(await check(page, 'upload-rejected', lang));
      // The administrator's pages, signed in.
      await page.goto(`${server.url}/admin/login?${q}`);
      await page.fill('input[name=token]', TEST_ADMIN_TOKEN);
      await Promise.all([page.waitForURL(/\/admin(\?|$)/), page.click('button[type=submit]')]);
      for (const [name, path] of [
        ['admin', `/admin?${q}`],
        ['admin-entry', `/admin/submissions/${ids[1]}?${q}`],
        ['campaigns', `/admin/campaigns?${q}`],
        ['campaign', `/admin/campaigns/${campaign}?${q}`],
      ] as const) {
        await page.goto(`${server.url}${path}`);
        seen.push(await check(page, name, lang));
      }
      expect(seen).toEqual(seen.map((s) => fits(s.page)));
      await context.close();
      // Fifteen pages, each loaded and shot whole at twice the pixels: a minute alone on a busy 2-core machine.
    }, 240_000);
  }
});
