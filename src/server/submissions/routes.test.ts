/**
 * Uploads through their routes, in process, on SQLite and PostgreSQL: scored exactly as `rumedbench eval` scores
 * them, every broken file answered with every problem, bad metadata and oversized bodies refused, retries landing
 * once, team tokens, rate limits and quotas, closed tests that stay pending until their gold comes and then leak
 * nothing per item, and comparisons with paired statistics.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_DIR, NO_DATA_REASON, PLATFORM_SUBMISSIONS } from '../../../test/helpers/data.js';
import { ENGINES } from '../../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../../test/helpers/fixture-data.js';
import { attr, type Element, elements, parseHtml, tableRows } from '../../../test/helpers/html.js';
import {
  type Body,
  files,
  LIMITS,
  META,
  ROUTES_READY,
  ref,
  useLeaderboardApp,
} from '../../../test/helpers/leaderboard-app.js';
import { makeZip } from '../../../test/helpers/zip.js';
import { loadSplit } from '../../data/load.js';
import { evaluateSubmission } from '../../scoring/score.js';
import { getTask } from '../../tasks/registry.js';

/** Synthetic gold for the published private_test ids: a function of the id, so a test can compute any score. */
const syntheticGold = (task: string, id: string): string => {
  const h = createHash('sha256').update(id).digest()[0] as number;
  if (task === 'RuMedDaNet') return h % 2 ? 'да' : 'нет';
  if (task === 'RuMedNLI') return ['entailment', 'contradiction', 'neutral'][h % 3] as string;
  return String((h % 4) + 1);
};

/** The plumbing's data: the fixture folder (60 items a split) and predictions right on every 2nd, 3rd, 5th item. */
const FIXTURE = fixtureDataDir();
const PREDICTIONS: Record<string, string> = {
  linear_models: writeFixturePredictions(FIXTURE, mkdtempSync(join(tmpdir(), 'rumedbench-routes-a-')), 2),
  bilstm: writeFixturePredictions(FIXTURE, mkdtempSync(join(tmpdir(), 'rumedbench-routes-b-')), 3),
  naive: writeFixturePredictions(FIXTURE, mkdtempSync(join(tmpdir(), 'rumedbench-routes-c-')), 5),
};
const pred = (name: string): string => PREDICTIONS[name] as string;

describe('submission routes (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, FIXTURE);
    const { request, upload, variant } = t;

    it('answers a broken file with every problem, exactly as `rumedbench eval` reports them, and keeps it off the board', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-broken-'));
      const lines = readFileSync(join(pred('linear_models'), 'RuMedDaNet.jsonl'), 'utf8')
        .trim()
        .split('\n');
      const broken = [
        '{"pairID": "nope", "answer": "да", "prediction": "да"}',
        '{"pairID": ',
        lines[2]?.replace(/"prediction":\s*"[^"]*"/, '"prediction": "maybe"'),
        ...lines.slice(3),
      ].join('\n');
      writeFileSync(join(dir, 'RuMedDaNet.jsonl'), broken);
      const expected = await evaluateSubmission(dir, { dataDir: FIXTURE });
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
      expect((await t.lb.admin.adminList()).map((r) => [r.id, r.status])).toContainEqual([
        body.id,
        'rejected',
      ]);
    });

    it('refuses bad metadata, a body that is not multipart, and a body over the cap before parsing it', async () => {
      const one = [{ name: 'RuMedDaNet.jsonl', data: '{}' }];
      const cases: [Record<string, string>, string][] = [
        [{ kind: 'LLM' }, 'model: required'],
        [{ ...META, link: 'javascript:alert(1)' }, 'link: an http:// or https:// URL'],
        [{ ...META, link: 'ftp://example.org/x' }, 'link: an http:// or https:// URL'],
        [{ ...META, kind: 'robot' }, 'kind: one of LLM, encoder, feature-based, baseline, human, unknown'],
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
      const f = [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(pred('bilstm'), 'RuMedDaNet.jsonl')) }];
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
      const rows = await t.lb.admin.adminList();
      expect(rows.filter((r) => r.id === first.body.id)).toHaveLength(1);
      expect(rows.filter((r) => r.id === raced[0]?.body.id)).toHaveLength(1);
      // The same predictions again, without a key: a new submission, linked to the first.
      const repeat = await upload(f);
      expect([repeat.res.status, repeat.body.duplicate_of]).toEqual([201, first.body.id]);
    });

    it('takes team tokens, refuses unknown and revoked ones, and can refuse anonymous uploads', async () => {
      const { id, token } = await t.lb.admin.createToken('Team <b>X</b>');
      const f = [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(pred('naive'), 'RuMedNLI.jsonl')) }];
      const ok = await upload(f, META, { authorization: `Bearer ${token}` });
      expect(ok.res.status).toBe(201);
      expect((await t.lb.admin.adminList()).find((r) => r.id === ok.body.id)?.team).toBe('Team <b>X</b>');
      const bad = await upload(f, META, { authorization: 'Bearer rmb_not-a-token' });
      expect([bad.res.status, bad.body.code]).toEqual([401, 'BAD_TOKEN']);
      await request('/'); // nothing cached about tokens
      const { revokeToken } = await import('../admin/queries.js');
      expect(await revokeToken(t.lb.db.db, id)).toBe(true);
      const revoked = await upload(f, META, { authorization: `Bearer ${token}` });
      expect([revoked.res.status, revoked.body.error]).toEqual([401, 'unknown or revoked token']);
      const closedShop = await variant({ anonymous: false });
      const anon = await upload(f, META, {}, closedShop);
      expect([anon.res.status, anon.body.code]).toEqual([401, 'TOKEN_REQUIRED']);
    });

    it('rate-limits anonymous uploads per address, and counts a daily quota with the remaining count in every answer', async () => {
      const f = [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(pred('bilstm'), 'RuMedNLI.jsonl')) }];
      const limited = await variant({ anonymousPerMinute: 2 });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await upload(f, META, { 'x-n': String(i) }, limited)).res);
      expect(statuses.map((r) => r.status)).toEqual([201, 201, 429]);
      expect(Number(statuses[2]?.headers.get('retry-after'))).toBeGreaterThan(0);

      const quota = await variant({ quotaPerDay: 2 });
      const { token } = await t.lb.admin.createToken('quota team');
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

    it('refuses files that belong on the other board', async () => {
      const f = [{ name: 'RuMedTop3.jsonl', data: readFileSync(join(pred('naive'), 'RuMedTop3.jsonl')) }];
      const { res, body } = await upload(f, { ...META, board: 'closed' });
      expect([
        res.status,
        (body.errors as { code: string; message: string }[]).map((e) => [e.code, e.message]),
      ]).toEqual([
        422,
        [['WRONG_BOARD', 'RuMedTop3 is not on the closed board (RuMedDaNet, RuMedNLI, RuMedTest)']],
      ]);
    });
  });
});

describe.skipIf(!ROUTES_READY)(
  `submission routes on the public data: the paper's numbers, the MedBench platform's files (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`,
  () => {
    describe.each(ENGINES)('on %s', (engine) => {
      const t = useLeaderboardApp(engine);
      const { request, upload } = t;

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
          expect([task, result.tasks[task]?.metrics, result.tasks[task]?.ci]).toEqual([
            task,
            t.metrics,
            t.ci,
          ]);
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
        await expect(t.lb.gold.importGold(bad)).rejects.toThrow(
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
              .map((r) =>
                JSON.stringify({ [task.idField]: r.id, [task.goldField]: syntheticGold(name, r.id) }),
              )
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
        const imported = await t.lb.gold.importGold(gold);
        expect(imported.tasks).toEqual({ RuMedDaNet: 512, RuMedNLI: 1536, RuMedTest: 397 });
        // The admin sees the exact scores; everybody else what the Ladder released: the overall, rounded to
        // 1/N of the scale (N = 2,445 items), and no task's score.
        const exact = await t.lb.boards.entry(body.id as string, { admin: true });
        expect(
          Object.fromEntries(Object.entries(exact.tasks).map(([t, v]) => [t, v.metrics.accuracy])),
        ).toEqual(expected);
        const mean = Object.values(expected).reduce((a, b) => a + b, 0) / 3;
        expect(exact.overall).toBeCloseTo(mean, 10);
        const entry = (await (await request(`/api/submissions/${body.id}`)).json()) as {
          tasks: Record<string, unknown>;
          overall: number;
        };
        expect(entry.tasks).toEqual({});
        expect(entry.overall).toBeCloseTo(Math.round(mean / (100 / 2445)) * (100 / 2445), 10);

        // Nothing per item: no breakdown in the stored result, no confusion matrix on the page.
        const { getSubmission } = await import('../db/shared.js');
        const row = await getSubmission(t.lb.db.db, body.id as string);
        expect(row?.result.includes('breakdown')).toBe(false);
        expect(row?.result.includes('confusion')).toBe(false);
        expect(row?.response.includes('breakdown')).toBe(false);
        // Under the Ladder the page draws no task's score and says why.
        const html = await (await request(`/submissions/${body.id}`)).text();
        expect(elements(parseHtml(html), (e) => e.tagName === 'figure')).toEqual([]);
        expect(html).toContain('Blum &amp; Hardt');
        const closed = (await (await request('/api/boards/closed')).json()) as {
          entries: { model: string }[];
        };
        expect(closed.entries.map((e) => e.model).sort()).toEqual(['ChatGPT', 'naive sample']);
        // Compare on the closed board: aggregates side by side, no paired statistics.
        const cmp = await request(`/compare?a=${body.id}&b=${platform.body.id}`);
        expect(cmp.status).toBe(200);
        expect(await cmp.text()).not.toContain('forest');
      });

      it('compares two public submissions with paired statistics', async () => {
        const a = await upload(files(ref('linear_models')), { model: 'A', kind: 'feature-based' });
        const b = await upload(files(ref('bilstm')), { model: 'B', kind: 'encoder' });
        const res = await request(`/compare?a=${a.body.id}&b=${b.body.id}`);
        expect(res.status).toBe(200);
        const doc = parseHtml(await res.text());
        const table = elements(doc, (e) => e.tagName === 'table')[0] as Element;
        // A cell's text with the copies a phone shows under it (the metric under the task; interval and p under B − A).
        expect(tableRows(table).at(-1)).toEqual([
          'Overallscore',
          'score',
          '58.46',
          '53.87',
          '-4.58[-6.55, -2.54]p\u00a0<0.001',
          // RuMedNLI resampled by premise (issue #26).
          '[-6.55, -2.54]',
          '<0.001',
        ]);
        expect(elements(doc, (e) => e.tagName === 'figure').map((f) => attr(f, 'id'))).toEqual(['forest']);
        const across = await request(
          `/compare?a=${a.body.id}&b=${(await t.lb.boards.board('closed'))[0]?.id}`,
        );
        expect(across.status).toBe(400);
      });
    });
  },
);
