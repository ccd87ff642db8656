/** The boards: the public and closed pages, their CSV and JSON exports. */
import { type Context, Hono } from 'hono';
import { PAPER_ROWS } from '../../report/paper.js';
import { boardCostChart } from '../charts.js';
import type { BoardName } from '../db/schema.js';
import type { Env, RouteDeps } from '../http.js';
import type { Entry } from './entries.js';
import { boardCsv, parseBoard, publicEntry, rankingSummary } from './present.js';
import { BoardPage } from './views.js';

export function boardRoutes({ lb, charts }: RouteDeps): Hono<Env> {
  const app = new Hono<Env>();
  // A board's page is drawn once per list of entries (the service caches the list), language and path. Only pages
  // seen without the admin's powers are kept, so that none rendered for the admin can be served to a visitor.
  const boardHtml = new WeakMap<Entry[], Map<string, string>>();
  const boardPage = async (c: Context<Env>, board: BoardName) => {
    const ctx = c.get('ctx');
    const entries = await lb.boards.board(board);
    let pages = boardHtml.get(entries);
    if (!pages) {
      pages = new Map();
      boardHtml.set(entries, pages);
    }
    const key = `${board}:${ctx.lang}:${ctx.path}`;
    let html = ctx.admin ? undefined : pages.get(key);
    if (html === undefined) {
      const chart = boardCostChart(entries, ctx.r);
      // Drawn by the scoring workers, kept by the chart cache while the priced entries stay as they are.
      const costChart = chart ? ((await charts.draw([chart]))[0] ?? null) : null;
      html = `<!DOCTYPE html>\n${String(
        <BoardPage
          ctx={ctx}
          board={board}
          entries={entries}
          paperRows={board === 'public' ? PAPER_ROWS : []}
          ladder={lb.options.closedRelease === 'ladder'}
          ranking={lb.boards.ranking(board)}
          costChart={costChart}
        />,
      )}`;
      if (!ctx.admin && pages.size < 64) pages.set(key, html);
    }
    return c.html(html);
  };
  app.get('/', (c) => boardPage(c, 'public'));
  app.get('/board/:name{[a-z]+\\.csv}', async (c) => {
    const board = parseBoard(c.req.param('name').replace(/\.csv$/, ''));
    c.header('Content-Type', 'text/csv; charset=utf-8');
    c.header('Content-Disposition', `attachment; filename="rumedbench-${board}.csv"`);
    return c.body(boardCsv(board, await lb.boards.board(board)));
  });
  app.get('/board/:name', (c) => boardPage(c, parseBoard(c.req.param('name'))));
  app.get('/api/boards/:name', async (c) => {
    const board = parseBoard(c.req.param('name'));
    const entries = await lb.boards.board(board);
    return c.json({
      board,
      overall:
        board === 'public'
          ? 'mean of the five public task scores'
          : 'mean of the three closed task scores (under the Ladder, the release of the mean of every hidden task of the board)',
      ranking: rankingSummary(lb.boards.ranking(board)),
      entries: entries.map(publicEntry),
      reference: board === 'public' ? PAPER_ROWS : [],
    });
  });
  return app;
}
