/**
 * Evaluations run by the platform, in process on a throwaway PostgreSQL database (the leaderboard's and the queue's)
 * with a loopback model server: the admin queues one by the API, a team's request waits for approval, an address
 * in place of a registered name is refused, a worker runs the closed tests with the platform's private items, and
 * the result enters the closed board marked as the platform's, with its settings and manifest, while no page shows
 * a test item or a reply.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../../../test/helpers/engines.js';
import { type FakeOpenAI, startFakeOpenAI } from '../../../test/helpers/fake-openai.js';
import { fixtureDataDir, writeFixtureData } from '../../../test/helpers/fixture-data.js';
import { ADMIN as BOARD_ADMIN, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { createLogger } from '../../log.js';
import { addEndpoint } from '../../workers/endpoints.js';
import { cancelPlan } from '../../workers/plans.js';
import type { QueueDb } from '../../workers/store.js';
import { Worker } from '../../workers/worker.js';
import { createApp } from '../app.js';
import type { Leaderboard } from '../leaderboard.js';
import { openLeaderboard } from '../serve.js';
import type { Runs } from './service.js';

const ADMIN = 'k3Y-for-the-runs-admin-9x7Q2mZ4pL8w';
const CLOSED = { RuMedDaNet: 'pairID', RuMedNLI: 'pairID', RuMedTest: 'idx' } as const;

describe.skipIf(!PG_URL)('platform runs (PostgreSQL)', () => {
  let data: string;
  let lb: Leaderboard;
  let queue: QueueDb;
  let runs: Runs;
  let app: ReturnType<typeof createApp>;
  let model: FakeOpenAI;
  const items: string[] = [];
  const log = createLogger(process.env.RB_DEBUG ? 'info' : 'silent');

  beforeAll(async () => {
    data = writeFixtureData(mkdtempSync(join(tmpdir(), 'rumedbench-runs-data-')));
    // The closed tests' gold, imported by the admin as on a real board.
    const gold = mkdtempSync(join(tmpdir(), 'rumedbench-runs-gold-'));
    for (const [task, idField] of Object.entries(CLOSED)) {
      const records = readFileSync(join(data, task, 'private_test_v1.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, string>);
      for (const r of records) items.push(r.question ?? r.ru_sentence1 ?? '');
      const answer = { RuMedDaNet: 'да', RuMedNLI: 'neutral', RuMedTest: '1' }[task];
      writeFileSync(
        join(gold, `${task}.jsonl`),
        records.map((r) => `${JSON.stringify({ [idField]: r[idField], answer })}\n`).join(''),
      );
    }
    const db = await freshDatabase('postgres');
    // The service as the server builds it: the database is the workers' queue too, opened by the leaderboard.
    lb = await openLeaderboard({ dataDir: data, db, bootstrap: 0, queue: true, log });
    await lb.admin.ensureAdminSecret(ADMIN);
    await lb.gold.importGold(gold);
    runs = lb.runs;
    queue = runs.queue as QueueDb;
    app = createApp({ lb, log });
    model = await startFakeOpenAI({
      reply: (body) => {
        const last = body.messages.at(-1)?.content ?? '';
        if (/«да» или «нет»/.test(last)) return 'Ответ: да';
        if (/entailment|contradiction|neutral/.test(last)) return 'Ответ: neutral';
        return 'Ответ: 1';
      },
    });
    await addEndpoint(
      queue,
      {
        name: 'fake-med',
        provider: 'openai',
        base_url: model.url,
        model: 'fake-med',
        api_key_env: null,
        team: 'Med Lab',
      },
      { allowPrivate: true },
    );
  });
  afterAll(async () => {
    await model?.close();
    await lb?.close(); // the queue with it
  });

  const api = (path: string, body: unknown, token = ADMIN) =>
    app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('queues, runs and enters a closed-test evaluation marked as the platform’s; no page shows an item', async () => {
    // Only a registered name: an address (or anything else) is refused before anything is queued.
    const typed = await api('/api/admin/evaluations', {
      endpoint: 'http://169.254.169.254/v1',
      boards: 'closed',
    });
    expect(typed.status).toBe(400);
    expect(((await typed.json()) as { code: string }).code).toBe('ENDPOINT_NOT_ALLOWED');
    expect((await api('/api/admin/evaluations', { endpoint: 'fake-med' }, 'not-the-admin')).status).toBe(401);

    const queued = await api('/api/admin/evaluations', { endpoint: 'fake-med', boards: 'closed' });
    expect(queued.status).toBe(202);
    const { id, status } = (await queued.json()) as { id: string; status: string };
    expect(status).toBe('queued');

    // A team asks for one: it waits for the admin, and no worker takes it meanwhile.
    const { token } = await lb.admin.createToken('team-med');
    const asked = await api('/api/evaluations', { endpoint: 'fake-med', boards: 'public' }, token);
    expect(asked.status).toBe(202);
    const request = (await asked.json()) as { id: string; status: string };
    expect(request.status).toBe('pending');

    // The fake model server listens on loopback: the endpoint and the worker both allow a private address.
    const worker = new Worker({
      db: queue,
      exitWhenIdle: true,
      heartbeatS: 1,
      log,
      dataDir: data,
      allowPrivate: true,
    });
    await worker.run();
    const asked1 = model.requests.length;
    expect(asked1).toBe(60 * 3);
    expect((await runs.status(request.id)).status).toBe('pending' as never);

    expect(await runs.importFinished()).toBe(1);
    const entries = await runs.entries(id);
    expect(Object.keys(entries)).toEqual(['closed']);
    const board = await (await app.request('/board/closed')).text();
    expect(board).toContain('fake-med');
    expect(board).toContain('run by the platform');
    const entry = (await lb.boards.board('closed')).find((e) => e.id === entries.closed);
    expect(entry?.verified).toBe(true);
    expect(entry?.platform_run?.settings).toMatchObject({ temperature: 0, max_tokens: 512, board: 'closed' });
    // The fake model answers "да" and "neutral", the gold's answers: those tasks score 100; RuMedTest's "1" too.
    // Released by the Ladder of the team whose endpoint it is, as its uploads are (gold/release.ts): the overall
    // alone, no task's score.
    expect(entry?.overall).toBe(100);
    expect([entry?.ladder, entry?.tasks]).toEqual([true, {}]);
    const page = await (await app.request(`/submissions/${entries.closed}`)).text();
    expect(page).toContain('manifest.json');
    expect(page).toContain('RuMedDaNet');
    expect(page).not.toContain(model.url);
    // Stored in English, shown in the page's language.
    const ru = await (await app.request(`/submissions/${entries.closed}?lang=ru`)).text();
    expect(ru).toContain('Оценено платформой (fake-med).');
    expect(ru).not.toContain('Run by the platform');

    // Approved, the team's request runs too.
    expect((await api(`/api/admin/evaluations/${request.id}/approve`, {})).status).toBe(200);
    await new Worker({
      db: queue,
      exitWhenIdle: true,
      heartbeatS: 1,
      log,
      dataDir: data,
      allowPrivate: true,
    }).run();
    expect(model.requests.length).toBeGreaterThan(asked1);
    expect(await runs.importFinished()).toBe(1);
    // Credited to the model's owner as registered, not to the team that asked.
    const publicEntry = (await lb.boards.board('public')).find((e) => e.platform_run?.plan_id === request.id);
    expect(publicEntry?.team).toBe('Med Lab');
    expect(await runs.importFinished()).toBe(0);

    // The admin sees who asked and whom the entries go to, and may reject a request: nothing of it is queued.
    const again = (await (await api('/api/evaluations', { endpoint: 'fake-med' }, token)).json()) as {
      id: string;
    };
    const cookie = `rmb_admin=${await lb.admin.startSession('test', 60_000)}`;
    const adminPage = await (await app.request(`/runs/${again.id}`, { headers: { cookie } })).text();
    expect(adminPage).toContain('Requested by: team-med; entries credited to: Med Lab');
    expect(adminPage).toContain(`/admin/evaluations/${again.id}/reject`);
    expect((await app.request(`/runs/${again.id}`)).status).toBe(200);
    expect(await (await app.request(`/runs/${again.id}`)).text()).not.toContain('Requested by');
    expect((await api(`/api/admin/evaluations/${again.id}/reject`, {})).status).toBe(200);
    expect((await runs.status(again.id)).status).toBe('cancelled' as never);
    expect((await api(`/api/admin/evaluations/${again.id}/approve`, {})).status).toBe(409);

    // Both boards in one evaluation: one entry on each, each under its own key.
    const both = (await (
      await api('/api/admin/evaluations', { endpoint: 'fake-med', boards: 'both' })
    ).json()) as {
      id: string;
    };
    await new Worker({
      db: queue,
      exitWhenIdle: true,
      heartbeatS: 1,
      log,
      dataDir: data,
      allowPrivate: true,
    }).run();
    expect(await runs.importFinished()).toBe(2);
    const made = await runs.entries(both.id);
    expect(Object.keys(made).sort()).toEqual(['closed', 'public']);
    expect(made.closed).not.toBe(made.public);
    expect((await lb.boards.entry(made.public as string)).board).toBe('public');
    expect((await lb.boards.entry(made.closed as string)).board).toBe('closed');

    // No page, public or the admin's, shows a test item or a reply.
    const pages = [
      '/runs',
      `/runs/${id}`,
      `/api/runs/${id}`,
      '/board/closed',
      `/submissions/${entries.closed}`,
      '/api/runs',
    ];
    for (const p of pages) {
      const res = await app.request(p);
      expect(res.status, p).toBe(200);
      const text = await res.text();
      for (const item of items) expect(text.includes(item), `${p} shows "${item}"`).toBe(false);
      expect(text, p).not.toContain('Ответ:');
    }
    const runsPage = await (await app.request('/runs')).text();
    expect(runsPage).toContain('fake-med · Closed tests');
    expect(runsPage).toMatch(/done/);

    // /runs pages by time: a flood of runs pushes none off; the older ones are a link away.
    const flood: string[] = [];
    for (let i = 0; i < 50; i++)
      flood.push((await runs.queueEvaluation({ endpoint: 'fake-med', boards: 'public', by: 'admin' })).id);
    const first = (await (await app.request('/api/runs')).json()) as {
      runs: { id: string }[];
      older: string;
    };
    expect(first.runs.length).toBe(50);
    const second = (await (
      await app.request(`/api/runs?before=${encodeURIComponent(first.older)}`)
    ).json()) as {
      runs: { id: string }[];
      older: string | null;
    };
    const all = [...first.runs, ...second.runs].map((r) => r.id);
    expect(new Set(all).size).toBe(54);
    expect(all).toContain(id);
    expect(second.older).toBeNull();
    expect(await (await app.request('/runs')).text()).toContain('/runs?before=');
    // The flood is cancelled: the next test's worker would otherwise run its 50 evaluations before its own.
    for (const f of flood) expect((await cancelPlan(queue, f)).cancelled).toBe(true);
  });

  it('a failed evaluation: signed out, its pages and API name the reason’s class, never the server’s address', async () => {
    const dead = await startFakeOpenAI({ reply: () => 'x' });
    const address = dead.url;
    await dead.close();
    await addEndpoint(
      queue,
      { name: 'dead-med', provider: 'openai', base_url: address, model: 'm', api_key_env: null, team: null },
      { allowPrivate: true },
    );
    const { id } = (await (
      await api('/api/admin/evaluations', { endpoint: 'dead-med', boards: 'closed' })
    ).json()) as {
      id: string;
    };
    // No rounds in the queue: the cell fails at the first "down" instead of waiting a minute for another round.
    await queue.pool.query('UPDATE rumedbench_runs.plans SET retry_rounds = 0 WHERE id = $1', [id]);
    await new Worker({
      db: queue,
      exitWhenIdle: true,
      heartbeatS: 1,
      log,
      dataDir: data,
      allowPrivate: true,
    }).run();
    const host = new URL(address).host;
    const signedOut = [
      await (await app.request('/runs')).text(),
      await (await app.request(`/runs/${id}`)).text(),
      await (await app.request('/api/runs')).text(),
      await (await app.request(`/api/runs/${id}`)).text(),
    ];
    for (const text of signedOut) {
      expect(text).not.toContain(host);
      expect(text).not.toMatch(/--resume|--retry-errors|journal/);
    }
    expect(signedOut[1]).toContain('the model server is down (it stopped answering)');
    expect(JSON.parse(signedOut[3] as string).cells[0].error).toBe(
      'the model server is down (it stopped answering)',
    );
    // In Russian, the status and the reason are Russian; the empty sections are the admin's only.
    const ru = await (await app.request(`/runs/${id}?lang=ru`)).text();
    expect(ru).toContain('сервер модели недоступен');
    expect(ru).toContain('ошибка');
    expect(ru).toContain('оценка');
    expect(ru).not.toMatch(/>failed<|>evaluation</);
    // The admin sees the whole text.
    const cookie = `rmb_admin=${await lb.admin.startSession('test', 60_000)}`;
    const adminPage = await (await app.request(`/runs/${id}`, { headers: { cookie } })).text();
    expect(adminPage).toContain(host);
    expect(adminPage).toContain('is down: 5 requests in a row');
  });
});

if (!PG_URL) describe('platform runs', () => it.skip(NO_PG_REASON, () => {}));

describe('platform runs: every body capped and authenticated before it is read (SQLite: no queue)', () => {
  const board = useLeaderboardApp('sqlite', fixtureDataDir());
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    board.request(path, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
  const code = async (res: Response) => [res.status, ((await res.json()) as { code: string }).code];

  it('refuses before parsing: no token, a team token on the admin route, a body over 64 KiB, broken JSON', async () => {
    // Not JSON at all, and no credentials: refused for the credentials, so the body was never parsed.
    expect(await code(await post('/api/admin/evaluations', '{not json'))).toEqual([401, 'ADMIN_ONLY']);
    expect(await code(await post('/api/evaluations', '{not json'))).toEqual([401, 'TOKEN_REQUIRED']);
    const { token } = await board.lb.admin.createToken('team-x');
    const team = { authorization: `Bearer ${token}` };
    expect(await code(await post('/api/admin/evaluations', '{}', team))).toEqual([401, 'ADMIN_ONLY']);
    expect(await code(await post('/api/admin/evaluations/p-000000000000/approve', '', team))).toEqual([
      401,
      'ADMIN_ONLY',
    ]);
    const big = JSON.stringify({ endpoint: 'x', boards: 'closed', pad: 'я'.repeat(40_000) });
    expect(await code(await post('/api/evaluations', big, team))).toEqual([413, 'BODY_TOO_LARGE']);
    // A team token asks for at most 10 evaluations an hour, whatever their fate.
    const { token: flood } = await board.lb.admin.createToken('team-flood');
    const asks = [];
    for (let i = 0; i < 11; i++)
      asks.push(
        (await post('/api/evaluations', '{"endpoint": "x"}', { authorization: `Bearer ${flood}` })).status,
      );
    expect([asks.slice(0, 10).every((s) => s !== 429), asks[10]]).toEqual([true, 429]);
    const admin = { authorization: `Bearer ${BOARD_ADMIN}` };
    expect(await code(await post('/api/admin/evaluations', '{not json', admin))).toEqual([400, 'BAD_JSON']);
    // Authenticated and well formed, but this board has no queue (SQLite): said, not pretended.
    expect(await code(await post('/api/admin/evaluations', '{"endpoint": "x"}', admin))).toEqual([
      409,
      'RUNS_UNAVAILABLE',
    ]);
    expect(await code(await post('/api/evaluations', '{"endpoint": "x"}', team))).toEqual([
      409,
      'RUNS_UNAVAILABLE',
    ]);
    // The admin's form needs the session and its CSRF token.
    const form = await board.request('/admin/evaluations', {
      method: 'POST',
      body: 'endpoint=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(401);
    const page = await (await board.request('/runs?lang=ru')).text();
    expect(page).toContain('Для запусков доска должна работать на PostgreSQL');
  });
});
