/**
 * A platform-run evaluation end to end, as an administrator does it: `serve` on PostgreSQL, `serve endpoint add`,
 * the admin's API call, a `rumedbench worker` process with the platform's data, and the pages in a real browser:
 * /runs, the run's page, the closed board with the entry marked as the platform's, and the entry's page. Screenshots
 * are kept in test-artifacts/runs/ for a person to look at.
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
import { rumedbenchOk } from '../helpers/cli.js';
import { rumedbenchProcessFor } from '../helpers/cli-process.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { writeFixtureData } from '../helpers/fixture-data.js';
import { type ServerProcess, startServe, TEST_ADMIN_TOKEN } from '../helpers/server.js';

const runs = PG_URL !== undefined && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = PG_URL === undefined ? NO_PG_REASON : NO_BROWSER_REASON;
const shot = (page: Page, name: string) =>
  page.screenshot({ path: artifactPath('runs', `${name}.png`), fullPage: true });

describe.skipIf(!runs)(`platform runs in a browser (${runs ? 'PostgreSQL and Chromium found' : why})`, () => {
  let browser: Browser;
  let server: ServerProcess;
  let model: FakeOpenAI;
  let db: string;
  let data: string;
  const errors: string[] = [];

  beforeAll(async () => {
    data = writeFixtureData(mkdtempSync(join(tmpdir(), 'rumedbench-runs-browser-')));
    const gold = mkdtempSync(join(tmpdir(), 'rumedbench-runs-browser-gold-'));
    for (const [task, idField, answer] of [
      ['RuMedDaNet', 'pairID', 'да'],
      ['RuMedNLI', 'pairID', 'neutral'],
      ['RuMedTest', 'idx', '1'],
    ] as const) {
      const ids = readFileSync(join(data, task, 'private_test_v1.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as Record<string, string>)[idField]);
      writeFileSync(
        join(gold, `${task}.jsonl`),
        ids.map((id) => `${JSON.stringify({ [idField]: id, answer })}\n`).join(''),
      );
    }
    db = await freshDatabase('postgres');
    await rumedbenchOk('serve', 'import-gold', gold, '--db', db, '--data', data);
    model = await startFakeOpenAI({
      reply: (body) => {
        const last = body.messages.at(-1)?.content ?? '';
        if (/«да» или «нет»/.test(last)) return 'Ответ: да';
        if (/entailment|contradiction|neutral/.test(last)) return 'Ответ: neutral';
        return 'Ответ: 2';
      },
    });
    await rumedbenchOk(
      'serve',
      'endpoint',
      'add',
      'med-7b',
      '--db',
      db,
      '--base-url',
      model.url,
      '--allow-private',
      '--model',
      'med-7b',
    );
    server = await startServe(['--db', db, '--data', data]);
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await model?.close();
  });

  async function open(path: string, admin = false, phone = false): Promise<Page> {
    const context = await browser.newContext(
      phone ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true } : {},
    );
    // A step that cannot happen fails within 30 s, naming itself, instead of running into the test's timeout.
    context.setDefaultTimeout(30_000);
    context.setDefaultNavigationTimeout(30_000);
    if (admin) {
      const page = await context.newPage();
      await page.goto(`${server.url}/admin/login`);
      await page.fill('input[name=token]', TEST_ADMIN_TOKEN);
      // The session cookie comes with the answer to the form: wait for it before the page goes.
      await Promise.all([page.waitForURL(/\/admin(\?|$)/), page.click('button[type=submit]')]);
      await page.close();
    }
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${server.url}${path}`);
    return page;
  }

  it('an evaluation queued by the admin runs on a worker and appears on the closed board, marked', async () => {
    const r = await fetch(`${server.url}/api/admin/evaluations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: 'med-7b', boards: 'closed' }),
    });
    expect(r.status).toBe(202);
    const { id } = (await r.json()) as { id: string };
    const queued = await open('/runs');
    expect(await queued.textContent('main')).toContain('med-7b · Closed tests');
    await shot(queued, 'runs-queued');

    // Alone it takes a few seconds: past 80 s it is killed, and its log is the failure's message.
    const worker = await rumedbenchProcessFor(
      80_000,
      {},
      ...['worker', '--db', db, '--data', data, '--exit-when-idle', '--allow-private'],
    );
    expect(worker.code, worker.stderr).toBe(0);
    // The server enters the finished run into its board within a few seconds.
    const until = Date.now() + 20_000;
    let board = '';
    while (Date.now() < until) {
      board = await (await fetch(`${server.url}/board/closed`)).text();
      if (board.includes('med-7b')) break;
      await new Promise((res) => setTimeout(res, 250));
    }
    const boardPage = await open('/board/closed');
    expect(await boardPage.textContent('#board')).toContain('med-7b');
    expect(await boardPage.textContent('#board')).toContain('run by the platform');
    await shot(boardPage, 'closed-board');

    const runPage = await open(`/runs/${id}`, true);
    expect(await runPage.textContent('main')).toContain('done');
    await shot(runPage, 'run-admin');
    const russian = await open('/runs?lang=ru');
    expect(await russian.textContent('main')).toContain('Оценки, запущенные платформой');
    expect(await russian.textContent('main')).toContain('med-7b · Закрытые тесты');
    await shot(russian, 'runs-ru');
    const entryLink = await runPage.getAttribute('main a[href^="/submissions/"]', 'href');
    expect(entryLink).toBeTruthy();
    const entry = await open(entryLink as string);
    const text = (await entry.textContent('main')) ?? '';
    expect(text).toContain('run by the platform');
    expect(text).toContain('max_tokens=512');
    expect(text).not.toContain(model.url);
    await shot(entry, 'entry');

    // In Russian, every text node of the runs pages, the board and the entry: no English status or kind word.
    const englishIn = async (label: string, path: string) => {
      const page = await open(path);
      // The text of every element of the page's main part, one by one.
      const nodes = await page.locator('main *').allTextContents();
      await shot(page, `ru-${label}`);
      return nodes.filter((t) =>
        /\b(done|failed|running|queued|finishing|cancelled|pending|evaluation|Run by the platform)\b|\d\/s\b/i.test(
          t,
        ),
      );
    };
    const entryRu = `${(entryLink as string).replace(/\?.*$/, '')}?lang=ru`;
    for (const [label, path] of [
      ['runs', '/runs?lang=ru'],
      ['run', `/runs/${id}?lang=ru`],
      ['closed-board', '/board/closed?lang=ru'],
      ['entry', entryRu],
    ] as const)
      expect(await englishIn(label, path), path).toEqual([]);
    // A phone (390 px), the admin's pages the widest: nothing runs off the page; the runs' tables wrap their text and
    // scroll in their box where they are still wider (a box as wide as the page).
    for (const [label, path] of [
      ['runs', '/runs'],
      ['runs-ru', '/runs?lang=ru'],
      ['run', `/runs/${id}`],
      ['run-ru', `/runs/${id}?lang=ru`],
    ] as const) {
      const phone = await open(path, true, true);
      await shot(phone, `phone-${label}`);
      expect(await phone.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(390);
      const boxes = await phone.locator('table.runs').evaluateAll((ts) =>
        ts.map((t) => {
          const wrap = t.parentElement as unknown as { className: string; clientWidth: number };
          return [wrap.className, wrap.clientWidth];
        }),
      );
      expect(boxes, path).toEqual([['table-wrap', 366]]);
    }
    expect(errors).toEqual([]);
  }, 120_000);
});

if (!runs) describe('platform runs in a browser', () => it.skip(why, () => {}));
