/**
 * The leaderboard in a real browser (Debian's Chromium): a newcomer uploads through the form and sees the row, uploads
 * a broken file and reads its errors, and a hostile model name shows as text. Screenshots of every page are kept in
 * test-artifacts/serve/ for a person to look at.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  artifactPath,
  BROWSER_REQUIRED,
  HAVE_BROWSER,
  launchBrowser,
  NO_BROWSER_REASON,
} from '../helpers/browser.js';
import { rumedbench } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON, PLATFORM_SUBMISSIONS, REFERENCE_PREDICTIONS } from '../helpers/data.js';
import { type ServerProcess, startServe, TEST_ADMIN_TOKEN, uploadTo } from '../helpers/server.js';

const HOSTILE = '<img src=x onerror=alert(1)> GPT "quoted"';
const haveData =
  DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined && PLATFORM_SUBMISSIONS !== undefined;
const runs = haveData && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = !haveData ? NO_DATA_REASON : NO_BROWSER_REASON;
const shot = (page: Page, name: string) =>
  page.screenshot({ path: artifactPath('serve', `${name}.png`), fullPage: true });

describe.skipIf(!runs)(`leaderboard in a browser (${runs ? 'Chromium and data found' : why})`, () => {
  let browser: Browser;
  let server: ServerProcess;
  let dir: string;
  const dialogs: string[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rumedbench-serve-browser-'));
    // `ranked()` polls the board's API, which is limited per address and minute.
    server = await startServe(['--db', join(dir, 'board.sqlite'), '--api-per-minute', '0']);
    // Something on the board already, and a closed-test entry waiting for gold.
    const ref = (n: string) => join(REFERENCE_PREDICTIONS as string, 'bilstm', n);
    const all = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'].map((t) => ({
      name: `${t}.jsonl`,
      data: readFileSync(ref(`${t}.jsonl`)),
    }));
    // A team name on the board comes from the team's token.
    const created = await rumedbench(
      'serve',
      'token',
      'create',
      '--team',
      'SAI',
      '--db',
      join(dir, 'board.sqlite'),
    );
    const token = /token: (\S+)/.exec(created.stdout)?.[1] as string;
    const r = await uploadTo(
      server.url,
      all,
      { model: 'BiLSTM (upstream)', kind: 'encoder' },
      { authorization: `Bearer ${token}` },
    );
    expect(r.status).toBe(201);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** Waits until the public board's ranks are computed for the board as it stands (they are made in the background). */
  async function ranked(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const r = (await (await fetch(`${server.url}/api/boards/public`)).json()) as {
        ranking: { status: string };
      };
      if (r.ranking.status === 'current') return;
      await new Promise((done) => setTimeout(done, 100));
    }
    throw new Error('the public board was not ranked within 20 s');
  }

  async function open(
    path: string,
    options: { dark?: boolean; lang?: string; phone?: boolean } = {},
  ): Promise<Page> {
    const context = await browser.newContext({
      colorScheme: options.dark ? 'dark' : 'light',
      viewport: options.phone ? { width: 390, height: 844 } : { width: 1280, height: 900 },
      ...(options.phone ? { deviceScaleFactor: 2, isMobile: true, hasTouch: true } : {}),
      locale: options.lang ?? 'en-US',
    });
    const page = await context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${server.url}${path}`);
    return page;
  }

  it('uploads through the form and shows the new row, its name as text', async () => {
    const page = await open('/submit');
    await shot(page, 'upload-form');
    const files = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'].map((t) =>
      join(REFERENCE_PREDICTIONS as string, 'linear_models', `${t}.jsonl`),
    );
    await page.setInputFiles('input[type=file]', files);
    await page.fill('input[name=model]', HOSTILE);
    // No team field: an anonymous upload cannot pose as a team.
    expect(await page.locator('input[name=team]').count()).toBe(0);
    await page.selectOption('select[name=kind]', 'feature-based');
    await page.fill('input[name=link]', 'https://github.com/sb-ai-lab/MedBench');
    await Promise.all([page.waitForURL(/\/submissions\//), page.click('button[type=submit]')]);
    await expect(page.locator('h1').textContent()).resolves.toBe(HOSTILE);
    await shot(page, 'submission');
    await ranked();
    await page.goto(`${server.url}/`);
    const row = page.locator('tr.entry', { hasText: 'GPT "quoted"' });
    await expect(row.locator('th a').textContent()).resolves.toBe(HOSTILE);
    // The overall, its interval, and its rank's interval and group (two entries: linear and BiLSTM, which differ).
    await expect(row.locator('td').last().textContent()).resolves.toBe('58.46[56.76, 60.27]rank 1 · a');
    await expect(page.locator('p.rank-hint').textContent()).resolves.toContain('not distinguishable');
    expect(await page.locator('img').count()).toBe(0);
    await shot(page, 'board');
  });

  it('shows every problem of a broken upload, with file, line, id and code', async () => {
    const broken = join(dir, 'RuMedNLI.jsonl');
    const lines = readFileSync(
      join(REFERENCE_PREDICTIONS as string, 'bilstm', 'RuMedNLI.jsonl'),
      'utf8',
    ).split('\n');
    writeFileSync(
      broken,
      [
        '{"pairID": "x1", "gold_label": "neutral", "prediction": "neutral"}',
        'not json',
        ...lines.slice(2),
      ].join('\n'),
    );
    const page = await open('/submit');
    await page.setInputFiles('input[type=file]', broken);
    await page.fill('input[name=model]', 'broken');
    await page.click('button[type=submit]');
    const alert = page.locator('#upload-errors');
    await expect(alert.locator('h2').textContent()).resolves.toBe('Rejected: nothing was scored');
    const items = await alert.locator('li.error').allTextContents();
    expect(items).toEqual([
      'UNKNOWN_ID upload!RuMedNLI.jsonl:1 (id x1): id is not in the test split of RuMedNLI',
      // The parser's own words differ between Node.js versions.
      expect.stringMatching(
        /^MALFORMED_JSON upload!RuMedNLI\.jsonl:2: malformed JSON \(.+\) — expected one JSON object per line$/,
      ),
      // One line per kind (issue #63): counted, the first one's words, the first ids.
      'MISSING_ITEM upload!RuMedNLI.jsonl × 2, the first (id 1f2a8146-66c7-11e7-b4f2-f45c89b91419): no prediction for this test item (data line 1) — ids 1f2a8146-66c7-11e7-b4f2-f45c89b91419, 1f2a8538-66c7-11e7-8228-f45c89b91419',
    ]);
    // What was typed is kept for the next try.
    await expect(page.inputValue('input[name=model]')).resolves.toBe('broken');
    await shot(page, 'upload-rejected');
    await page.goto(`${server.url}/`);
    await expect(page.locator('tr.entry', { hasText: 'broken' }).count()).resolves.toBe(0);
  });

  it('warns before sending files over the size cap, without a round trip', async () => {
    const big = join(dir, 'big.jsonl');
    writeFileSync(big, Buffer.alloc(17 << 20, 0x20));
    const page = await open('/submit');
    await page.setInputFiles('input[type=file]', big);
    await expect(page.locator('.size-warning').isVisible()).resolves.toBe(true);
    await expect(page.locator('.size-warning').textContent()).resolves.toBe(
      'The files are larger than 16 MiB; they would be refused.',
    );
  });

  it('shows an entry’s scores on a phone’s first screen, and its charts fit the phone (issue #63)', async () => {
    const board = (await (await fetch(`${server.url}/api/boards/public`)).json()) as {
      entries: { id: string; model: string }[];
    };
    const entry = board.entries.find((e) => e.model === 'BiLSTM (upstream)')?.id as string;
    for (const lang of ['en-US', 'ru-RU']) {
      const phone = await open(`/submissions/${entry}`, { phone: true, lang });
      // The first score (RuMedTop3's first metric) stands whole on the first screen (390 × 844); it stood at ~944 px,
      // and then half cut at the screen's right edge.
      await phone.screenshot({ path: artifactPath('serve', `entry-phone-${lang}-first-screen.png`) });
      const table = phone.locator('table.metrics');
      const first = await table.locator('tbody tr').first().locator('td.num').nth(1).boundingBox();
      expect(first?.y ?? 9999).toBeLessThan(844 - (first?.height ?? 0));
      expect((first?.x ?? 9999) + (first?.width ?? 0)).toBeLessThanOrEqual(390);
      const [scrolled, shown] = await table.evaluate((t) => {
        const wrap = t.parentElement;
        return [wrap?.scrollWidth ?? 9999, wrap?.clientWidth ?? 0];
      });
      expect(scrolled).toBeLessThanOrEqual(shown);
      expect((await phone.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(
        390,
      );
      // Each chart fits its box (phone-charts-browser.test.ts measures their marks and text).
      const figures = await phone.locator('figure').evaluateAll((figs) =>
        figs.map((f) => {
          const box = [...f.querySelectorAll('.chart')].find((b) => b.getClientRects().length > 0);
          return { id: f.id, fits: box !== undefined && box.scrollWidth <= box.clientWidth };
        }),
      );
      expect(figures.length).toBeGreaterThan(3);
      expect(figures.filter((f) => !f.fits)).toEqual([]);
      await shot(phone, `entry-phone-${lang}`);
      await phone
        .locator('figure')
        .first()
        .screenshot({ path: artifactPath('serve', `entry-phone-${lang}-chart.png`) });
    }
    // A wide screen shows the page's drawings, not the phone's.
    const wide = await open(`/submissions/${entry}`);
    await expect(wide.locator('.chart.phone:visible').count()).resolves.toBe(0);
    await expect(wide.locator('.chart.wide:visible').count()).resolves.toBeGreaterThan(3);
  });

  it('renders the closed board, a comparison, the admin pages and Russian, light and dark', async () => {
    errors.length = 0; // the rejected upload above answered 422 on purpose
    const chatgpt = join(PLATFORM_SUBMISSIONS as string, 'chatgpt');
    // Uploads on hidden gold need a team token.
    const created = await rumedbench(
      'serve',
      'token',
      'create',
      '--team',
      'OpenAI',
      '--db',
      join(dir, 'board.sqlite'),
    );
    const token = /token: (\S+)/.exec(created.stdout)?.[1] as string;
    const closed = await uploadTo(
      server.url,
      ['RuMedDaNet', 'RuMedNLI', 'RuMedTest'].map((t) => ({
        name: `${t}.jsonl`,
        data: readFileSync(join(chatgpt, `${t}.jsonl`)),
      })),
      { model: 'ChatGPT', kind: 'LLM' },
      { authorization: `Bearer ${token}` },
    );
    expect(closed.body.status).toBe('pending');
    const board = (await (await fetch(`${server.url}/api/boards/public`)).json()) as {
      entries: { id: string }[];
    };
    const [a, b] = board.entries.map((e) => e.id);
    const cmp = await open(`/compare?a=${a}&b=${b}`, { dark: true });
    await expect(cmp.locator('figure#forest svg:visible').count()).resolves.toBe(1);
    await shot(cmp, 'compare-dark');
    const ru = await open('/', { lang: 'ru-RU' });
    await expect(ru.locator('h1').textContent()).resolves.toBe('Открытые тестовые наборы');
    await expect(ru.locator('tr.entry td').last().textContent()).resolves.toMatch(/место \d(–\d)? · [a-z]+$/);
    await shot(ru, 'board-ru');
    // Russian words on the badges (stored in English), and one decimal separator, a point, in every number.
    await expect(ru.locator('tr.entry .tag.kind').allTextContents()).resolves.toEqual([
      'на признаках',
      'энкодер',
    ]);
    const text = `${await ru.locator('main').textContent()} ${await ru.locator('small.mde').first().getAttribute('title')}`;
    expect(text).toContain('α 0.05');
    expect(text.match(/\d,\d/g)).toBeNull();
    // Under a two-metric task's pair, the interval is named as its task score's (the mean of the two), not theirs.
    const top3 = ru.locator('tr.entry').first().locator('td.task').first();
    await expect(top3.locator('small.ci').first().textContent()).resolves.toBe(
      'балл\u00a061.25 [58.45,\u00a063.99]',
    );
    await expect(top3.textContent()).resolves.toBe('49.76/72.75балл\u00a061.25 [58.45,\u00a063.99]1 · a');
    // Every task's name on one line, its detectable difference on the next: headers of one height.
    const lines = await ru
      .locator('th.task')
      .evaluateAll((ths) =>
        ths.map((th) => [th.querySelector('.name')?.getClientRects().length, th.clientHeight]),
      );
    expect(new Set(lines.map(([names]) => names))).toEqual(new Set([1]));
    expect(new Set(lines.map(([, height]) => height)).size).toBe(1);
    // A phone: the overall with its rank and group beside the model, nothing to scroll sideways; the tasks on demand.
    for (const lang of ['en-US', 'ru-RU']) {
      const phone = await open('/', { phone: true, lang });
      const first = phone.locator('tr.entry').first();
      await expect(first.locator('td.task').first().isVisible()).resolves.toBe(false);
      await expect(first.locator('td').last().isVisible()).resolves.toBe(true);
      const width = (await phone.evaluate('document.documentElement.scrollWidth')) as number;
      expect(width).toBeLessThanOrEqual(390);
      await shot(phone, `board-phone-${lang}`);
      // The tasks on demand: one switch shows their columns (the table may then scroll sideways, as asked), and says
      // whether it is on.
      const russian = lang === 'ru-RU';
      const label = phone.locator('label.show-tasks');
      await expect(label.locator('span:visible').allTextContents()).resolves.toEqual([
        russian ? 'Показать задачи' : 'Show the tasks',
      ]);
      await label.click();
      await expect(label.locator('span:visible').allTextContents()).resolves.toEqual([
        russian ? 'Задачи показаны: скрыть' : 'Tasks shown: hide',
      ]);
      await expect(phone.locator('#show-tasks').isChecked()).resolves.toBe(true);
      await expect(first.locator('td.task').first().isVisible()).resolves.toBe(true);
      await expect(first.locator('td.task').first().textContent()).resolves.toMatch(/\d+\.\d\d/);
      await shot(phone, `board-phone-${lang}-tasks`);
      // Scrolled to its last column, the table keeps the model's column at its left edge, in sight; the page itself
      // still does not scroll sideways.
      const wrap = phone.locator('.table-wrap');
      await wrap.evaluate((w) => {
        w.scrollLeft = w.scrollWidth;
      });
      const box = await wrap.boundingBox();
      const model = await first.locator('th').boundingBox();
      const task = await first.locator('td.task').first().boundingBox();
      expect(Math.abs((model?.x ?? -1) - (box?.x ?? 0))).toBeLessThan(1);
      expect(task?.x ?? 0).toBeLessThan(box?.x ?? 0);
      await expect(first.locator('th a').isVisible()).resolves.toBe(true);
      expect((await phone.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(
        390,
      );
      await first.scrollIntoViewIfNeeded();
      await phone.screenshot({ path: artifactPath('serve', `board-phone-${lang}-tasks-scrolled.png`) });
      // The switch answers the keyboard too (its box is out of sight, not out of reach).
      await phone.locator('#show-tasks').press('Space');
      await expect(label.locator('span:visible').allTextContents()).resolves.toEqual([
        russian ? 'Показать задачи' : 'Show the tasks',
      ]);
      await expect(first.locator('td.task').first().isVisible()).resolves.toBe(false);
    }
    // A header is a link: the whole board sorted on the server, the sort in the address and in the form (issue #63).
    const team = ru.locator('table#board thead th').nth(2);
    await Promise.all([ru.waitForURL(/[?&]sort=team/), team.locator('a').click()]);
    await expect(team.getAttribute('aria-sort')).resolves.toBe('ascending');
    await expect(ru.locator('select[name=sort]').inputValue()).resolves.toBe('team');
    await shot(ru, 'board-sorted-by-team');
    const closedPage = await open('/board/closed');
    // The closed board names how its scores are released, entries or not.
    await expect(closedPage.locator('p.ladder').textContent()).resolves.toContain('Blum & Hardt, 2015');
    await shot(closedPage, 'board-closed');

    const admin = await open('/admin');
    await admin.fill('input[name=token]', TEST_ADMIN_TOKEN);
    await Promise.all([admin.waitForURL(/\/admin(\?|$)/), admin.click('button[type=submit]')]);
    await expect(admin.locator('table.admin tbody tr').count()).resolves.toBe(4);
    await shot(admin, 'admin');
    const hide = admin.locator('tr', { hasText: 'BiLSTM (upstream)' }).locator('button[data-action=hide]');
    await Promise.all([admin.waitForURL(/\/admin/), hide.click()]);
    await expect(admin.locator('tr', { hasText: 'BiLSTM (upstream)' }).textContent()).resolves.toContain(
      'hidden',
    );
    await admin.goto(`${server.url}/`);
    await expect(admin.locator('tr.entry').count()).resolves.toBe(1);
    expect(errors).toEqual([]);
    expect(dialogs).toEqual([]);
  });
});
