/**
 * The boards: the public and closed pages (a page of entries at a time, searched and sorted on the server), their CSV
 * export (streamed) and the JSON API (a page at a time, with an opaque cursor, an entity tag and, for the public
 * board, a few seconds of public caching). The API, the CSV and the pages are limited per address and minute.
 */
import { type Context, Hono } from 'hono';
import { PAPER_ROWS } from '../../report/paper.js';
import { boardCostChart } from '../charts.js';
import type { BoardName } from '../db/schema.js';
import { type Env, limitReads, type RouteDeps } from '../http.js';
import { type CacheScope, cacheableAnswer, etagOf, PUBLIC_MAX_AGE_S } from '../middleware/cache.js';
import type { Entry } from './entries.js';
import { apiPage, PAGE_SIZE, parseApiQuery, parseView, viewEntries } from './paging.js';
import { boardCsvChunks, parseBoard, publicEntry, rankingSummary } from './present.js';
import { BoardPage } from './views.js';

/** Kept per list of entries: at most this many drawn pages and API answers (a flood of queries cannot grow memory). */
const KEPT_PER_LIST = 64;

/** The public board may be kept by any cache a few seconds; the closed board by none. */
const scopeOf = (board: BoardName): CacheScope => (board === 'public' ? 'public' : 'none');

export function boardRoutes({ lb, charts, reads }: RouteDeps): Hono<Env> {
  const app = new Hono<Env>();
  // What is drawn once per list of entries (the service caches the list): pages per language and path, API answers
  // per query, and each entry's place in the board's order. Only pages seen without the admin's powers are kept, so
  // that none rendered for the admin can be served to a visitor.
  const drawn = new WeakMap<Entry[], Map<string, { body: string; etag: string }>>();
  const keptFor = (entries: Entry[]) => {
    let kept = drawn.get(entries);
    if (!kept) {
      kept = new Map();
      drawn.set(entries, kept);
    }
    return kept;
  };
  // The cost chart per list of entries and language (its points are a scan of the whole board).
  const costCharts = new WeakMap<Entry[], Map<string, ReturnType<typeof boardCostChart>>>();
  const costChartOf = (entries: Entry[], lang: string, make: () => ReturnType<typeof boardCostChart>) => {
    let kept = costCharts.get(entries);
    if (!kept) {
      kept = new Map();
      costCharts.set(entries, kept);
    }
    if (!kept.has(lang)) kept.set(lang, make());
    return kept.get(lang) ?? null;
  };
  const places = new WeakMap<Entry[], Map<string, number>>();
  const placesOf = (entries: Entry[]) => {
    let p = places.get(entries);
    if (!p) {
      p = new Map(entries.flatMap((e, i) => (e.overall !== null ? [[e.id, i + 1] as const] : [])));
      places.set(entries, p);
    }
    return p;
  };

  const boardPage = async (c: Context<Env>, board: BoardName) => {
    limitReads(c, reads);
    const ctx = c.get('ctx');
    const view = parseView(board, c.req.queries());
    const entries = await lb.boards.board(board);
    const kept = keptFor(entries);
    const key = `page:${board}:${ctx.lang}:${ctx.path}`;
    let html = ctx.admin ? undefined : kept.get(key)?.body;
    if (html === undefined) {
      const shown = viewEntries(entries, view);
      const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
      const page = Math.min(view.page, pages);
      const start = (page - 1) * PAGE_SIZE;
      const rows = shown.slice(start, start + PAGE_SIZE);
      const chart = costChartOf(entries, ctx.lang, () => boardCostChart(entries, ctx.r));
      // Drawn by the scoring workers, kept by the chart cache while the priced entries stay as they are.
      const costChart = chart ? ((await charts.draw([chart]))[0] ?? null) : null;
      const at = (e: Entry | undefined) => e?.overall ?? -1;
      // The paper's rows stand where their overall puts them: on the page of the first entry that does not score
      // above them, in the board's own order; a search or another order shows entries only.
      const plain = view.sort === 'rank' && view.dir === 'asc' && view.q === '';
      const paperRows =
        board === 'public' && plain
          ? PAPER_ROWS.filter(
              (p) =>
                (page === 1 || at(shown[start - 1]) > p.overall) &&
                (page === pages || at(rows[rows.length - 1]) <= p.overall),
            )
          : [];
      // A rank is the entry's place among the scored entries, which come first in the board's order: in the board's
      // own order its index on the page (the board's thousands are not mapped for the page's hundred).
      const rankOf = plain
        ? (e: Entry) => (e.overall === null ? undefined : start + rows.indexOf(e) + 1)
        : (e: Entry) => placesOf(entries).get(e.id);
      html = `<!DOCTYPE html>\n${String(
        <BoardPage
          ctx={ctx}
          board={board}
          all={entries}
          entries={rows}
          rankOf={rankOf}
          paging={{ view: { ...view, page }, pages, start, found: shown.length }}
          paperRows={paperRows}
          ladder={lb.options.closedRelease === 'ladder'}
          ranking={lb.boards.ranking(board)}
          costChart={costChart}
        />,
      )}`;
      if (!ctx.admin && kept.size < KEPT_PER_LIST) kept.set(key, { body: html, etag: '' });
    }
    return c.html(html);
  };
  app.get('/', (c) => boardPage(c, 'public'));
  app.get('/board/:name{[a-z]+\\.csv}', async (c) => {
    const board = parseBoard(c.req.param('name').replace(/\.csv$/, ''));
    limitReads(c, reads);
    const entries = await lb.boards.board(board);
    // Written a few hundred rows at a time as the client reads, so that a large board never holds the event loop.
    const chunks = boardCsvChunks(board, entries);
    const encoder = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
    });
    const res = c.body(stream, 200, {
      'Content-Type': 'text/csv; charset=utf-8',
      'Content-Disposition': `attachment; filename="rumedbench-${board}.csv"`,
      'Cache-Control': board === 'public' ? `public, max-age=${PUBLIC_MAX_AGE_S}` : 'no-store',
    });
    if (board === 'public') res.headers.delete('Set-Cookie');
    return res;
  });
  app.get('/board/:name', (c) => boardPage(c, parseBoard(c.req.param('name'))));
  app.get('/api/boards/:name', async (c) => {
    const board = parseBoard(c.req.param('name'));
    limitReads(c, reads);
    const query = parseApiQuery(board, c.req.queries());
    const entries = await lb.boards.board(board);
    const kept = keptFor(entries);
    const key = `api:${board}:${query.limit}:${c.req.query('cursor') ?? ''}`;
    let answer = kept.get(key);
    if (!answer) {
      const page = apiPage(board, entries, query);
      const body = JSON.stringify({
        board,
        overall:
          board === 'public'
            ? 'mean of the five public task scores'
            : 'mean of the three closed task scores (under the Ladder, the release of the mean of every hidden task of the board)',
        ranking: rankingSummary(lb.boards.ranking(board)),
        total: entries.length,
        limit: query.limit,
        next_cursor: page.next,
        entries: page.entries.map(publicEntry),
        reference: board === 'public' ? PAPER_ROWS : [],
      });
      answer = { body, etag: etagOf(body) };
      if (kept.size < KEPT_PER_LIST) kept.set(key, answer);
    }
    return cacheableAnswer(c, {
      ...answer,
      contentType: 'application/json; charset=utf-8',
      scope: scopeOf(board),
    });
  });
  return app;
}
