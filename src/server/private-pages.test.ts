/**
 * Pages seen with the admin's powers stay the admin's (issue #42, item 4), in process on SQLite and PostgreSQL, as an
 * attacker would try it: the admin opens an entry of the closed board (exact task scores and their intervals, which
 * the Ladder withholds) or a public entry with ECG2Pathology (its exact score, where the Ladder shows a release),
 * then a visitor opens the same page. Invariant: nothing drawn or rendered for the admin's
 * view is served to anybody else, and no page seen with the admin's powers may be stored by a cache.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../test/helpers/fixture-data.js';
import { attr, type Element, elements, parseHtml } from '../../test/helpers/html.js';
import { form } from '../../test/helpers/leaderboard-app.js';
import { loadSplit } from '../data/load.js';
import { createLogger } from '../log.js';
import { ciText, f2 } from '../report/format.js';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { loadUserTasks } from '../tasks/user.js';
import { createApp } from './app.js';
import type { Leaderboard } from './leaderboard.js';
import { openLeaderboard } from './serve.js';
import { DEFAULT_LIMITS } from './upload.js';

// As `serve --tasks-dir ECG2Pathology` does: a task on hidden gold on the public board too.
loadUserTasks(['ECG2Pathology']);

const DATA = fixtureDataDir();
/** ECG2Pathology's public test records (the host hands them out and keeps their gold), gold and answers. */
const ECG_RECORDS = Array.from({ length: 40 }, (_, i) => `${String(i + 101).padStart(5, '0')}_lr`);
const ecgGold = (i: number) => (i % 4 === 3 ? [5, 12] : i % 5 === 0 ? [37, 5] : [37]);
const ecgAnswer = (i: number) => (i % 3 === 0 ? [37, 5] : i % 7 === 0 ? [] : [37]);
const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');
const ADMIN = 'pRiv-pages-admin-secret-4Kd8Wq2Zx7Rm';
const CLOSED = ['RuMedDaNet', 'RuMedNLI', 'RuMedTest'] as const;
type App = Hono<never>;

/** Made-up gold for the closed tests: a function of the id, never shipped with the data. */
const gold = (task: string, id: string): string => {
  const h = createHash('sha256').update(`private-pages:${id}`).digest()[0] as number;
  if (task === 'RuMedDaNet') return h % 2 ? 'да' : 'нет';
  if (task === 'RuMedNLI') return ['entailment', 'contradiction', 'neutral'][h % 3] as string;
  return String((h % 4) + 1);
};
/** Answers right on some items and wrong on others, so that every task has a score strictly between 0 and 100. */
const answer = (task: string, id: string, i: number): string => {
  const right = gold(task, id);
  if (i % 3 !== 0) return right;
  if (task === 'RuMedDaNet') return right === 'да' ? 'нет' : 'да';
  if (task === 'RuMedNLI') return right === 'neutral' ? 'entailment' : 'neutral';
  return right === '1' ? '2' : '1';
};

/** A page with its charts' gradient ids left out: Vega numbers them per renderer, not per chart. */
const drawing = (html: string): string => html.replace(/gradient_\d+/g, 'gradient');

const csrfOf = (html: string): string =>
  attr(
    elements(parseHtml(html), (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf')[0] as Element,
    'value',
  ) as string;

describe('pages seen with the admin’s powers (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    let lb: Leaderboard;
    let app: App;
    /** The admin's browser: its nonce and session cookies. */
    let adminCookie: string;
    const records: Record<string, TaskRecord[]> = {};

    beforeAll(async () => {
      lb = await openLeaderboard({
        dataDir: DATA,
        db: await freshDatabase(engine),
        threads: 1,
        bootstrap: 50,
        anonymousPerMinute: 1000,
        tokenPerMinute: 1000,
        // Most findings are probed anonymously, as they were found; the refusal has its own test.
        closedAnonymous: true,
        limits: DEFAULT_LIMITS,
      });
      await lb.admin.ensureAdminSecret(ADMIN);
      app = createApp({ lb, log: createLogger('silent') }) as unknown as App;
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-private-gold-'));
      for (const name of CLOSED) {
        const task = getTask(name);
        records[name] = await loadSplit(task, 'private_test', { dataDir: DATA });
        writeFileSync(
          join(dir, `${name}.jsonl`),
          (records[name] ?? [])
            .map((r) => JSON.stringify({ [task.idField]: r.id, [task.goldField]: gold(name, r.id) }))
            .join('\n'),
        );
      }
      await lb.gold.importGold(dir);
      const loginPage = await app.request('/admin/login');
      const nonce = (loginPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const signed = await app.request('/admin/login', {
        method: 'POST',
        body: new URLSearchParams({ _csrf: csrfOf(await loginPage.text()), token: ADMIN }),
        headers: { cookie: nonce },
      });
      expect(signed.status).toBe(303);
      adminCookie = `${nonce}; ${(signed.headers.get('set-cookie') ?? '').split(';')[0]}`;
    });
    afterAll(async () => {
      await lb?.close();
    });

    /** A closed upload by a team, scored on the made-up gold and released by the Ladder. */
    const uploadClosed = async (model: string, tasks: readonly string[] = CLOSED): Promise<string> => {
      const files = tasks.map((name) => {
        const task = getTask(name);
        return {
          name: `${name}.jsonl`,
          data: (records[name] ?? [])
            .map((r, i) => JSON.stringify({ [task.idField]: r.id, [task.goldField]: answer(name, r.id, i) }))
            .join('\n'),
        };
      });
      const { token } = await lb.admin.createToken(`team of ${model}`);
      const res = await app.request('/api/submissions', {
        method: 'POST',
        body: form(files, { model, kind: 'LLM', board: 'closed' }),
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as { id: string; status: string };
      expect([res.status, body.status], JSON.stringify(body)).toEqual([201, 'scored']);
      return body.id;
    };

    it('serves a visitor no exact closed score or interval, also after the admin opened the same entry page', async () => {
      const model = 'withheld-model';
      // Two of the three tests: no overall in either view, so the two views agree on all that the chart cache's key
      // used to hold (id, language, version, overall).
      const tasks = CLOSED.slice(0, 2);
      const id = await uploadClosed(model, tasks);
      const exact = await lb.boards.entry(id, { admin: true });
      const shown = await lb.boards.entry(id);
      // What the Ladder withholds: each task's score and interval.
      expect(Object.keys(exact.tasks)).toEqual(tasks);
      expect([shown.tasks, shown.overall, exact.overall]).toEqual([{}, null, null]);
      /** The exact values as a page or a chart would print them. */
      const withheld = Object.values(exact.tasks).flatMap((c) => [
        `${model}: ${f2(c.score)}`,
        ...[c.score_ci, ...Object.values(c.ci)].filter((ci) => ci !== null).map((ci) => ciText(ci)),
      ]);
      expect(withheld.length).toBeGreaterThan(CLOSED.length);

      // A visitor's page as a server that the admin never visited answers it.
      const untouched = createApp({ lb, log: createLogger('silent') }) as unknown as App;
      const alone = await (await untouched.request(`/submissions/${id}?lang=en`)).text();

      const admins = await app.request(`/submissions/${id}?lang=en`, { headers: { cookie: adminCookie } });
      const adminHtml = await admins.text();
      // The admin sees every exact value (the test looks for what is really there).
      expect(withheld.filter((w) => !adminHtml.includes(w))).toEqual([]);
      expect(adminHtml).toContain('href="/admin?lang=en"');

      const visitor = await app.request(`/submissions/${id}?lang=en`);
      const html = await visitor.text();
      expect(visitor.status).toBe(200);
      expect(withheld.filter((w) => html.includes(w))).toEqual([]);
      expect(html).not.toContain('href="/admin?lang=en"');
      // Whole: the visitor's page is the page of a server the admin never visited.
      expect(drawing(html)).toBe(drawing(alone));
      // And the admin, coming back, is not served the visitor's page either.
      const again = await (
        await app.request(`/submissions/${id}?lang=en`, { headers: { cookie: adminCookie } })
      ).text();
      expect(again).toBe(adminHtml);

      // The boards' pages, opened by the admin first: a visitor gets a visitor's page.
      await app.request('/api/boards/closed');
      await lb.boards.settled();
      for (const path of ['/board/closed?lang=en', '/?lang=en']) {
        const seen = await (await app.request(path, { headers: { cookie: adminCookie } })).text();
        expect(seen).toContain('href="/admin?lang=en"');
        const page = await (await app.request(path)).text();
        expect(drawing(page)).toBe(drawing(await (await untouched.request(path)).text()));
        expect(page).not.toContain('href="/admin?lang=en"');
      }
    });

    it('serves a visitor no exact ECG2Pathology score of a public entry after the admin opened it', async () => {
      const five = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-private-five-')), 2);
      const files = [
        ...readdirSync(five).map((name) => ({ name, data: readFileSync(join(five, name), 'utf8') })),
        {
          name: 'ECG2Pathology.jsonl',
          data: jsonl(ECG_RECORDS.map((r, i) => ({ record_name: r, labels: ecgAnswer(i) }))),
        },
      ];
      const res = await app.request('/api/submissions', {
        method: 'POST',
        body: form(files, { model: 'six-task model', kind: 'LLM' }),
      });
      const { id } = (await res.json()) as { id: string };
      expect(res.status).toBe(201);
      const gold = mkdtempSync(join(tmpdir(), 'rumedbench-private-ecg-'));
      writeFileSync(
        join(gold, 'ECG2Pathology.jsonl'),
        jsonl(ECG_RECORDS.map((r, i) => ({ record_name: r, labels: ecgGold(i) }))),
      );
      await lb.gold.importGold(gold, { split: 'test' });
      const exact = (await lb.boards.entry(id, { admin: true })).tasks.ECG2Pathology;
      const shown = await lb.boards.entry(id);
      // The overall (five public tasks) is the same in both views: all that the chart cache's key used to hold.
      expect(shown.overall).toBe((await lb.boards.entry(id, { admin: true })).overall);
      expect(shown.tasks.ECG2Pathology?.released).toBe(true);
      expect(exact?.released).toBeUndefined();
      const withheld = [
        `six-task model: ${f2(exact?.score)}`,
        ...Object.values(exact?.ci ?? {}).map((ci) => ciText(ci)),
        ...(exact?.score_ci ? [ciText(exact.score_ci)] : []),
      ];
      expect(f2(exact?.score)).not.toBe(f2(shown.tasks.ECG2Pathology?.score));

      const untouched = createApp({ lb, log: createLogger('silent') }) as unknown as App;
      const alone = await (await untouched.request(`/submissions/${id}?lang=en`)).text();
      const adminHtml = await (
        await app.request(`/submissions/${id}?lang=en`, { headers: { cookie: adminCookie } })
      ).text();
      expect(withheld.filter((w) => !adminHtml.includes(w))).toEqual([]);
      const html = await (await app.request(`/submissions/${id}?lang=en`)).text();
      expect(withheld.filter((w) => html.includes(w))).toEqual([]);
      expect(drawing(html)).toBe(drawing(alone));
    });

    it('marks every page and answer seen with the admin’s powers private and uncacheable, and public pages not', async () => {
      const id = await uploadClosed('cache-model');
      const PRIVATE = 'private, no-store';
      const head = (r: Response) => [r.status, r.headers.get('cache-control'), r.headers.get('vary')];
      const asAdmin = (path: string) => app.request(path, { headers: { cookie: adminCookie } });
      const bearer = { authorization: `Bearer ${ADMIN}` };
      const privateAnswers: [string, Response][] = [
        ['/admin', await asAdmin('/admin')],
        ['/admin/login', await app.request('/admin/login')],
        ['/admin (signed out)', await app.request('/admin')],
        ['/admin/submissions/:id', await asAdmin(`/admin/submissions/${id}`)],
        ['/admin/campaigns', await asAdmin('/admin/campaigns')],
        ['/annotate/:token', await app.request('/annotate/no-such-invitation-token')],
        ['/api/annotate/:token', await app.request('/api/annotate/no-such-invitation-token')],
        ['/submissions/:id (admin)', await asAdmin(`/submissions/${id}`)],
        ['/ (admin)', await asAdmin('/')],
        ['/board/closed (admin)', await asAdmin('/board/closed')],
        ['/api/boards/closed (admin)', await asAdmin('/api/boards/closed')],
        [
          '/api/admin/submissions/:id/verify',
          await app.request(`/api/admin/submissions/${id}/verify`, { method: 'POST', headers: bearer }),
        ],
      ];
      expect(privateAnswers.map(([path, r]) => [path, ...head(r).slice(1)])).toEqual(
        privateAnswers.map(([path]) => [path, PRIVATE, 'Cookie']),
      );
      const publicAnswers: [string, Response][] = [
        ['/', await app.request('/')],
        ['/board/closed', await app.request('/board/closed')],
        ['/board/closed.csv', await app.request('/board/closed.csv')],
        ['/api/boards/closed', await app.request('/api/boards/closed')],
        ['/submissions/:id', await app.request(`/submissions/${id}`)],
        ['/api/submissions/:id', await app.request(`/api/submissions/${id}`)],
      ];
      expect(
        publicAnswers.map(([path, r]) => [
          path,
          r.status,
          /private/.test(r.headers.get('cache-control') ?? ''),
        ]),
      ).toEqual(publicAnswers.map(([path]) => [path, 200, false]));
    });
  });
});
