/**
 * Every route of the leaderboard, in process (Hono's `app.request()`), on SQLite and on PostgreSQL: uploads scored
 * exactly as `rumedbench eval` scores them, every hostile input refused with a reason, closed tests that leak
 * nothing per item, tokens, quotas, idempotency, CSRF and the admin's actions.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DATA_DIR,
  NO_DATA_REASON,
  PLATFORM_SUBMISSIONS,
  REFERENCE_PREDICTIONS,
} from '../../test/helpers/data.js';
import { ENGINES, freshDatabase } from '../../test/helpers/engines.js';
import { attr, type Element, elements, parseHtml, tableRows, textOf } from '../../test/helpers/html.js';
import { makeZip } from '../../test/helpers/zip.js';
import { loadSplit } from '../data/load.js';
import { createLogger } from '../log.js';
import { evaluateSubmission } from '../scoring/score.js';
import { getTask } from '../tasks/registry.js';
import { createApp } from './app.js';
import { Leaderboard } from './leaderboard.js';
import { openLeaderboard } from './serve.js';
import { DEFAULT_LIMITS } from './upload.js';

const ready =
  DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined && PLATFORM_SUBMISSIONS !== undefined;
const ADMIN = 'k3Y-for-the-test-admin-9x7Q2mZ4pL8w';
const LIMITS = { ...DEFAULT_LIMITS, maxBodyBytes: 2 << 20 };
const ref = (name: string) => join(REFERENCE_PREDICTIONS as string, name);
const files = (dir: string) => readdirSync(dir).map((n) => ({ name: n, data: readFileSync(join(dir, n)) }));

type App = Hono<never>;
type Body = Record<string, unknown>;

function form(
  fileList: { name: string; data: Uint8Array | string }[],
  fields: Record<string, string> = {},
): FormData {
  const fd = new FormData();
  for (const f of fileList) fd.append('file', new Blob([f.data]), f.name);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

const META = { model: 'TF-IDF', kind: 'feature-based' };

/** Synthetic gold for the published private_test ids: a function of the id, so a test can compute any score. */
const syntheticGold = (task: string, id: string): string => {
  const h = createHash('sha256').update(id).digest()[0] as number;
  if (task === 'RuMedDaNet') return h % 2 ? 'да' : 'нет';
  if (task === 'RuMedNLI') return ['entailment', 'contradiction', 'neutral'][h % 3] as string;
  return String((h % 4) + 1);
};

describe.skipIf(!ready)(`leaderboard routes (${ready ? 'data found' : NO_DATA_REASON})`, () => {
  describe.each(ENGINES)('on %s', (engine) => {
    let lb: Leaderboard;
    let app: App;
    const logged: string[] = [];
    const log = createLogger('warn', (l) => logged.push(l));
    const request = (path: string, init?: RequestInit) => app.request(path, init);
    const upload = async (
      fileList: { name: string; data: Uint8Array | string }[],
      fields: Record<string, string> = META,
      headers: Record<string, string> = {},
      on: App = app,
    ) => {
      const res = await on.request('/api/submissions', {
        method: 'POST',
        body: form(fileList, fields),
        headers,
      });
      return { res, body: (await res.json()) as Body };
    };

    beforeAll(async () => {
      lb = await openLeaderboard({
        dataDir: DATA_DIR as string,
        db: await freshDatabase(engine),
        threads: 1,
        anonymousPerMinute: 1000,
        limits: LIMITS,
      });
      await lb.ensureAdminSecret(ADMIN);
      app = createApp({ lb, log }) as unknown as App;
    });
    afterAll(async () => {
      await lb?.close();
    });

    /** A variant of the service on the same database and workers, with other options. */
    const variant = async (options: Partial<Leaderboard['options']>) => {
      const other = new Leaderboard(lb.db, lb.scorer, { ...lb.options, ...options });
      return createApp({ lb: other, log }) as unknown as App;
    };

    it('serves the public board with the paper’s rows, under a strict Content-Security-Policy', async () => {
      const res = await request('/');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const doc = parseHtml(await res.text());
      const rows = elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'reference');
      expect(rows.map((r) => textOf(r).split(' ')[0])).toEqual([
        'RuPoolBERT',
        'Human',
        'RuBERT',
        'Feature-based',
        'BiLSTM',
        'Naive',
      ]);
      expect(elements(doc, (e) => e.tagName === 'script').map((s) => attr(s, 'src'))).toEqual([
        '/static/app.js',
      ]);
      expect((await request('/static/style.css')).headers.get('content-type')).toBe(
        'text/css; charset=utf-8',
      );
    });

    it('scores a full public submission exactly as `rumedbench eval` does', async () => {
      const zip = makeZip(
        files(ref('linear_models')).map((f) => ({ name: `linear/${f.name}`, data: f.data })),
      );
      const { res, body } = await upload([{ name: 'linear.zip', data: zip }]);
      expect(res.status).toBe(201);
      expect(res.headers.get('location')).toBe(`/api/submissions/${body.id}`);
      const expected = await evaluateSubmission(ref('linear_models'), { dataDir: DATA_DIR as string });
      const result = body.result as typeof expected;
      expect([body.status, body.board, body.errors, body.warnings, body.quota]).toEqual([
        'scored',
        'public',
        [],
        [],
        null,
      ]);
      for (const [task, t] of Object.entries(expected.tasks)) {
        expect([task, result.tasks[task]?.metrics, result.tasks[task]?.ci]).toEqual([task, t.metrics, t.ci]);
      }
      expect([body.overall, result.overall_ci]).toEqual([expected.overall, expected.overall_ci]);
      expect((body.overall as number).toFixed(2)).toBe('58.46');

      const board = (await (await request('/api/boards/public')).json()) as {
        entries: { id: string; overall: number }[];
      };
      expect(board.entries.map((e) => [e.id, e.overall])).toEqual([[body.id, expected.overall]]);
      const page = parseHtml(await (await request(`/submissions/${body.id}`)).text());
      const figures = elements(page, (e) => e.tagName === 'figure').map((f) => attr(f, 'id'));
      expect(figures).toEqual([
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
    });

    it('answers a broken file with every problem, exactly as `rumedbench eval` reports them, and keeps it off the board', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-broken-'));
      const lines = readFileSync(join(ref('linear_models'), 'RuMedDaNet.jsonl'), 'utf8')
        .trim()
        .split('\n');
      const broken = [
        '{"pairID": "nope", "answer": "да", "prediction": "да"}',
        '{"pairID": ',
        lines[2]
          ?.replace('"prediction": "нет"', '"prediction": "maybe"')
          .replace('"prediction": "да"', '"prediction": "maybe"'),
        ...lines.slice(3),
      ].join('\n');
      writeFileSync(join(dir, 'RuMedDaNet.jsonl'), broken);
      const expected = await evaluateSubmission(dir, { dataDir: DATA_DIR as string });
      const { res, body } = await upload([{ name: 'RuMedDaNet.jsonl', data: broken }]);
      expect(res.status).toBe(422);
      expect(body.status).toBe('rejected');
      const strip = (issues: unknown) =>
        (issues as { file: string }[]).map(({ file, ...rest }) => ({
          ...rest,
          file: file.replace(/^.*RuMedDaNet/, 'RuMedDaNet'),
        }));
      expect(strip(body.errors)).toEqual(strip(expected.errors));
      expect((body.errors as { code: string }[]).map((e) => e.code).slice(0, 3)).toEqual([
        'UNKNOWN_ID',
        'MALFORMED_JSON',
        'UNKNOWN_LABEL',
      ]);
      const board = (await (await request('/api/boards/public')).json()) as { entries: { id: string }[] };
      expect(board.entries.map((e) => e.id)).not.toContain(body.id);
      expect((await request(`/submissions/${body.id}`)).status).toBe(404);
      expect((await lb.adminList()).map((r) => [r.id, r.status])).toContainEqual([body.id, 'rejected']);
    });

    it('refuses bad metadata, a body that is not multipart, and a body over the cap before parsing it', async () => {
      const one = [{ name: 'RuMedDaNet.jsonl', data: '{}' }];
      const cases: [Record<string, string>, string][] = [
        [{ kind: 'LLM' }, 'model: required'],
        [{ ...META, link: 'javascript:alert(1)' }, 'link: an http:// or https:// URL'],
        [{ ...META, link: 'ftp://example.org/x' }, 'link: an http:// or https:// URL'],
        [{ ...META, kind: 'robot' }, 'kind: one of LLM, encoder, feature-based, baseline, human'],
        [{ ...META, model: 'x'.repeat(201) }, 'model: at most 200 characters'],
      ];
      for (const [fields, problem] of cases) {
        const { res, body } = await upload(one, fields);
        expect([res.status, body.code, body.problems]).toEqual([400, 'INVALID_METADATA', [problem]]);
      }
      const json = await request('/api/submissions', {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect([json.status, ((await json.json()) as Body).code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
      const big = new Uint8Array(LIMITS.maxBodyBytes + 1024).fill(0x20);
      const { res, body } = await upload([{ name: 'RuMedDaNet.jsonl', data: big }]);
      expect([res.status, body.code]).toEqual([413, 'UPLOAD_TOO_LARGE']);
      const { res: empty, body: emptyBody } = await upload([]);
      expect([empty.status, (emptyBody.errors as { code: string }[])[0]?.code]).toEqual([422, 'NO_FILES']);
    });

    it('lands a retried upload once (Idempotency-Key), also when the retries race', async () => {
      const f = [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }];
      const first = await upload(f, META, { 'idempotency-key': 'retry-1' });
      const again = await upload(f, META, { 'idempotency-key': 'retry-1' });
      expect([first.res.status, again.res.status, again.res.headers.get('idempotent-replayed')]).toEqual([
        201,
        200,
        'true',
      ]);
      expect(again.body).toEqual(first.body);
      const raced = await Promise.all([1, 2, 3].map(() => upload(f, META, { 'idempotency-key': 'race-1' })));
      expect(new Set(raced.map((r) => r.body.id)).size).toBe(1);
      const rows = await lb.adminList();
      expect(rows.filter((r) => r.id === first.body.id)).toHaveLength(1);
      expect(rows.filter((r) => r.id === raced[0]?.body.id)).toHaveLength(1);
      // The same predictions again, without a key: a new submission, linked to the first.
      const repeat = await upload(f);
      expect([repeat.res.status, repeat.body.duplicate_of]).toEqual([201, first.body.id]);
    });

    it('takes team tokens, refuses unknown and revoked ones, and can refuse anonymous uploads', async () => {
      const { id, token } = await lb.createToken('Team <b>X</b>');
      const f = [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(ref('naive'), 'RuMedNLI.jsonl')) }];
      const ok = await upload(f, META, { authorization: `Bearer ${token}` });
      expect(ok.res.status).toBe(201);
      expect((await lb.adminList()).find((r) => r.id === ok.body.id)?.team).toBe('Team <b>X</b>');
      const bad = await upload(f, META, { authorization: 'Bearer rmb_not-a-token' });
      expect([bad.res.status, bad.body.code]).toEqual([401, 'BAD_TOKEN']);
      await request('/'); // nothing cached about tokens
      const { revokeToken } = await import('./db/queries.js');
      expect(await revokeToken(lb.db.db, id)).toBe(true);
      const revoked = await upload(f, META, { authorization: `Bearer ${token}` });
      expect([revoked.res.status, revoked.body.error]).toEqual([401, 'unknown or revoked token']);
      const closedShop = await variant({ anonymous: false });
      const anon = await upload(f, META, {}, closedShop);
      expect([anon.res.status, anon.body.code]).toEqual([401, 'TOKEN_REQUIRED']);
    });

    it('rate-limits anonymous uploads per address, and counts a daily quota with the remaining count in every answer', async () => {
      const f = [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedNLI.jsonl')) }];
      const limited = await variant({ anonymousPerMinute: 2 });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await upload(f, META, { 'x-n': String(i) }, limited)).res);
      expect(statuses.map((r) => r.status)).toEqual([201, 201, 429]);
      expect(Number(statuses[2]?.headers.get('retry-after'))).toBeGreaterThan(0);

      const quota = await variant({ quotaPerDay: 2 });
      const { token } = await lb.createToken('quota team');
      const auth = { authorization: `Bearer ${token}` };
      const a = await upload(f, META, auth, quota);
      expect([a.res.status, a.body.quota, a.res.headers.get('x-quota-remaining')]).toEqual([
        201,
        { limit: 2, used: 1, remaining: 1 },
        '1',
      ]);
      const rejected = await upload([{ name: 'RuMedNLI.jsonl', data: '{"pairID": 1}' }], META, auth, quota);
      expect([rejected.res.status, rejected.body.quota]).toEqual([422, { limit: 2, used: 1, remaining: 1 }]);
      const b = await upload(f, META, auth, quota);
      expect([b.res.status, b.body.quota]).toEqual([201, { limit: 2, used: 2, remaining: 0 }]);
      const c = await upload(f, META, auth, quota);
      expect([c.res.status, c.body.code, c.body.quota]).toEqual([
        429,
        'QUOTA_EXCEEDED',
        { limit: 2, used: 2, remaining: 0 },
      ]);
    });

    it('keeps closed tests pending until their gold is imported, then shows aggregates only', async () => {
      const chatgpt = join(PLATFORM_SUBMISSIONS as string, 'chatgpt');
      const { res, body } = await upload(files(chatgpt), { model: 'ChatGPT', kind: 'LLM' });
      expect([res.status, body.status, body.board, body.overall]).toEqual([202, 'pending', 'closed', null]);
      expect((body.warnings as { code: string }[]).map((w) => w.code)).toEqual([
        'NO_GOLD',
        'NO_GOLD',
        'NO_GOLD',
      ]);
      const platform = await upload(
        [
          {
            name: 'naive.zip',
            data: readFileSync(join(PLATFORM_SUBMISSIONS as string, 'naive-sample_submission.zip')),
          },
        ],
        { model: 'naive sample', kind: 'baseline' },
      );
      expect([
        platform.body.status,
        (platform.body.warnings as { code: string }[]).map((w) => w.code),
      ]).toEqual(['pending', ['PLATFORM_ONLY_TASK', 'NO_GOLD', 'NO_GOLD', 'NO_GOLD']]);

      // Gold with problems is refused whole.
      const bad = mkdtempSync(join(tmpdir(), 'rumedbench-gold-bad-'));
      writeFileSync(join(bad, 'RuMedDaNet.jsonl'), '{"pairID": "zzz", "answer": "да"}\n{"pairID": 5}\n');
      await expect(lb.importGold(bad)).rejects.toThrow(
        new RegExp(
          [
            'gold not imported, 3 problem\\(s\\):',
            `  ${bad}/RuMedDaNet.jsonl:1 \\(id zzz\\): not an id of RuMedDaNet's private_test split`,
            `  ${bad}/RuMedDaNet.jsonl:2 \\(id 5\\): not an id of RuMedDaNet's private_test split`,
            `  ${bad}/RuMedDaNet.jsonl: 512 private_test id\\(s\\) without an answer, e.g. `,
          ].join('\n'),
        ),
      );

      const gold = mkdtempSync(join(tmpdir(), 'rumedbench-gold-'));
      const expected: Record<string, number> = {};
      for (const name of ['RuMedDaNet', 'RuMedNLI', 'RuMedTest']) {
        const task = getTask(name);
        const records = await loadSplit(task, 'private_test', { dataDir: DATA_DIR as string });
        writeFileSync(
          join(gold, `${name}.jsonl`),
          records
            .map((r) => JSON.stringify({ [task.idField]: r.id, [task.goldField]: syntheticGold(name, r.id) }))
            .join('\n'),
        );
        const answers = new Map(
          readFileSync(join(chatgpt, `${name}.jsonl`), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, string>)
            .map((v) => [v[task.idField] as string, v[task.goldField] as string]),
        );
        expected[name] =
          (100 * records.filter((r) => answers.get(r.id) === syntheticGold(name, r.id)).length) /
          records.length;
      }
      const imported = await lb.importGold(gold);
      expect(imported.tasks).toEqual({ RuMedDaNet: 512, RuMedNLI: 1536, RuMedTest: 397 });
      const entry = (await (await request(`/api/submissions/${body.id}`)).json()) as {
        tasks: Record<string, { metrics: { accuracy: number } }>;
        overall: number;
      };
      expect(
        Object.fromEntries(Object.entries(entry.tasks).map(([t, v]) => [t, v.metrics.accuracy])),
      ).toEqual(expected);
      const mean = Object.values(expected).reduce((a, b) => a + b, 0) / 3;
      expect(entry.overall).toBeCloseTo(mean, 10);

      // Nothing per item: no breakdown in the stored result, no confusion matrix on the page.
      const { getSubmission } = await import('./db/queries.js');
      const row = await getSubmission(lb.db.db, body.id as string);
      expect(row?.result.includes('breakdown')).toBe(false);
      expect(row?.result.includes('confusion')).toBe(false);
      expect(row?.response.includes('breakdown')).toBe(false);
      const page = parseHtml(await (await request(`/submissions/${body.id}`)).text());
      expect(elements(page, (e) => e.tagName === 'figure').map((f) => attr(f, 'id'))).toEqual([
        'score-rumeddanet',
        'score-rumednli',
        'score-rumedtest',
      ]);
      const closed = (await (await request('/api/boards/closed')).json()) as { entries: { model: string }[] };
      expect(closed.entries.map((e) => e.model).sort()).toEqual(['ChatGPT', 'naive sample']);
      // Compare on the closed board: aggregates side by side, no paired statistics.
      const cmp = await request(`/compare?a=${body.id}&b=${platform.body.id}`);
      expect(cmp.status).toBe(200);
      expect(await cmp.text()).not.toContain('forest');
    });

    it('refuses files that belong on the other board', async () => {
      const f = [{ name: 'RuMedTop3.jsonl', data: readFileSync(join(ref('naive'), 'RuMedTop3.jsonl')) }];
      const { res, body } = await upload(f, { ...META, board: 'closed' });
      expect([
        res.status,
        (body.errors as { code: string; message: string }[]).map((e) => [e.code, e.message]),
      ]).toEqual([
        422,
        [['WRONG_BOARD', 'RuMedTop3 is not on the closed board (RuMedDaNet, RuMedNLI, RuMedTest)']],
      ]);
    });

    it('escapes every user string on the pages and guards the CSV export', async () => {
      const hostile = {
        model: '<script>alert(1)</script>',
        description: '"><img src=x onerror=alert(2)>',
        link: 'https://example.org/"><script>alert(3)</script>',
        kind: 'LLM',
      };
      // A team name comes from its token, so the hostile team is the admin's typo, not an uploader's field.
      const { token } = await lb.createToken('=HYPERLINK("http://evil.example")');
      const auth = { authorization: `Bearer ${token}` };
      const f = [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('naive'), 'RuMedDaNet.jsonl')) }];
      const { body } = await upload(f, hostile, auth);
      // The naive file answers 18 items the split no longer has: rejected, so upload a valid one.
      expect(body.status).toBe('rejected');
      const good = await upload(
        [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }],
        hostile,
        auth,
      );
      expect(good.res.status).toBe(201);
      for (const path of [`/submissions/${good.body.id}`, '/']) {
        const doc = parseHtml(await (await request(path)).text());
        expect(elements(doc, (e) => e.tagName === 'script').map((s) => attr(s, 'src'))).toEqual([
          '/static/app.js',
        ]);
        expect(elements(doc, (e) => e.tagName === 'img')).toEqual([]);
        expect(textOf(doc)).toContain('<script>alert(1)</script>');
      }
      const doc = parseHtml(await (await request(`/submissions/${good.body.id}`)).text());
      expect(
        elements(doc, (e) => e.tagName === 'a' && textOf(e) === hostile.link).map((a) => attr(a, 'href')),
      ).toEqual([hostile.link]);
      const csv = await (await request('/board/public.csv')).text();
      expect(csv).toContain(`"'=HYPERLINK(""http://evil.example"")"`);
      expect(csv.split('\r\n')[0]).toBe(
        'rank,id,model,team,kind,params,open_weights,verified,submitted,RuMedTop3.accuracy,RuMedTop3.hit_at_3,RuMedSymptomRec.accuracy,RuMedSymptomRec.hit_at_3,RuMedDaNet.accuracy,RuMedNLI.accuracy,RuMedNER.accuracy,RuMedNER.f1,RuMedTop3.score,RuMedSymptomRec.score,RuMedDaNet.score,RuMedNLI.score,RuMedNER.score,overall',
      );
    });

    it('compares two public submissions with paired statistics', async () => {
      const a = await upload(files(ref('linear_models')), { model: 'A', kind: 'feature-based' });
      const b = await upload(files(ref('bilstm')), { model: 'B', kind: 'encoder' });
      const res = await request(`/compare?a=${a.body.id}&b=${b.body.id}`);
      expect(res.status).toBe(200);
      const doc = parseHtml(await res.text());
      const table = elements(doc, (e) => e.tagName === 'table')[0] as Element;
      expect(tableRows(table).at(-1)).toEqual([
        'Overall',
        'score',
        '58.46',
        '53.87',
        '-4.58',
        '[-6.58, -2.47]',
        '<0.001',
      ]);
      expect(elements(doc, (e) => e.tagName === 'figure').map((f) => attr(f, 'id'))).toEqual(['forest']);
      const across = await request(`/compare?a=${a.body.id}&b=${(await lb.board('closed'))[0]?.id}`);
      expect(across.status).toBe(400);
    });

    it('lets only the signed-in admin hide, flag, verify, edit and delete, with CSRF tokens, and logs it all', async () => {
      const { body } = await upload(files(ref('bilstm')), { model: 'to moderate', kind: 'encoder' });
      const id = body.id as string;
      expect((await request('/admin')).status).toBe(303);
      // The sign-in form carries a CSRF token bound to the browser's cookie.
      const loginPage = await request('/admin/login');
      const cookie = (loginPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      let csrf = attr(
        elements(
          parseHtml(await loginPage.text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;
      const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
        request(path, { method: 'POST', body: new URLSearchParams(fields), headers: { cookie, ...headers } });
      expect((await post('/admin/login', { _csrf: csrf, token: 'wrong' })).status).toBe(403);
      expect((await post('/admin/login', { token: ADMIN })).status).toBe(403); // no CSRF token
      const signedIn = await post('/admin/login', { _csrf: csrf, token: ADMIN });
      expect(signedIn.status).toBe(303);
      const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect(session.startsWith('rmb_admin=')).toBe(true);
      const asAdmin = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
        post(path, fields, { cookie: `${cookie}; ${session}`, ...headers });
      // The sign-in page's token dies with the anonymous state: forms now carry one bound to the session.
      expect((await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(403);
      csrf = attr(
        elements(
          parseHtml(await (await request('/admin', { headers: { cookie: `${cookie}; ${session}` } })).text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;

      expect((await asAdmin(`/admin/submissions/${id}/hide`, {})).status).toBe(403);
      expect(
        (await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf }, { origin: 'http://evil.example' }))
          .status,
      ).toBe(403);
      expect((await post(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(401); // not signed in
      expect((await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(303);
      const board = (await (await request('/api/boards/public')).json()) as { entries: { id: string }[] };
      expect(board.entries.map((e) => e.id)).not.toContain(id);
      expect((await request(`/submissions/${id}`)).status).toBe(404);
      expect((await request(`/submissions/${id}`, { headers: { cookie: session } })).status).toBe(200);
      for (const action of ['unhide', 'flag', 'verify']) {
        expect((await asAdmin(`/admin/submissions/${id}/${action}`, { _csrf: csrf })).status).toBe(303);
      }
      const edited = await asAdmin(`/admin/submissions/${id}/edit`, {
        _csrf: csrf,
        model: 'BiLSTM (edited)',
        kind: 'encoder',
        link: 'https://example.org/paper',
      });
      expect(edited.status).toBe(303);
      const entry = (await (await request(`/api/submissions/${id}`)).json()) as Body;
      expect([entry.model, entry.flagged, entry.verified, entry.link]).toEqual([
        'BiLSTM (edited)',
        true,
        true,
        'https://example.org/paper',
      ]);
      const adminPage = await (await request('/admin', { headers: { cookie: session } })).text();
      expect(adminPage).toContain('BiLSTM (edited)');
      const api = await request(`/api/admin/submissions/${id}/delete`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(api.status).toBe(200);
      expect((await request(`/api/submissions/${id}`)).status).toBe(404);
      const { listAudit } = await import('./db/queries.js');
      const actions = (await listAudit(lb.db.db)).filter((a) => a.submission_id === id).map((a) => a.action);
      expect(actions.reverse()).toEqual(['upload', 'hide', 'unhide', 'flag', 'verify', 'edit', 'delete']);
      expect((await request(`/api/admin/submissions/${id}/hide`, { method: 'POST' })).status).toBe(401);
    });

    it('refuses a weak admin secret', async () => {
      for (const weak of ['admin', 'changeme-changeme-changeme', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa']) {
        await expect(lb.ensureAdminSecret(weak)).rejects.toThrow(/the admin secret is refused/);
      }
    });

    it('answers unknown paths and ids with 404, and a crash with a generic 500 that is logged', async () => {
      expect((await request("/api/submissions/'%20OR%201=1--")).status).toBe(404);
      const nf = await request('/api/nothing');
      expect([nf.status, await nf.json()]).toEqual([404, { error: 'not found', code: 'NOT_FOUND' }]);
      expect((await request('/board/secret')).status).toBe(404);
      const { openDatabase } = await import('./db/connect.js');
      const gone = await openDatabase(await freshDatabase(engine));
      await gone.close();
      const broken = createApp({
        lb: new Leaderboard(gone, lb.scorer, lb.options),
        log,
      }) as unknown as App;
      const crash = await broken.request('/api/boards/public');
      expect([crash.status, await crash.json()]).toEqual([
        500,
        { error: 'internal error', code: 'INTERNAL' },
      ]);
      const page = await broken.request('/');
      expect(page.status).toBe(500);
      expect(await page.text()).not.toMatch(/destroy|Kysely|driver/i);
      expect(logged.some((l) => l.startsWith('error: GET /api/boards/public:'))).toBe(true);
    });
  });
});
