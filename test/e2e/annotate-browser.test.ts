/**
 * An annotator in a real browser (Debian's Chromium): answers RuMedDaNet items with the keyboard, reloads halfway
 * and goes on without losing an answer, survives a dropped connection, marks a RuMedNER entity with the mouse, picks
 * ranked codes by type-ahead; the campaign's human row then appears on the board with the expected score.
 * Screenshots of the annotator's page for each kind of task are kept in test-artifacts/annotate/.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { getTask } from '../../src/tasks/registry.js';
import {
  artifactPath,
  BROWSER_REQUIRED,
  HAVE_BROWSER,
  launchBrowser,
  NO_BROWSER_REASON,
} from '../helpers/browser.js';
import { rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import { eventually, type ServerProcess, startServe } from '../helpers/server.js';

const runs = DATA_DIR !== undefined && (HAVE_BROWSER || BROWSER_REQUIRED);
const why = DATA_DIR === undefined ? NO_DATA_REASON : NO_BROWSER_REASON;

describe.skipIf(!runs)(`annotating in a browser (${runs ? 'Chromium and data found' : why})`, () => {
  let browser: Browser;
  let server: ServerProcess;
  let db: string;

  const campaign = async (...args: string[]) => {
    const { stdout } = await rumedbenchOk(
      'serve',
      'campaign',
      'create',
      '--db',
      db,
      '--base-url',
      server.url,
      ...args,
    );
    return {
      id: /campaign ([0-9a-f-]{36})/.exec(stdout)?.[1] as string,
      links: [...stdout.matchAll(/(http:\/\/\S+\/annotate\/rmb_[\w-]+)/g)].map((m) => m[1] as string),
    };
  };
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: artifactPath('annotate', `${name}.png`), fullPage: true });
  const saved = (page: Page) =>
    // (A locator, not waitForFunction: the page's CSP refuses to evaluate strings, as it should.)
    page.locator('#save-status', { hasText: /^Все ответы сохранены$/ }).waitFor();

  beforeAll(async () => {
    db = join(mkdtempSync(join(tmpdir(), 'rumedbench-annotate-')), 'board.sqlite');
    server = await startServe(['--db', db]);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function open(url: string, options: { phone?: boolean } = {}): Promise<Page> {
    const context = await browser.newContext(
      options.phone
        ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
        : { viewport: { width: 1100, height: 800 } },
    );
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(url);
    return page;
  }
  // The script throws nothing, whatever a test does to the page (offline included).
  const pageErrors: string[] = [];
  afterEach(() => {
    expect(pageErrors.splice(0)).toEqual([]);
  });

  it('answers RuMedDaNet with the keyboard, reloads halfway without losing anything, and publishes the human row', async () => {
    const { id, links } = await campaign(
      '--task',
      'RuMedDaNet',
      '--items',
      '8',
      '--annotators',
      '1',
      '--name',
      'keyboard',
    );
    const gold = new Map(
      (await loadSplit(getTask('RuMedDaNet'), 'test', { dataDir: DATA_DIR as string })).map((r) => [
        r.id,
        r.gold as string,
      ]),
    );
    const page = await open(links[0] as string);
    await shot(page, 'danet');
    // The id of the item on screen: its place in the embedded item list.
    const items = JSON.parse((await page.locator('#annotate-data').textContent()) as string) as {
      items: { id: string }[];
    };
    const current = async () => {
      const n = Number(/Пример (\d+)/.exec((await page.locator('.item-state').textContent()) ?? '')?.[1]);
      return items.items[n - 1]?.id as string;
    };
    // The first four: right answers with Д/Н, then Enter; the rest wrong, with 1/2.
    const given: [string, string][] = [];
    for (let i = 0; i < 4; i++) {
      const item = await current();
      const g = gold.get(item) as string;
      // Д and Н on a Latin layout: the physical keys L and Y.
      await page.keyboard.press(g === 'да' ? 'KeyL' : 'KeyY');
      await expect(page.locator('.choice.chosen').getAttribute('data-value')).resolves.toBe(g);
      given.push([item, g]);
      await page.keyboard.press('Enter');
    }
    await saved(page);
    await page.reload();
    await expect(page.locator('#progress').textContent()).resolves.toBe('отвечено 4 из 8');
    await expect(page.locator('.item-state').textContent()).resolves.toBe('Пример 5 из 8 · без ответа');
    // A dropped connection: the answer waits in the browser and is sent when the connection is back.
    await page.context().setOffline(true);
    for (let i = 0; i < 4; i++) {
      const item = await current();
      const wrong = gold.get(item) === 'да' ? 'нет' : 'да';
      await page.keyboard.press(wrong === 'да' ? '1' : '2');
      given.push([item, wrong]);
      await page.keyboard.press('Enter');
    }
    await page.locator('#save-status', { hasText: 'Не удалось сохранить' }).waitFor();
    await shot(page, 'danet-offline');
    await page.context().setOffline(false);
    await saved(page);
    await expect(page.locator('.done h2').textContent()).resolves.toBe('Все примеры размечены. Спасибо!');

    const { stdout } = await rumedbenchOk('serve', 'campaign', 'publish', id, '--db', db);
    expect(stdout).toMatch(/^published as submission [0-9a-f-]{36}: 8 of 8 items/);
    // Published by another process: the server shows it once it has looked at the database again.
    await eventually(
      async () =>
        ((await (await fetch(`${server.url}/api/boards/public`)).json()) as { entries: { model: string }[] })
          .entries,
      (entries) => entries.some((e) => e.model === 'Human: keyboard'),
    );
    const board = await open(`${server.url}/`);
    const row = board.locator('tr.entry', { hasText: 'Human: keyboard' });
    await expect(row.locator('td').nth(4).textContent()).resolves.toMatch(/^50\.00\[/); // 4 right of 8
    await expect(row.locator('.tag').allTextContents()).resolves.toEqual(['human', '8/8 items']);
    await shot(board, 'board-with-human-row');
  });

  it('marks a RuMedNER entity with the mouse', async () => {
    const { links } = await campaign('--task', 'RuMedNER', '--items', '2', '--annotators', '1');
    const page = await open(links[0] as string);
    const toks = page.locator('.tok');
    await toks.nth(0).hover();
    await page.mouse.down();
    await toks.nth(1).hover();
    await page.mouse.up();
    await expect(page.locator('.tok.selected').count()).resolves.toBe(2);
    await page.locator('button.type[data-type=ADR]').click();
    await saved(page);
    await expect(page.locator('ul.spans li').count()).resolves.toBe(1);
    await shot(page, 'ner');
    const token = (links[0] as string).split('/annotate/')[1] as string;
    const state = (await (await fetch(`${server.url}/api/annotate/${token}`)).json()) as {
      items: { id: string; tokens: string[] }[];
      answers: Record<string, { answer: string[] }>;
    };
    const first = state.items[0] as { id: string; tokens: string[] };
    expect(state.answers[first.id]?.answer).toEqual(
      first.tokens.map((_, i) => (i === 0 ? 'B-ADR' : i === 1 ? 'I-ADR' : 'O')),
    );
    // The keyboard too: move to the fourth word, extend by one, type 1 (Drugname).
    await page.locator('.tokens').focus();
    for (const key of ['ArrowRight', 'ArrowRight', 'ArrowRight', 'Shift+ArrowRight', '1'])
      await page.keyboard.press(key);
    await saved(page);
    await expect(page.locator('ul.spans li').allTextContents()).resolves.toHaveLength(2);
  });

  it('picks ranked codes by type-ahead, and shows the other kinds of task, on a laptop and a phone', async () => {
    const top3 = await campaign('--task', 'RuMedTop3', '--items', '2', '--annotators', '1');
    const page = await open(top3.links[0] as string);
    await page.locator('#search').fill('M5');
    await page.keyboard.press('Enter');
    await page.locator('#search').fill('i1');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await saved(page);
    const picks = await page.locator('ol.picks li span').allTextContents();
    expect(picks).toHaveLength(2);
    expect(picks[0]?.startsWith('M5')).toBe(true);
    await page.locator('ol.picks li').nth(1).locator('button', { hasText: '↑' }).click();
    await saved(page);
    await expect(page.locator('ol.picks li span').first().textContent()).resolves.toBe(picks[1]);
    await shot(page, 'top3');
    for (const [task, split] of [
      ['RuMedNLI', 'test'],
      ['RuMedTest', 'private_test'],
      ['RuMedSymptomRec', 'test'],
    ] as const) {
      const c = await campaign('--task', task, '--split', split, '--items', '2', '--annotators', '1');
      await shot(await open(c.links[0] as string), task.toLowerCase());
      await shot(await open(c.links[0] as string, { phone: true }), `${task.toLowerCase()}-phone`);
    }
  });
});
