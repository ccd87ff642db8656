/**
 * The public board with ECG2Pathology on it, in a real browser, as a host runs it: `serve --tasks-dir ECG2Pathology`,
 * the test gold imported with `serve import-gold --split test`, a team's upload of all six tasks. The page shows the
 * paper's overall and MedBench's six-task overall side by side, ECG2Pathology's score marked as released by the Ladder.
 * Screenshots are kept in test-artifacts/ecg-board/ for a person to look at.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';
import { type ServerProcess, startServe, uploadTo } from '../helpers/server.js';

const runs = HAVE_BROWSER || BROWSER_REQUIRED;
const RECORDS = Array.from({ length: 40 }, (_, i) => `${String(i + 101).padStart(5, '0')}_lr`);
const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');
const shot = (page: Page, name: string) =>
  page.screenshot({ path: artifactPath('ecg-board', `${name}.png`), fullPage: true });

describe.skipIf(!runs)(
  `ECG2Pathology on the public board in a browser (${runs ? 'Chromium found' : NO_BROWSER_REASON})`,
  () => {
    let browser: Browser;
    let server: ServerProcess;
    const data = fixtureDataDir();
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-browser-'));
    const db = join(dir, 'board.sqlite');

    beforeAll(async () => {
      const gold = join(dir, 'gold');
      mkdirSync(gold);
      writeFileSync(
        join(gold, 'ECG2Pathology.jsonl'),
        jsonl(RECORDS.map((r, i) => ({ record_name: r, labels: i % 4 === 3 ? [5, 12] : [37] }))),
      );
      await rumedbenchOk(
        'serve',
        'import-gold',
        gold,
        '--split',
        'test',
        '--tasks-dir',
        'ECG2Pathology',
        '--db',
        db,
        '--data',
        data,
      );
      // Anonymous uploads on hidden gold (ECG2Pathology's test) are taken only with --closed-anonymous.
      server = await startServe(['--db', db, '--tasks-dir', 'ECG2Pathology', '--closed-anonymous'], {
        RUMEDBENCH_DATA: data,
      });
      const five = writeFixturePredictions(data, join(dir, 'five'), 2);
      const files = readdirSync(five).map((name) => ({ name, data: readFileSync(join(five, name)) }));
      const ecg = {
        name: 'ECG2Pathology.jsonl',
        data: jsonl(RECORDS.map((r, i) => ({ record_name: r, labels: i % 3 === 0 ? [37, 5] : [37] }))),
      };
      const r = await uploadTo(server.url, [...files, ecg], { model: 'Six-task model', kind: 'LLM' });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      // One without ECG2Pathology: the five-task overall only.
      const r2 = await uploadTo(server.url, files, { model: 'Five-task model', kind: 'LLM' });
      expect(r2.status, JSON.stringify(r2.body)).toBe(201);
      browser = await launchBrowser();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.stop();
    });

    it('shows the paper’s overall and the six-task overall side by side, ECG2Pathology released', async () => {
      for (const lang of ['en-US', 'ru-RU']) {
        const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: lang });
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${server.url}/board/public`);
        const head = page.locator('table#board thead th');
        const six = page.locator('th.overall-six');
        await expect(six.textContent()).resolves.toBe(
          lang === 'en-US' ? 'Overall, 6 tasks' : 'Общий балл, 6 задач',
        );
        // The six-task overall is the column right after the paper's overall.
        const names = await head.allTextContents();
        expect(names.findIndex((n) => n.startsWith('ECG2Pathology'))).toBeGreaterThan(-1);
        const row = page.locator('tr.entry', { hasText: 'Six-task model' });
        await expect(row.locator('td.overall-six').textContent()).resolves.toMatch(/^\d+\.\d\d$/);
        await expect(row.locator('td.task').last().textContent()).resolves.toMatch(
          lang === 'en-US' ? /released/ : /опубликован/,
        );
        const other = page.locator('tr.entry', { hasText: 'Five-task model' });
        await expect(other.locator('td.overall-six').textContent()).resolves.toBe('–');
        await expect(page.locator('p.held-tasks').textContent()).resolves.toContain('ECG2Pathology');
        await shot(page, `board-${lang}`);
        const entry = await row.locator('a').first().getAttribute('href');
        await page.goto(`${server.url}${entry}`);
        await expect(page.locator('body').textContent()).resolves.not.toContain('00101_lr');
        await shot(page, `entry-${lang}`);
        expect(errors).toEqual([]);
        await context.close();
      }
      // A phone: the overall alone, as on every board; the six-task overall comes with the tasks, on demand.
      const phone = await browser.newContext({
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        locale: 'en-US',
      });
      const page = await phone.newPage();
      await page.goto(`${server.url}/board/public`);
      const row = page.locator('tr.entry', { hasText: 'Six-task model' });
      await expect(row.locator('td.overall-six').isVisible()).resolves.toBe(false);
      expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(
        390,
      );
      await page.locator('label.show-tasks').click();
      await expect(row.locator('td.overall-six').isVisible()).resolves.toBe(true);
      await shot(page, 'board-phone-tasks');
      await phone.close();
    });
  },
);
