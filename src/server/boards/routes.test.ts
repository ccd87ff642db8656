/**
 * The boards' routes, in process, on SQLite and PostgreSQL: the public board with the paper's rows under a strict
 * Content-Security-Policy, every user string escaped on the pages, the CSV export guarded against formulas; the API's
 * pages, cursors, entity tags and caching, its limit per address, its refusals of bad values; the page's search,
 * sort and pages.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { NO_DATA_REASON } from '../../../test/helpers/data.js';
import { ENGINES } from '../../../test/helpers/engines.js';
import { attr, elements, parseHtml, textOf } from '../../../test/helpers/html.js';
import { type App, ROUTES_READY, ref, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { STRINGS } from '../../report/i18n.js';
import { createApp } from '../app.js';
import { openDatabase } from '../db/connect.js';
import { SERVER_STRINGS } from '../i18n.js';
import { Leaderboard } from '../leaderboard.js';
import type { PageContext } from '../views/layout.js';
import type { Entry } from './entries.js';
import { DEFAULT_VIEW } from './paging.js';
import { boardCsv } from './present.js';
import { Boards } from './service.js';
import { BoardPage } from './views.js';

describe('a board of thousands, drawn (issue #63)', () => {
  /** 1,880 entries that a test set cannot tell apart (copies), and one it places 2nd to 5th on RuMedNLI. */
  const N = 1880;
  const everywhere = { rank: 1, rank_ci: [1, N] as [number, number], group: 'a' };
  const cell = (place: typeof everywhere) => ({
    n: 100,
    metrics: { accuracy: 0.5 },
    score: 50,
    score_ci: null,
    ci: {},
    place,
  });
  const entries = Array.from(
    { length: N },
    (_, i): Entry =>
      ({
        id: `e${i}`,
        model: `copy-${i}`,
        overall: 50,
        overall_ci: null,
        overall_six: null,
        tasks: {
          RuMedDaNet: cell(everywhere),
          RuMedNLI: cell(i === 0 ? { rank: 3, rank_ci: [1200, 1350], group: '' } : everywhere),
        },
        place: everywhere,
        usage: i === 0 ? { prompt_tokens: 1_000_000, completion_tokens: 200_000 } : null,
      }) as unknown as Entry,
  );
  const draw = async (lang: 'en' | 'ru', board: 'public' | 'closed' = 'public', ladder = false) => {
    const ctx: PageContext = {
      lang,
      t: SERVER_STRINGS[lang],
      r: STRINGS[lang],
      path: '/',
      csrf: 'x',
      admin: false,
    };
    const all =
      board === 'public'
        ? entries
        : entries.map(({ place: _, ...e }): Entry => ({ ...e, tasks: {}, ladder: true }));
    const html = String(
      await BoardPage({
        ctx,
        board,
        all,
        entries: all.slice(0, 100),
        rankOf: (e) => Number(e.id.slice(1)) + 1,
        paging: { view: DEFAULT_VIEW, pages: 19, start: 0, found: N },
        paperRows: [],
        ladder,
        ranking: { ranking: null, current: true, computed_at: null, error: null },
      }),
    );
    return parseHtml(html);
  };
  const firstRow = (doc: ReturnType<typeof parseHtml>) =>
    elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'entry')[0] as never;

  it('says "any place" where a rank interval spans every entry, and writes ranks and counts as the language does', async () => {
    const said = async (lang: 'en' | 'ru') => {
      const row = firstRow(await draw(lang));
      return [
        ...elements(row, (e) => e.tagName === 'small' && /\bplace\b/.test(attr(e, 'class') ?? '')).map(
          (e) => `${attr(e, 'class')}: ${textOf(e)}`,
        ),
        textOf(elements(row, (e) => e.tagName === 'td' && /usage/.test(attr(e, 'class') ?? ''))[0] as never),
      ];
    };
    // Intl's Russian groups thousands with a no-break space.
    expect(await said('en')).toEqual([
      'place any: any place of 1,880 · a',
      'place: 1,200–1,350',
      'place any: any place of 1,880 · a',
      'not priced1,200,000 tokens',
    ]);
    expect(await said('ru')).toEqual([
      'place any: любое место из 1\u00a0880 · a',
      'place: 1\u00a0200–1\u00a0350',
      'place any: любое место из 1\u00a0880 · a',
      'без цены1\u00a0200\u00a0000 токенов',
    ]);
  });

  it('names the first sort "order of released scores" under the Ladder, where no upload has a rank', async () => {
    const sortLabel = async (board: 'public' | 'closed', ladder: boolean, lang: 'en' | 'ru') => {
      const select = elements(
        await draw(lang, board, ladder),
        (e) => e.tagName === 'select' && attr(e, 'name') === 'sort',
      )[0];
      return textOf(
        elements(select as never, (o) => o.tagName === 'option' && attr(o, 'value') === 'rank')[0] as never,
      );
    };
    expect([
      await sortLabel('public', false, 'en'),
      await sortLabel('closed', true, 'en'),
      await sortLabel('closed', true, 'ru'),
    ]).toEqual(['rank', 'order of released scores', 'порядок опубликованных баллов']);
  });
});

describe.skipIf(!ROUTES_READY)(`board routes (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`, () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine);
    const { request, upload } = t;

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

    it('escapes every user string on the pages and guards the CSV export', async () => {
      const hostile = {
        model: '<script>alert(1)</script>',
        description: '"><img src=x onerror=alert(2)>',
        link: 'https://example.org/"><script>alert(3)</script>',
        kind: 'LLM',
      };
      // A team name comes from its token, so the hostile team is the admin's typo, not an uploader's field.
      const { token } = await t.lb.admin.createToken('=HYPERLINK("http://evil.example")');
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
        'rank,id,model,team,kind,params,open_weights,verified,submitted,RuMedTop3.accuracy,RuMedTop3.hit_at_3,RuMedSymptomRec.accuracy,RuMedSymptomRec.hit_at_3,RuMedDaNet.accuracy,RuMedNLI.accuracy,RuMedNER.accuracy,RuMedNER.f1,RuMedTop3.score,RuMedSymptomRec.score,RuMedDaNet.score,RuMedNLI.score,RuMedNER.score,overall,overall.rank_ci,overall.group,cost_usd,prompt_tokens,completion_tokens,reasoning_tokens,batch',
      );
    });
  });
});

describe.skipIf(!ROUTES_READY)(
  `a large board, paged (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`,
  () => {
    describe.each(ENGINES)('on %s', (engine) => {
      const t = useLeaderboardApp(engine);
      const { request } = t;
      /** Entries on the board: one uploaded, the rest its copies under other names and overalls. */
      const COPIES = 229;
      let topId = '';

      /** A copy of an entry, as another model with another overall (the database is written directly, for speed). */
      const copy = async (from: Record<string, unknown>, i: number, overall: number | null) => {
        const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        await t.lb.db.db
          .insertInto('submissions')
          .values({
            ...from,
            id,
            created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
            model: `model-${String(i).padStart(3, '0')}`,
            team: i % 10 === 0 ? 'Команда Ω' : 'lab',
            overall,
            content_hash: `copy-${i}`,
            idempotency_key: null,
            duplicate_of: null,
          } as never)
          .execute();
        return id;
      };

      beforeAll(async () => {
        const { token } = await t.lb.admin.createToken('lab');
        const good = await t.upload(
          [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }],
          { model: 'model-000', kind: 'LLM' },
          { authorization: `Bearer ${token}` },
        );
        expect(good.res.status).toBe(201);
        const row = await t.lb.db.db
          .selectFrom('submissions')
          .selectAll()
          .where('id', '=', String(good.body.id))
          .executeTakeFirstOrThrow();
        // Overalls spread over the paper's rows (49.0 to 95.0), a few entries without one.
        for (let i = 1; i <= COPIES; i++) await copy(row, i, i % 50 === 0 ? null : 49 + ((i * 0.2) % 46));
        t.lb.boards.invalidate();
        await request('/api/boards/public');
        await t.lb.boards.settled();
        t.lb.boards.invalidate();
        topId = (await t.lb.boards.board('public'))[0]?.id as string;
      }, 120_000);

      const api = async (path: string, init?: RequestInit) => {
        const res = await request(path, init);
        return { res, body: (await res.json()) as Body };
      };
      type Body = {
        total: number;
        limit: number;
        next_cursor: string | null;
        entries: { id: string }[];
        code?: string;
      };

      it('pages the API with an opaque cursor: every entry once, in the board’s order, 100 by default', async () => {
        const board = (await t.lb.boards.board('public')).map((e) => e.id);
        expect(board.length).toBe(COPIES + 1);
        const first = await api('/api/boards/public');
        expect([first.res.status, first.body.total, first.body.limit, first.body.entries.length]).toEqual([
          200,
          COPIES + 1,
          100,
          100,
        ]);
        const seen: string[] = [];
        let next: string | null = null;
        let pages = 0;
        do {
          const { body } = await api(`/api/boards/public?limit=64${next ? `&cursor=${next}` : ''}`);
          seen.push(...body.entries.map((e) => e.id));
          next = body.next_cursor;
          pages++;
        } while (next !== null && pages < 10);
        expect([pages, seen]).toEqual([Math.ceil((COPIES + 1) / 64), board]);
        const all = await api('/api/boards/public?limit=1000');
        expect([all.body.entries.map((e) => e.id), all.body.next_cursor]).toEqual([board, null]);
      });

      it('answers bad limits and cursors with a 400 that says which', async () => {
        const closed = (await api('/api/boards/closed?limit=1')).body;
        const cases = [
          'limit=0',
          'limit=1001',
          'limit=ten',
          'limit=1&limit=2',
          `limit=${'9'.repeat(5000)}`,
          'cursor=%00%01',
          'cursor=eyJiIjoicHVibGljIn0',
          `cursor=${'A'.repeat(5000)}`,
        ];
        const answers = await Promise.all(cases.map((q) => api(`/api/boards/public?${q}`)));
        expect(answers.map(({ res, body }) => [res.status, body.code])).toEqual([
          [400, 'BAD_LIMIT'],
          [400, 'BAD_LIMIT'],
          [400, 'BAD_LIMIT'],
          [400, 'BAD_LIMIT'],
          [400, 'BAD_LIMIT'],
          [400, 'BAD_CURSOR'],
          [400, 'BAD_CURSOR'],
          [400, 'BAD_CURSOR'],
        ]);
        expect(closed.next_cursor).toBe(null);
        const publicCursor = (await api('/api/boards/public?limit=1')).body.next_cursor;
        const wrongBoard = await api(`/api/boards/closed?cursor=${publicCursor}`);
        expect([wrongBoard.res.status, wrongBoard.body.code]).toEqual([400, 'BAD_CURSOR']);
        expect((wrongBoard.body as unknown as { error: string }).error).toBe(
          'cursor: a cursor of the public board, not the closed board; use the next_cursor of a page of this board, or leave it out for the first page',
        );
      });

      it('tags each answer: If-None-Match answers 304, and a change of the board a new tag', async () => {
        const first = await request('/api/boards/public?limit=10');
        const tag = first.headers.get('etag') as string;
        expect(tag).toMatch(/^"[\w-]{22}"$/);
        const again = await Promise.all(
          [tag, `W/${tag}`, `"other", ${tag}`, '*', '"other"'].map((h) =>
            request('/api/boards/public?limit=10', { headers: { 'if-none-match': h } }),
          ),
        );
        expect(
          await Promise.all(
            again.map(async (r) => [r.status, r.headers.get('etag'), (await r.text()).length > 0]),
          ),
        ).toEqual([
          [304, tag, false],
          [304, tag, false],
          [304, tag, false],
          [304, tag, false],
          [200, tag, true],
        ]);
        // Another page is another answer.
        expect((await request('/api/boards/public?limit=11')).headers.get('etag')).not.toBe(tag);
        await t.lb.admin.adminAction(topId, 'flag');
        const changed = await request('/api/boards/public?limit=10', { headers: { 'if-none-match': tag } });
        expect(changed.status).toBe(200);
        expect(changed.headers.get('etag')).not.toBe(tag);
        await t.lb.admin.adminAction(topId, 'unflag');
      });

      it('lets caches keep the public board’s answers a few seconds, cookie-free, and nobody keep the closed board’s', async () => {
        const heads = async (path: string, init?: RequestInit) => {
          const r = await request(path, init);
          return [path, r.status, r.headers.get('cache-control'), r.headers.get('set-cookie')];
        };
        const nonce = { headers: { cookie: 'rmb_nonce=aaaaaaaaaaaaaaaaaaaaaaaa' } };
        expect([
          await heads('/api/boards/public'),
          await heads('/api/boards/public', { headers: { 'if-none-match': '*' } }),
          await heads('/board/public.csv'),
          await heads('/api/boards/closed'),
          await heads('/board/closed.csv'),
          await heads('/api/boards/closed', nonce),
        ]).toEqual([
          ['/api/boards/public', 200, 'public, max-age=10', null],
          ['/api/boards/public', 304, 'public, max-age=10', null],
          ['/board/public.csv', 200, 'public, max-age=10', null],
          ['/api/boards/closed', 200, 'no-store', expect.stringMatching(/^rmb_nonce=/)],
          ['/board/closed.csv', 200, 'no-store', expect.stringMatching(/^rmb_nonce=/)],
          ['/api/boards/closed', 200, 'no-store', null],
        ]);
      });

      it('limits reads of the API, the CSV and the pages per address, and says when to come back', async () => {
        const limited = createApp({
          lb: new Leaderboard(t.lb.db, t.lb.scorer, { ...t.lb.options, apiPerMinute: 3 }),
          log: t.log,
          trustedProxies: 1,
        }) as unknown as App;
        const from = (address: string, path: string) =>
          limited.request(path, { headers: { 'x-forwarded-for': address } });
        const statuses = [];
        for (const path of [
          '/api/boards/public',
          '/board/public.csv',
          '/api/boards/closed?limit=1',
          '/api/boards/public',
        ])
          statuses.push((await from('203.0.113.7', path)).status);
        const refused = await from('203.0.113.7', '/api/boards/closed');
        expect([
          statuses,
          (await from('203.0.113.7', '/board/closed.csv')).status,
          refused.status,
          Number(refused.headers.get('retry-after')) > 0,
          ((await refused.json()) as Body).code,
          (await from('203.0.113.8', '/api/boards/public')).status,
          // The pages that draw charts are counted with them (issue #57); another address's count is its own.
          (await from('203.0.113.7', '/')).status,
          (await from('203.0.113.8', '/')).status,
        ]).toEqual([[200, 200, 200, 429], 429, 429, true, 'RATE_LIMITED', 200, 429, 200]);
      });

      it('shows an upload at once, another process’s upload once its cache is past, and a hidden entry no more', async () => {
        // Another process: a connection of its own (SQLite tells a connection of others' writes only), and a clock
        // the test moves past the boards' cache.
        const own = t.lb.db.engine === 'sqlite' ? await openDatabase(t.lb.db.location) : t.lb.db;
        let now = Date.now();
        const elsewhere = new Leaderboard(own, t.lb.scorer, { ...t.lb.options, clock: () => now });
        const ids = async (lb: Leaderboard) => (await lb.boards.board('public')).map((e) => e.id);
        // A read past the cache's time answers at once, with the board as last built, and checks it: the board as
        // it is replaces it when read.
        const checked = async (lb: Leaderboard) => {
          const before = (await ids(lb)).sort();
          await lb.boards.settled();
          return { before, after: (await ids(lb)).sort() };
        };
        const seen = await ids(elsewhere);
        expect(await ids(t.lb)).toEqual(seen);
        const { token } = await t.lb.admin.createToken('lab');
        const up = await t.upload(
          [{ name: 'RuMedNLI.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedNLI.jsonl')) }],
          { model: 'late-upload', kind: 'LLM' },
          { authorization: `Bearer ${token}` },
        );
        expect(up.res.status).toBe(201);
        const id = String(up.body.id);
        expect((await ids(t.lb)).filter((x) => !seen.includes(x))).toEqual([id]);
        // Within the cache's time the other process shows the board as it read it; past it, as it is.
        expect(await ids(elsewhere)).toEqual(seen);
        now += Boards.BOARD_TTL_MS;
        const withIt = [id, ...seen].sort();
        const without = [...seen].sort();
        expect(await checked(elsewhere)).toEqual({ before: without, after: withIt });
        await t.lb.admin.adminAction(id, 'hide');
        expect(await ids(t.lb)).toEqual(seen);
        now += Boards.BOARD_TTL_MS;
        expect(await checked(elsewhere)).toEqual({ before: withIt, after: without });
        await t.lb.boards.settled();
        await elsewhere.boards.settled();
        if (own !== t.lb.db) await own.close();
      });

      // SQLite only, by design rather than skipped: one connection, so a transaction held open holds every query of
      // the process (PostgreSQL's pool has others to give, and a reader there never waits on it).
      (engine === 'sqlite' ? it : () => {})(
        'never keeps a reader waiting on an update of the board: the board as last built, while the database is held',
        async () => {
          let now = Date.now();
          const lb = new Leaderboard(t.lb.db, t.lb.scorer, { ...t.lb.options, clock: () => now });
          const before = await lb.boards.board('public');
          let release = () => {};
          const gate = new Promise<void>((r) => {
            release = r;
          });
          let held = () => {};
          const holding = new Promise<void>((r) => {
            held = r;
          });
          const transaction = t.lb.db.db.transaction().execute(async (trx) => {
            await trx.selectFrom('submissions').select('id').limit(1).execute();
            held();
            await gate;
          });
          await holding;
          // An upload of this process to read, and the cache's time over: both wait for the database.
          const added = lb.boards.added('00000000-0000-4000-8000-ffffffffffff');
          now += Boards.BOARD_TTL_MS;
          expect(await lb.boards.board('public')).toBe(before);
          expect(await lb.boards.board('public')).toBe(before);
          release();
          await transaction;
          await added;
          await lb.boards.settled();
          expect((await lb.boards.board('public')).map((e) => e.id)).toEqual(before.map((e) => e.id));
        },
      );

      it('sorts the whole board on a header click: a link with the sort in the URL, the form in step', async () => {
        const page = async (path: string) => {
          const doc = parseHtml(await (await request(path)).text());
          const table = elements(doc, (e) => e.tagName === 'table' && attr(e, 'id') === 'board')[0];
          const heads = elements(table as never, (e) => e.tagName === 'th' && attr(e, 'scope') === 'col');
          const head = (name: string) => heads.find((h) => textOf(h).trim().startsWith(name));
          const link = (name: string) =>
            attr(elements(head(name) as never, (a) => a.tagName === 'a')[0] as never, 'href');
          const selected = (name: string) =>
            elements(doc, (e) => e.tagName === 'select' && attr(e, 'name') === name)
              .flatMap((s) => elements(s, (o) => o.tagName === 'option' && attr(o, 'selected') !== undefined))
              .map((o) => attr(o, 'value'));
          return {
            // Sorted in the browser, a click would order the 100 rows shown and nothing else.
            clientSorted: (attr(table as never, 'class') ?? '').split(' ').includes('sortable'),
            first: textOf(
              elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'entry')[0] as never,
            ).includes('model-229'),
            link,
            ariaSort: (name: string) => attr(head(name) as never, 'aria-sort'),
            form: [...selected('sort'), ...selected('dir')],
          };
        };
        const p1 = await page('/?lang=en');
        expect(p1.clientSorted).toBe(false);
        expect([p1.link('Model'), p1.link('Overall'), p1.link('RuMedDaNet')]).toEqual([
          '/?sort=model&lang=en',
          '/?sort=overall&lang=en',
          '/?sort=task%3ARuMedDaNet&lang=en',
        ]);
        expect(p1.ariaSort('#')).toBe('ascending');
        // Model, twice: descending over all 230 entries, so the page starts with model-229 (rank order puts it lower).
        const byModel = await page(p1.link('Model') as string);
        expect([byModel.ariaSort('Model'), byModel.form]).toEqual(['ascending', ['model', 'asc']]);
        expect(byModel.link('Model')).toBe('/?sort=model&dir=desc&lang=en');
        const desc = await page(byModel.link('Model') as string);
        expect([desc.ariaSort('Model'), desc.form, desc.first]).toEqual([
          'descending',
          ['model', 'desc'],
          true,
        ]);
      });

      it('streams the CSV: the same rows as the board, every one', async () => {
        const res = await request('/board/public.csv');
        const text = await res.text();
        expect(text).toBe(boardCsv('public', await t.lb.boards.board('public')));
        expect(text.split('\r\n').length).toBe(COPIES + 3);
      });

      it('shows a page of 100 entries, searched and sorted on the server, with links to the others', async () => {
        const rowsOf = async (path: string) => {
          const res = await request(path);
          const doc = parseHtml(await res.text());
          return {
            status: res.status,
            entries: elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'entry').map(
              (e) =>
                `${textOf(elements(e, (d) => d.tagName === 'td')[0] as never)} ${textOf(elements(e, (a) => a.tagName === 'a')[0] as never)}`,
            ),
            paper: elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'reference').length,
            nav: elements(doc, (e) => e.tagName === 'nav' && attr(e, 'class') === 'board-pages').map((n) =>
              elements(n, (a) => a.tagName === 'a').map((a) => [attr(a, 'rel'), attr(a, 'href')]),
            ),
          };
        };
        const board = await t.lb.boards.board('public');
        const p1 = await rowsOf('/?lang=en');
        expect([p1.status, p1.entries.length, p1.entries[0]]).toEqual([200, 100, `1 ${board[0]?.model}`]);
        expect(p1.nav).toEqual([
          [
            ['next', '/?page=2&lang=en'],
            ['last', '/?page=3&lang=en'],
          ],
        ]);
        const p3 = await rowsOf('/?page=3&lang=en');
        expect(p3.entries.length).toBe(COPIES + 1 - 200);
        // Every one of the paper's six rows stands on exactly one page.
        const p2 = await rowsOf('/?page=2&lang=en');
        expect(p1.paper + p2.paper + p3.paper).toBe(6);
        // Past the last page: the last page.
        expect((await rowsOf('/?page=9&lang=en')).entries).toEqual(p3.entries);
        // A search by team (any case) finds the tenth entries; sorted by model, descending; no paper rows.
        const found = await rowsOf(
          '/?q=%D0%BA%D0%BE%D0%BC%D0%B0%D0%BD%D0%B4%D0%B0&sort=model&dir=desc&lang=en',
        );
        const tenths = board.filter((e) => e.team === 'Команда Ω');
        expect(found.entries.map((r) => r.split(' ')[1])).toEqual(
          tenths
            .map((e) => e.model)
            .sort()
            .reverse(),
        );
        expect([found.paper, found.nav]).toEqual([0, [[]]]);
        const bad = await Promise.all(
          ['/?sort=evil', '/?page=x', '/board/closed?sort=task:RuMedTop3'].map((p) => request(p)),
        );
        expect(bad.map((r) => r.status)).toEqual([400, 400, 400]);
        // Under 200 KB for a page of 100 entries.
        expect((await (await request('/?lang=ru')).text()).length).toBeLessThan(200_000);
      });
    });
  },
);
