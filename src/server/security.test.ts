/**
 * The leaderboard against an attacker (issue #19), in process on SQLite and PostgreSQL: each finding of the audit
 * has a test here that failed before its fix. Closed tests: no gold in any answer, no score from a file's own answer
 * fields, complete files only. Then bodies capped before they are read, part floods stopped while streaming,
 * rejected uploads that stay small, no posing as a team or as the human row, no hidden ids through `duplicate_of`,
 * admin sessions that end, and the smaller hardening (CSV, Host, sign-in throttle, `__proto__`, compare).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../test/helpers/fixture-data.js';
import { attr, type Element, elements, parseHtml, textOf } from '../../test/helpers/html.js';
import { makeZip } from '../../test/helpers/zip.js';
import { loadSplit } from '../data/load.js';
import { createLogger } from '../log.js';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { createApp } from './app.js';
import { csvCell } from './boards/present.js';
import { Boards } from './boards/service.js';
import { Leaderboard } from './leaderboard.js';
import { openLeaderboard } from './serve.js';
import { DEFAULT_LIMITS } from './upload.js';

/** The suite's data: the fixture folder the tests write (60 items a split), not ../shared. */
const DATA = fixtureDataDir();
/** Two systems' public-test predictions, right on every 2nd and every 3rd item. */
const PREDICTIONS: Record<'a' | 'b', string> = {
  a: writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-sec-a-')), 2),
  b: writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-sec-b-')), 3),
};
const lineCount = (file: string) => readFileSync(file, 'utf8').trim().split('\n').length;
/** Items of RuMedDaNet's public test split. */
const TEST_N = lineCount(join(DATA, 'RuMedDaNet', 'test_v1.jsonl'));
const ADMIN = 'sEc-test-admin-secret-7Hq2Lz9Kp4Wm';
type App = Hono<never>;
type Body = Record<string, unknown>;

const gold = (task: string, id: string): string => {
  const h = createHash('sha256').update(`gold:${id}`).digest()[0] as number;
  if (task === 'RuMedDaNet') return h % 2 ? 'да' : 'нет';
  if (task === 'RuMedNLI') return ['entailment', 'contradiction', 'neutral'][h % 3] as string;
  return String((h % 4) + 1);
};

function form(
  fileList: { name: string; data: Uint8Array | string }[],
  fields: Record<string, string>,
): FormData {
  const fd = new FormData();
  for (const f of fileList) fd.append('file', new Blob([f.data]), f.name);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

/** A request body that counts how many chunks the server pulled from it. */
function countingBody(
  chunks: number,
  chunk: Uint8Array,
): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled >= chunks) return controller.close();
        pulled++;
        controller.enqueue(chunk);
      },
    },
    { highWaterMark: 0 },
  );
  return { body, pulled: () => pulled };
}

const csrfOf = (html: string): string =>
  attr(
    elements(parseHtml(html), (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf')[0] as Element,
    'value',
  ) as string;

describe('leaderboard security (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    let lb: Leaderboard;
    let app: App;
    /** The boards' clock of `lb`, moved past their cache where a test reads what another instance changed. */
    let now = Date.now();
    const records: Record<string, TaskRecord[]> = {};
    const upload = async (
      files: { name: string; data: Uint8Array | string }[],
      fields: Record<string, string> = { model: 'm', kind: 'LLM' },
      headers: Record<string, string> = {},
      on: App = app,
    ) => {
      const res = await on.request('/api/submissions', {
        method: 'POST',
        body: form(files, fields),
        headers,
      });
      return { res, body: (await res.json()) as Body };
    };
    /** A RuMedDaNet private_test file: `answer` fields that "probe" the gold, and predictions. */
    const danet = (lines: (r: TaskRecord) => Record<string, unknown> | undefined) => ({
      name: 'RuMedDaNet.jsonl',
      data: (records.RuMedDaNet ?? [])
        .map(lines)
        .filter((l) => l !== undefined)
        .map((l) => JSON.stringify(l))
        .join('\n'),
    });
    const variant = (
      options: Partial<Leaderboard['options']>,
      extra: Partial<Parameters<typeof createApp>[0]> = {},
    ) =>
      createApp({
        lb: new Leaderboard(lb.db, lb.scorer, { ...lb.options, ...options }),
        log: createLogger('silent'),
        ...extra,
      }) as unknown as App;

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
        limits: { ...DEFAULT_LIMITS, maxBodyBytes: 16 << 20 },
        clock: () => now,
      });
      await lb.admin.ensureAdminSecret(ADMIN);
      app = createApp({ lb, log: createLogger('silent') }) as unknown as App;
      for (const name of ['RuMedDaNet', 'RuMedNLI', 'RuMedTest']) {
        records[name] = await loadSplit(getTask(name), 'private_test', { dataDir: DATA });
      }
    });
    afterAll(async () => {
      await lb?.close();
    });

    const importGold = async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-sec-gold-'));
      for (const [name, recs] of Object.entries(records)) {
        const task = getTask(name);
        writeFileSync(
          join(dir, `${name}.jsonl`),
          recs
            .map((r) => JSON.stringify({ [task.idField]: r.id, [task.goldField]: gold(name, r.id) }))
            .join('\n'),
        );
      }
      await lb.gold.importGold(dir);
    };

    it('scores a closed test never on the answers a file carries, and keeps it pending until the gold is in (finding 2)', async () => {
      // Before the gold: the file's own `answer` fields agree with its predictions, which used to score 100.
      const forged = danet((r) => ({ pairID: r.id, prediction: 'да', answer: 'да' }));
      const { res, body } = await upload([forged], { model: 'forged', kind: 'LLM', board: 'closed' });
      expect([res.status, body.status, body.overall]).toEqual([202, 'pending', null]);
      const warnings = (body.warnings as { code: string; message: string; task?: string }[]).filter(
        (w) => w.task === 'RuMedDaNet',
      );
      expect(warnings.map((w) => [w.code, w.message])).toEqual([
        [
          'FILE_GOLD_IGNORED',
          `the "answer" field of ${records.RuMedDaNet?.length} line(s) was ignored: a closed test is scored only against the gold its organisers hold`,
        ],
        [
          'NO_GOLD',
          'no gold labels in the private_test split of RuMedDaNet (closed test): validated, not scored',
        ],
      ]);
      expect(body.result).not.toHaveProperty('tasks.RuMedDaNet');
      const closed = (await (await app.request('/api/boards/closed')).json()) as { entries: unknown[] };
      expect(closed.entries).toEqual([]);
    });

    it('never shows the hidden gold in an answer, whatever the file says it is (finding 1)', async () => {
      await importGold();
      // The attack: "answer": "да" on every line; a mismatch used to be answered with `expected "нет"` per item.
      const probe = danet((r) => ({ pairID: r.id, prediction: 'да', answer: 'да' }));
      const { res, body } = await upload([probe], { model: 'probe', kind: 'LLM', board: 'closed' });
      const text = JSON.stringify(body);
      expect([res.status, body.status]).toEqual([201, 'scored']);
      expect(text).not.toContain('GOLD_MISMATCH');
      expect(text).not.toContain('нет');
      // Scored against the imported gold, not against the file's: the share of "да" in our synthetic gold.
      const yes = (records.RuMedDaNet ?? []).filter((r) => gold('RuMedDaNet', r.id) === 'да').length;
      // One closed task of three: scored against the imported gold (the admin sees it), but no score on hidden gold
      // is released for it (issue #42: it would be that task's exact score, on a ladder of its own).
      const n = records.RuMedDaNet?.length ?? 0;
      expect([body.overall, body.ladder]).toEqual([null, undefined]);
      expect(body.result).toHaveProperty('tasks', {});
      expect((body.warnings as { code: string }[]).map((w) => w.code)).toContain('CLOSED_INCOMPLETE');
      const exact = await lb.boards.entry(body.id as string, { admin: true });
      expect(exact.tasks.RuMedDaNet?.score).toBeCloseTo((100 * yes) / n, 10);
      expect([yes > 0, yes < n]).toEqual([true, true]);
      // Invalid gold fields are not checked either: no message depends on the hidden answers.
      const junk = danet((r) => ({ pairID: r.id, prediction: 'нет', answer: 42 }));
      const again = await upload([junk], { model: 'junk', kind: 'LLM', board: 'closed' });
      expect([again.res.status, (again.body.errors as unknown[]).length]).toEqual([201, 0]);
    });

    it('scores a closed test only when every item is answered, with one error that counts the rest (finding 7)', async () => {
      const [first] = records.RuMedDaNet ?? [];
      const n = records.RuMedDaNet?.length ?? 0;
      const oneAnswered = danet((r) => ({ pairID: r.id, answer: r.id === first?.id ? 'да' : null }));
      const { res, body } = await upload([oneAnswered], { model: 'oracle', kind: 'LLM', board: 'closed' });
      expect([res.status, body.status]).toEqual([422, 'rejected']);
      expect((body.errors as { code: string; message: string }[]).map((e) => [e.code, e.message])).toEqual([
        [
          'UNANSWERED_ITEMS',
          `${n - 1} of ${n} items have no answer (0 missing, ${n - 1} null): a closed test is scored only when every item is answered`,
        ],
      ]);
      const oneLine = danet((r) => (r.id === first?.id ? { pairID: r.id, answer: 'да' } : undefined));
      const partial = await upload([oneLine], { model: 'oracle', kind: 'LLM', board: 'closed' });
      const codes = (partial.body.errors as { code: string }[]).map((e) => e.code);
      expect([partial.res.status, codes.at(-1), codes.filter((c) => c === 'MISSING_ITEM').length]).toEqual([
        422,
        'UNANSWERED_ITEMS',
        20, // the first 20 of n - 1, the rest counted
      ]);
      expect(partial.body.omitted).toEqual({ MISSING_ITEM: n - 1 - 20 });
    });

    it('caps every body before reading it, at the size its route needs (finding 3)', async () => {
      const big = `token=${'x'.repeat(1 << 20)}`;
      const login = await app.request('/admin/login', {
        method: 'POST',
        body: big,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(login.status).toBe(413);
      // Without a Content-Length (chunked), the count stops the stream at the cap.
      const chunked = countingBody(1000, new Uint8Array(64 << 10).fill(65));
      const annotate = await app.request('/api/annotate/rmb_nobody/answers', {
        // undici needs `duplex` for a stream body
        method: 'POST',
        body: chunked.body,
        headers: { 'content-type': 'application/json' },
        duplex: 'half',
      });
      expect([annotate.status, ((await annotate.json()) as Body).code]).toEqual([413, 'BODY_TOO_LARGE']);
      expect(chunked.pulled()).toBeLessThan(5);
      // Within the cap, a link that is no invitation is refused before its body is parsed (this one is not JSON).
      const stranger = await app.request('/api/annotate/rmb_nobody/answers', {
        method: 'POST',
        body: '{"item_id": ',
        headers: { 'content-type': 'application/json' },
      });
      expect([stranger.status, ((await stranger.json()) as Body).code]).toEqual([401, 'BAD_TOKEN']);
    });

    it('refuses a flood of multipart parts while streaming, and refuses before reading when it can (finding 4)', async () => {
      const boundary = 'xyz';
      const part = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename=""\r\n\r\n\r\n`;
      const flood = `${part.repeat(150_000)}--${boundary}--\r\n`;
      const t0 = performance.now();
      const res = await app.request('/api/submissions', {
        method: 'POST',
        body: flood,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      const ms = performance.now() - t0;
      expect([res.status, ((await res.json()) as Body).code]).toEqual([413, 'TOO_MANY_PARTS']);
      expect(ms).toBeLessThan(2000); // a sanity bound, not a benchmark: it used to block for seconds

      // No token where one is needed, or no CSRF token on the browser form: answered before a byte is read.
      const closedDoor = variant({ anonymous: false });
      const stream = countingBody(100, new TextEncoder().encode(part));
      const refused = await closedDoor.request('/api/submissions', {
        method: 'POST',
        body: stream.body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        duplex: 'half',
      });
      expect([refused.status, stream.pulled()]).toEqual([401, 0]);
      // The browser form's token is its body's first part: a body that starts otherwise is refused there.
      const noCsrf = countingBody(100, new TextEncoder().encode(part));
      const page = await app.request('/submit', {
        method: 'POST',
        body: noCsrf.body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        duplex: 'half',
      });
      expect(page.status).toBe(403);
      expect(noCsrf.pulled()).toBeLessThan(4);
    });

    it("takes the upload form's CSRF token from the body's first part, and a forged post reserves no quota (issue #63)", async () => {
      // One upload a day from this address: a forged post that took a unit would leave the real one none.
      const once = variant({ quotaPerDay: 1 }, { trustedProxies: 1 });
      const from = { 'x-forwarded-for': '198.51.100.63' };
      const formPage = await once.request('/submit?lang=ru');
      const cookie = (formPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const html = await formPage.text();
      const csrf = csrfOf(html);
      // The page's form sends the token in its body, first, and never in its address.
      const uploadForm = elements(
        parseHtml(html),
        (e) => e.tagName === 'form' && attr(e, 'class') === 'upload',
      )[0];
      const firstInput = uploadForm && elements(uploadForm, (e) => e.tagName === 'input')[0];
      expect([attr(uploadForm as Element, 'action'), firstInput && attr(firstInput, 'name')]).toEqual([
        '/submit?lang=ru',
        '_csrf',
      ]);
      const file = { name: 'RuMedDaNet.jsonl', data: readFileSync(join(PREDICTIONS.a, 'RuMedDaNet.jsonl')) };
      const post = async (parts: [string, string | typeof file][], query = '') => {
        const fd = new FormData();
        for (const [name, v] of parts)
          typeof v === 'string' ? fd.append(name, v) : fd.append(name, new Blob([v.data]), v.name);
        const res = await once.request(`/submit?lang=ru${query}`, {
          method: 'POST',
          body: fd,
          headers: { cookie, ...from },
        });
        // An error page says its message in the paragraph under its heading.
        const h1 = elements(parseHtml(await res.text()), (e) => e.tagName === 'h1')[0];
        const p = h1 && elements(h1.parentNode as Element, (e) => e.tagName === 'p')[0];
        return [res.status, res.status >= 400 && p ? textOf(p) : ''];
      };
      const meta: [string, string][] = [
        ['model', 'forged'],
        ['kind', 'LLM'],
      ];
      const forged = [
        await post([['file', file], ...meta]), // no token (a cross-site form, its Origin withheld)
        await post([['_csrf', 'forged-token'], ['file', file], ...meta]), // a wrong token
        await post([['file', file], ['_csrf', csrf], ...meta]), // the right token after the file
        await post([['file', file], ...meta], `&_csrf=${encodeURIComponent(csrf)}`), // the old address form
      ];
      const stale =
        'Форма устарела (страница была открыта слишком давно или в другой вкладке); откройте её заново.';
      expect(forged).toEqual(Array(4).fill([403, stale]));
      // The quota is whole: the real form's post lands, and the next one finds the day's unit used.
      const real = [['_csrf', csrf], ['file', file], ...meta] as [string, string | typeof file][];
      expect(await post(real)).toEqual([303, '']);
      expect(await post(real)).toEqual([429, 'Дневной лимит загрузок исчерпан; попробуйте завтра.']);
    });

    it('keeps a rejected upload small in the answer and the database, and rate-limits token uploads too (finding 5)', async () => {
      const longId = 'я'.repeat(100_000); // 200 KB of UTF-8 per id
      const lines = Array.from({ length: 75 }, (_, i) =>
        JSON.stringify({ pairID: `${longId}${i}`, answer: 'да' }),
      );
      const file = { name: 'RuMedDaNet.jsonl', data: lines.join('\n') };
      expect(Buffer.byteLength(file.data)).toBeGreaterThan(14 << 20);
      const { res, body } = await upload([file], { model: 'long ids', kind: 'LLM', board: 'public' });
      const answered = Buffer.byteLength(JSON.stringify(body));
      expect([res.status, body.status]).toEqual([422, 'rejected']);
      expect(answered).toBeLessThan(64 << 10);
      expect(body.omitted).toEqual({ UNKNOWN_ID: 75 - 20, MISSING_ITEM: TEST_N - 20 });
      const { getSubmission } = await import('./db/shared.js');
      const row = await getSubmission(lb.db.db, body.id as string);
      expect(Buffer.byteLength(row?.result ?? '') + Buffer.byteLength(row?.response ?? '')).toBeLessThan(
        128 << 10,
      );

      const { token } = await lb.admin.createToken('rate team');
      const limited = variant({ tokenPerMinute: 2 });
      const auth = { authorization: `Bearer ${token}` };
      const small = [{ name: 'RuMedDaNet.jsonl', data: '{"pairID": "nope", "answer": "да"}' }];
      const codes = [];
      for (let i = 0; i < 3; i++)
        codes.push((await upload(small, { model: 'r', kind: 'LLM' }, auth, limited)).res.status);
      expect(codes).toEqual([422, 422, 429]);
      // A retry of an upload that landed is answered as the first time, not counted against the rate.
      const once = variant({ tokenPerMinute: 1 });
      const key = { ...auth, 'idempotency-key': 'retry-1' };
      const first = await upload(small, { model: 'r', kind: 'LLM' }, key, once);
      const retry = await upload(small, { model: 'r', kind: 'LLM' }, key, once);
      expect([
        first.res.status,
        retry.res.status,
        retry.res.headers.get('idempotent-replayed'),
        retry.body.id,
      ]).toEqual([422, 200, 'true', first.body.id]);

      // The browser's form says how many problems it left out.
      const formPage = await app.request('/submit');
      const cookie = (formPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const csrf = csrfOf(await formPage.text());
      const fields = form([file], { model: 'long ids', kind: 'LLM', board: 'public' });
      const withToken = new FormData();
      withToken.append('_csrf', csrf);
      for (const [k, v] of fields) withToken.append(k, v);
      const page = await app.request('/submit', {
        method: 'POST',
        body: withToken,
        headers: { cookie },
      });
      const omitted = elements(parseHtml(await page.text()), (e) => attr(e, 'id') === 'upload-omitted')[0];
      expect([page.status, omitted ? textOf(omitted) : '']).toEqual([
        422,
        `… and ${75 - 20} more UNKNOWN_ID… and ${TEST_N - 20} more MISSING_ITEM`,
      ]);
    });

    it('takes a team only from a token, and the human kind from nobody (finding 6)', async () => {
      const f = [
        {
          name: 'RuMedDaNet.jsonl',
          data: readFileSync(join(PREDICTIONS.a, 'RuMedDaNet.jsonl')),
        },
      ];
      const posing = await upload(f, { model: 'm', kind: 'LLM', team: 'SAI' });
      expect([posing.res.status, posing.body.problems]).toEqual([
        400,
        ['team: a team name comes from a team token; anonymous uploads are shown as anonymous'],
      ]);
      const { token } = await lb.admin.createToken('Real Team');
      const human = await upload(f, { model: 'Human', kind: 'human' }, { authorization: `Bearer ${token}` });
      expect([human.res.status, human.body.problems]).toEqual([
        400,
        ['kind: "human" rows come only from the platform\'s evaluation campaigns'],
      ]);
      const real = await upload(
        f,
        { model: 'm', kind: 'LLM', team: 'Other' },
        { authorization: `Bearer ${token}` },
      );
      const entry = (await (await app.request(`/api/submissions/${real.body.id}`)).json()) as Body;
      expect([real.res.status, entry.team]).toEqual([201, 'Real Team']);
    });

    it('links a repeat only to a visible entry of the same uploader (finding 8)', async () => {
      const f = [
        {
          name: 'RuMedNLI.jsonl',
          data: readFileSync(join(PREDICTIONS.a, 'RuMedNLI.jsonl')),
        },
      ];
      const { token: a } = await lb.admin.createToken('A');
      const { token: b } = await lb.admin.createToken('B');
      const first = await upload(f, { model: 'first', kind: 'LLM' }, { authorization: `Bearer ${a}` });
      const mine = await upload(f, { model: 'again', kind: 'LLM' }, { authorization: `Bearer ${a}` });
      const theirs = await upload(f, { model: 'copy', kind: 'LLM' }, { authorization: `Bearer ${b}` });
      expect([mine.body.duplicate_of, theirs.body.duplicate_of]).toEqual([first.body.id, null]);
      await lb.admin.adminAction(first.body.id as string, 'hide');
      const later = await upload(f, { model: 'later', kind: 'LLM' }, { authorization: `Bearer ${a}` });
      expect(later.body.duplicate_of).toBe(mine.body.id);
      // The stored link to the now hidden entry shows nowhere.
      const page = (await (await app.request(`/api/submissions/${mine.body.id}`)).json()) as Body;
      const board = (await (await app.request('/api/boards/public')).json()) as { entries: Body[] };
      expect(page.duplicate_of).toBeNull();
      expect(JSON.stringify(board)).not.toContain(first.body.id as string);
    });

    it('ends admin sessions at sign-out, keeps no signing key in the database, binds CSRF tokens to the session, and throttles failed sign-ins (finding 9)', async () => {
      const loginPage = await app.request('/admin/login');
      const nonce = (loginPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const post = (path: string, fields: Record<string, string>, cookie: string) =>
        app.request(path, { method: 'POST', body: new URLSearchParams(fields), headers: { cookie } });
      const signed = await post(
        '/admin/login',
        { _csrf: csrfOf(await loginPage.text()), token: ADMIN },
        nonce,
      );
      expect(signed.status).toBe(303);
      const cookie = `${nonce}; ${(signed.headers.get('set-cookie') ?? '').split(';')[0]}`;
      const adminPage = await app.request('/admin', { headers: { cookie } });
      expect(adminPage.status).toBe(200);
      const csrf = csrfOf(await adminPage.text());
      const { getSetting } = await import('./db/shared.js');
      expect(await getSetting(lb.db.db, 'session_key')).toBeUndefined();
      expect((await post('/admin/logout', { _csrf: csrf }, cookie)).status).toBe(303);
      // The old cookie opens nothing, and its CSRF token is dead with it.
      expect((await app.request('/admin', { headers: { cookie } })).status).toBe(303);
      expect((await post('/admin/submissions/x/hide', { _csrf: csrf }, cookie)).status).toBe(401);

      // The lockout is counted in the database (every process on it): the failures come from an address of their
      // own, so that the rest of the suite, signed in from this process's, is not locked out with it.
      const door = variant({}, { trustedProxies: 1 });
      const page = await door.request('/admin/login');
      const c2 = (page.headers.get('set-cookie') ?? '').split(';')[0] as string;
      const t2 = csrfOf(await page.text());
      const tries = [];
      for (let i = 0; i < 6; i++)
        tries.push(
          (
            await door.request('/admin/login', {
              method: 'POST',
              body: new URLSearchParams({ _csrf: t2, token: `wrong-${i}` }),
              headers: { cookie: c2, 'x-forwarded-for': '198.51.100.77' },
            })
          ).status,
        );
      expect(tries).toEqual([403, 403, 403, 403, 403, 429]);
    });

    it('answers malformed JSON to the admin API with 400, not 500 (finding 10)', async () => {
      const res = await app.request('/api/admin/submissions/x/edit', {
        method: 'POST',
        body: '{"model": ',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      });
      expect([res.status, ((await res.json()) as Body).code]).toEqual([400, 'BAD_JSON']);
    });

    it('checks the Host header, the Origin against the public origin, field names, and the cost of /compare', async () => {
      // One handler serves the static files; a name it does not have is the site's usual 404.
      expect((await app.request('/static/style.css')).headers.get('content-type')).toBe(
        'text/css; charset=utf-8',
      );
      const nope = await app.request('/static/__proto__');
      expect([nope.status, (await nope.text()).includes('<!DOCTYPE html>')]).toEqual([404, true]);
      const pinned = variant(
        {},
        { allowedHosts: ['board.example.org'], publicOrigin: 'https://board.example.org' },
      );
      expect((await pinned.request('http://rebound.example/')).status).toBe(421);
      const okHost = await pinned.request('http://board.example.org/');
      expect(okHost.status).toBe(200);
      const crossSite = await pinned.request('http://board.example.org/admin/login', {
        method: 'POST',
        body: new URLSearchParams({ token: 'x' }),
        headers: { origin: 'http://board.example.org' }, // the Host's origin, not the public https one
      });
      expect(crossSite.status).toBe(403);

      // JSON.parse makes `__proto__` an own key (an object literal would set the prototype instead).
      const protoFields = JSON.parse('{"model": "m", "kind": "LLM", "__proto__": "x"}') as Record<
        string,
        string
      >;
      const proto = await upload([{ name: 'RuMedDaNet.jsonl', data: '{}' }], protoFields);
      // FormData keeps `__proto__` as a field name, which the server refuses by name.
      expect([proto.res.status, proto.body.error]).toEqual([
        400,
        'unknown field "__proto__"; an upload takes model, team, description, link, kind, params, open_weights, board, trust, usage and `file`',
      ]);

      const f = (n: 'a' | 'b') => [
        { name: 'RuMedNLI.jsonl', data: readFileSync(join(PREDICTIONS[n], 'RuMedNLI.jsonl')) },
      ];
      const a = await upload(f('a'), { model: 'a', kind: 'LLM' });
      const b = await upload(f('b'), { model: 'b', kind: 'LLM' });
      const cmp = variant({});
      const statuses = [];
      for (let i = 0; i < 32; i++)
        statuses.push((await cmp.request(`/compare?a=${a.body.id}&b=${b.body.id}`)).status);
      // Computed once, then served from the cache: the rate limit counts only new comparisons.
      expect(statuses.every((s) => s === 200)).toBe(true);
    });

    describe('second round (issue #31)', () => {
      const tokenOf = async (team: string) => ({
        authorization: `Bearer ${(await lb.admin.createToken(team)).token}`,
      });
      /** A RuMedDaNet private_test file answering every item: `flip` names the item answered the other way. */
      const allYes = (flip?: string) =>
        danet((r) => ({ pairID: r.id, answer: r.id === flip ? 'нет' : 'да' }));
      /** All three closed tests (a ladder climbs on them together); `flip` as allYes, `nli` every NLI item. */
      const full = (flip?: string, nli = 'neutral', first = allYes(flip)) => [
        first,
        {
          name: 'RuMedNLI.jsonl',
          data: (records.RuMedNLI ?? [])
            .map((r) => JSON.stringify({ pairID: r.id, gold_label: nli }))
            .join('\n'),
        },
        {
          name: 'RuMedTest.jsonl',
          data: (records.RuMedTest ?? []).map((r) => JSON.stringify({ idx: r.id, answer: '1' })).join('\n'),
        },
      ];

      it('takes no anonymous upload on hidden gold unless --closed-anonymous: each address would be a ladder of its own (issue #42)', async () => {
        await importGold();
        const strict = variant({ closedAnonymous: false, closedQuotaPerDay: 1 });
        for (const board of ['closed', 'auto']) {
          const anonymous = await upload(full(), { model: 'anon', kind: 'LLM', board }, {}, strict);
          expect([anonymous.res.status, anonymous.body.code], board).toEqual([401, 'TOKEN_REQUIRED']);
          expect(Object.keys(anonymous.body).sort()).toEqual(['code', 'error']);
        }
        // No quota was taken by the refusals: a team's token still has its one upload.
        const team = await upload(
          full(),
          { model: 'team', kind: 'LLM', board: 'closed' },
          await tokenOf('anon team'),
          strict,
        );
        expect([team.res.status, (team.body.ladder as { improved: boolean }).improved]).toEqual([201, true]);
      });

      it('counts the closed quota per team, whatever number of tokens the team holds (issue #42, red team)', async () => {
        await importGold();
        const strict = variant({ closedQuotaPerDay: 2 });
        const [a, b] = [await tokenOf('one team'), await tokenOf('one team')];
        const meta = { model: 'q', kind: 'LLM', board: 'closed' };
        expect((await upload(full(), meta, a, strict)).res.status).toBe(201);
        const second = await upload(full('x'), meta, b, strict);
        expect([second.res.status, second.body.closed_quota]).toEqual([
          201,
          { limit: 2, used: 2, remaining: 0 },
        ]);
        const third = await upload(full(), meta, b, strict);
        expect([third.res.status, third.body.code]).toEqual([429, 'QUOTA_EXCEEDED']);
        expect((await upload(full(), meta, a, strict)).res.status).toBe(429);
        // Another team has its own.
        expect((await upload(full(), meta, await tokenOf('other team'), strict)).res.status).toBe(201);
      });

      it('answers a rejected closed upload with no score, and counts it against the closed quota', async () => {
        const strict = variant({ closedQuotaPerDay: 2 });
        const auth = await tokenOf('rejected team');
        const broken = { name: 'RuMedNLI.jsonl', data: '{"pairID": oops' };
        const first = await upload(
          [allYes(), broken],
          { model: 'r', kind: 'LLM', board: 'closed' },
          auth,
          strict,
        );
        expect([first.res.status, first.body.status, first.body.overall]).toEqual([422, 'rejected', null]);
        // No task's score or interval, though RuMedDaNet alone was valid.
        expect((first.body.result as { tasks: object }).tasks).toEqual({});
        expect(JSON.stringify(first.body)).not.toMatch(/"score"|"accuracy"/);
        expect(first.body.closed_quota).toEqual({ limit: 2, used: 1, remaining: 1 });
        const second = await upload(
          [allYes(), broken],
          { model: 'r', kind: 'LLM', board: 'closed' },
          auth,
          strict,
        );
        expect(second.body.closed_quota).toEqual({ limit: 2, used: 2, remaining: 0 });
        // The third is refused, scored or not.
        const third = await upload([allYes()], { model: 'r', kind: 'LLM', board: 'closed' }, auth, strict);
        expect([third.res.status, third.body.code]).toEqual([429, 'QUOTA_EXCEEDED']);
        expect(JSON.stringify(third.body)).not.toMatch(/overall|tasks/);
      });

      it('recovers no more than chance from 21 flip uploads: the Ladder releases the same score to each', async () => {
        await importGold();
        const open = variant({ closedQuotaPerDay: 100 });
        const auth = await tokenOf('flip team');
        const base = await upload(full(), { model: 'base', kind: 'LLM', board: 'closed' }, auth, open);
        expect([base.res.status, base.body.ladder]).toEqual([201, { mechanism: 'ladder', improved: true }]);
        const items = (records.RuMedDaNet ?? []).slice(0, 20);
        const answers = [];
        for (const r of items) {
          const { body } = await upload(
            full(r.id),
            { model: 'flip', kind: 'LLM', board: 'closed' },
            auth,
            open,
          );
          answers.push({ id: r.id, overall: body.overall, ladder: body.ladder, result: body.result });
        }
        // Every answer is the base's release: nothing in it depends on the flipped item's gold.
        expect(new Set(answers.map((a) => a.overall))).toEqual(new Set([base.body.overall]));
        expect(answers.every((a) => (a.ladder as { improved: boolean }).improved === false)).toBe(true);
        expect(new Set(answers.map((a) => JSON.stringify((a.result as { tasks: object }).tasks)))).toEqual(
          new Set(['{}']),
        );
        // The attack's guess ("the score moved up: the flip is right") is then the same for every item.
        const guesses = answers.map((a) => (Number(a.overall) > Number(base.body.overall) ? 'нет' : 'да'));
        const right = guesses.filter((g, i) => g === gold('RuMedDaNet', items[i]?.id as string)).length;
        const yes = items.filter((r) => gold('RuMedDaNet', r.id) === 'да').length;
        expect(right).toBe(yes); // exactly what always guessing "да" gets: chance
        // The board shows the team's release, not the exact scores; the admin sees them.
        const board = (await (await open.request('/api/boards/closed')).json()) as {
          entries: { model: string; overall: number | null; tasks: object }[];
        };
        const flips = board.entries.filter((e) => e.model === 'flip');
        expect(flips.length).toBe(20);
        expect(new Set(flips.map((e) => e.overall))).toEqual(new Set([base.body.overall]));
        expect(flips.every((e) => JSON.stringify(e.tasks) === '{}')).toBe(true);
      });

      it('climbs one ladder one upload at a time: of two identical improvements sent together, one improves', async () => {
        await importGold();
        const open = variant({ closedQuotaPerDay: 100 });
        const auth = await tokenOf('race team');
        await upload(full(), { model: 'base', kind: 'LLM', board: 'closed' }, auth, open);
        const better = danet((r) => ({
          pairID: r.id,
          answer: (records.RuMedDaNet ?? []).indexOf(r) < 20 ? gold('RuMedDaNet', r.id) : 'да',
        }));
        const both = await Promise.all(
          [1, 2].map(() =>
            upload(
              full(undefined, 'neutral', better),
              { model: 'better', kind: 'LLM', board: 'closed' },
              auth,
              open,
            ),
          ),
        );
        const improved = both.map((b) => (b.body.ladder as { improved: boolean }).improved).sort();
        expect(improved).toEqual([false, true]);
        expect(both[0]?.body.overall).toBe(both[1]?.body.overall);
      });

      it('ranks tell no more than the Ladder: an upload it released has no rank, interval or group, and uploads that do not improve move nothing (issues #26, #42)', async () => {
        await importGold();
        const open = variant({ closedQuotaPerDay: 100 });
        const meta = { kind: 'LLM', board: 'closed' };
        const mine = await tokenOf('ranked team');
        const theirs = await tokenOf('rival team');
        const base = await upload(full(), { ...meta, model: 'rank-base' }, mine, open);
        const rival = await upload(
          full(undefined, 'entailment'),
          { ...meta, model: 'rank-rival' },
          theirs,
          open,
        );
        expect([base.body.ladder, rival.body.ladder]).toEqual([
          { mechanism: 'ladder', improved: true },
          { mechanism: 'ladder', improved: true },
        ]);
        type Ranked = {
          ranking: { status: string; mde: Record<string, number | null> | null };
          entries: {
            id: string;
            model: string;
            rank: number | null;
            rank_ci: unknown;
            group: unknown;
            tasks: object;
          }[];
        };
        // The board as the public reads it once its ranking is computed (this process's own boards).
        const ranked = async (): Promise<Ranked> => {
          now += Boards.BOARD_TTL_MS;
          await app.request('/api/boards/closed');
          await lb.boards.settled();
          return (await (await app.request('/api/boards/closed')).json()) as Ranked;
        };
        const before = await ranked();
        expect(before.ranking.status).toBe('current');
        const places = (b: Ranked) =>
          Object.fromEntries(
            b.entries
              .filter((e) => e.model === 'rank-base' || e.model === 'rank-rival')
              .map((e) => [e.id, { rank: e.rank, rank_ci: e.rank_ci, group: e.group, tasks: e.tasks }]),
          );
        const first = places(before);
        // No place is computed for an upload the Ladder released: a rank or interval is a function of its exact score
        // (two entries with one release were ordered by one item). They are ordered by their releases alone.
        expect(Object.values(first).map((p) => [p.rank, p.rank_ci, p.group])).toEqual([
          [null, null, null],
          [null, null, null],
        ]);
        for (const r of (records.RuMedDaNet ?? []).slice(0, 8)) {
          const { body } = await upload(full(r.id), { ...meta, model: 'rank-flip' }, mine, open);
          expect(body.ladder).toEqual({ mechanism: 'ladder', improved: false });
        }
        const after = await ranked();
        expect(after.ranking.status).toBe('current');
        expect(places(after)).toEqual(first);
        expect(after.ranking.mde).toEqual(before.ranking.mde);
        // The flips themselves are not ranked, and no task of an upload is (their scores are withheld).
        const flips = after.entries.filter((e) => e.model === 'rank-flip');
        expect(flips).toHaveLength(8);
        expect(flips.every((e) => e.rank === null && e.rank_ci === null && e.group === null)).toBe(true);
        expect(after.entries.every((e) => JSON.stringify(e.tasks) === '{}')).toBe(true);
        // The page explains no rank interval or group where no upload has one (issue #63).
        expect(await (await app.request('/board/closed')).text()).not.toContain('rank-hint');
        // Nothing per item in the answer, the page or the CSV.
        for (const path of ['/api/boards/closed', '/board/closed', '/board/closed.csv']) {
          const text = await (await app.request(path)).text();
          for (const r of (records.RuMedDaNet ?? []).slice(0, 8)) expect(text).not.toContain(r.id);
          expect(text).not.toContain('item_stats');
        }
      });

      it('scores exactly the quota of 20 concurrent uploads, reserved before scoring', async () => {
        const quota3 = variant({ quotaPerDay: 3 });
        const auth = await tokenOf('concurrent team');
        const file = [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(PREDICTIONS.a, 'RuMedNLI.jsonl')) }];
        const all = await Promise.all(
          Array.from({ length: 20 }, (_, i) => upload(file, { model: `c${i}`, kind: 'LLM' }, auth, quota3)),
        );
        const statuses = all.map((u) => u.res.status).sort();
        expect(statuses.filter((s) => s === 201).length).toBe(3);
        expect(statuses.filter((s) => s === 429).length).toBe(17);
      });

      it('takes the client address from the trusted hop, and groups IPv6 by /64', async () => {
        const behindOne = variant({ anonymousPerMinute: 2 }, { trustedProxies: 1 });
        const small = [{ name: 'RuMedDaNet.jsonl', data: '{"pairID": "nope", "answer": "да"}' }];
        const from = async (xff: string) =>
          (await upload(small, { model: 'x', kind: 'LLM' }, { 'x-forwarded-for': xff }, behindOne)).res
            .status;
        // The client writes what it likes on the left; our proxy appends the address it saw on the right.
        const spoofed = [];
        for (const left of ['platform', '10.0.0.1', '203.0.113.9'])
          spoofed.push(await from(`${left}, 198.51.100.7`));
        expect(spoofed).toEqual([422, 422, 429]);
        // One /64: one uploader, whatever the interface id; another /64 is another uploader.
        const v6 = [];
        for (const a of [
          '2001:db8:1:2::1',
          '2001:db8:1:2:ffff::9',
          '2001:db8:1:2:abcd:0:0:1',
          '2001:db8:1:3::1',
        ])
          v6.push(await from(a));
        expect(v6).toEqual([422, 422, 429, 422]);
        // What is stored is the trusted hop, never the value the client wrote.
        const { body } = await upload(
          small,
          { model: 'x', kind: 'LLM' },
          { 'x-forwarded-for': 'platform, 192.0.2.44' },
          behindOne,
        );
        const { getSubmission } = await import('./db/shared.js');
        expect((await getSubmission(lb.db.db, body.id as string))?.address).toBe('192.0.2.44');
      });

      it('stores five rejected 45 MiB-inflating uploads in under 2 MB, and the board answers meanwhile', async () => {
        const pad = 'x'.repeat(280);
        const entry = (task: string, tag: string) => ({
          name: `${task}.jsonl`,
          data: Array.from({ length: 47_000 }, (_, i) =>
            JSON.stringify({ pairID: `${tag}-${i.toString(16)}`, answer: 'да', pad }),
          ).join('\n'),
        });
        const zip = makeZip(['RuMedDaNet', 'RuMedNLI', 'RuMedTest'].map((t) => entry(t, t)));
        expect(zip.length).toBeLessThan(16 << 20);
        // The probe reads the board every 20 ms, far past the API's rate per address.
        const open = variant({ anonymousPerMinute: 1000, apiPerMinute: 0 });
        const { listAll } = await import('./admin/queries.js');
        const before = new Set((await listAll(lb.db.db)).map((r) => r.id));
        const latencies: number[] = [];
        let uploading = true;
        const probe = (async () => {
          while (uploading) {
            const t0 = performance.now();
            expect((await open.request('/api/boards/public')).status).toBe(200);
            latencies.push(performance.now() - t0);
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        const answers = await Promise.all(
          Array.from({ length: 5 }, () =>
            upload([{ name: 'bomb.zip', data: zip }], { model: 'bomb', kind: 'LLM' }, {}, open),
          ),
        );
        uploading = false;
        await probe;
        expect(answers.map((a) => a.res.status)).toEqual([422, 422, 422, 422, 422]);
        const rows = (await listAll(lb.db.db)).filter((r) => !before.has(r.id));
        expect(rows.length).toBe(5);
        let stored = 0;
        for (const r of rows) {
          const { getSubmission, getSubmissionFiles } = await import('./db/shared.js');
          const full = await getSubmission(lb.db.db, r.id);
          stored += Buffer.byteLength(full?.result ?? '') + Buffer.byteLength(full?.response ?? '');
          for (const f of await getSubmissionFiles(lb.db.db, r.id)) stored += Buffer.byteLength(f.content);
        }
        expect(stored).toBeLessThan(2 << 20);
        latencies.sort((a, b) => a - b);
        const p95 = latencies[Math.floor(0.95 * (latencies.length - 1))] as number;
        expect(latencies.length).toBeGreaterThan(5);
        expect(p95).toBeLessThan(500);
      });

      it('answers a line nested 120,000 deep as a malformed record, not a 500', async () => {
        const deep = { name: 'RuMedDaNet.jsonl', data: '['.repeat(120_000) };
        const { res, body } = await upload([deep], { model: 'deep', kind: 'LLM', board: 'public' });
        expect(res.status).toBe(422);
        expect(JSON.stringify(body.errors)).toContain('nested deeper than 64 levels');
      });

      it('locks the admin bearer API after failed attempts, as the sign-in form does', async () => {
        const api = variant({}, { trustedProxies: 1 });
        const call = (secret: string) =>
          api.request('/api/admin/submissions/none/hide', {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'x-forwarded-for': '198.51.100.99' },
          });
        const statuses = [];
        for (let i = 0; i < 5; i++) statuses.push((await call(`wrong-${i}`)).status);
        statuses.push((await call(ADMIN)).status);
        expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
      });
    });
  });
});

describe('CSV cells', () => {
  it('quotes a cell with either separator, and defuses formulas', () => {
    expect(['a;b', 'a,b', 'plain', '=1+1', 'x"y'].map(csvCell)).toEqual([
      '"a;b"',
      '"a,b"',
      'plain',
      "'=1+1",
      '"x""y"',
    ]);
  });
});
