/**
 * A board in pieces: the API's pages (a limit and an opaque cursor that names the last entry seen, so that a page
 * read after the board changed neither repeats nor skips an entry that kept its place), and the board page's views
 * (a search by model and team, a sort by any column, numbered pages). Every query value is hostile: each is checked
 * here, and a bad one is a 400 that says which value and what is allowed.
 */
import { z } from 'zod';
import type { BoardName } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { BOARD_TASKS } from '../score-upload.js';
import type { Entry } from './entries.js';
import { compareKeys, type OrderKey, orderKey } from './order.js';

export { compareKeys, type OrderKey, orderKey } from './order.js';

/** Entries an API page holds by default, and at most. */
export const API_LIMIT = { default: 100, max: 1000 } as const;
/** Entries a board page shows. */
export const PAGE_SIZE = 100;
/** The longest search a board page takes (characters). */
export const MAX_SEARCH = 100;
/** The longest cursor accepted: one that this server wrote is about 120 characters. */
const MAX_CURSOR = 400;
const DIGITS = /^[0-9]{1,7}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const cursorSchema = z
  .object({
    b: z.enum(['public', 'closed']),
    o: z.number().finite().nullable(),
    n: z.number().int().min(0).max(1000),
    c: z.string().max(64),
    i: z.string().max(64),
  })
  .strict();

/** A cursor: the board and the last entry of the page it follows, base64url JSON (opaque to clients by contract). */
export function encodeCursor(board: BoardName, last: Entry): string {
  const k = orderKey(last);
  return Buffer.from(
    JSON.stringify({ b: board, o: k.overall, n: k.tasks, c: k.created_at, i: k.id }),
  ).toString('base64url');
}

function badCursor(why: string): never {
  throw new HttpError(
    400,
    'BAD_CURSOR',
    `cursor: ${why}; use the next_cursor of a page of this board, or leave it out for the first page`,
  );
}

export function decodeCursor(board: BoardName, text: string): OrderKey {
  if (text.length > MAX_CURSOR) badCursor(`longer than ${MAX_CURSOR} characters`);
  if (!BASE64URL.test(text)) badCursor('not a cursor this server wrote');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    badCursor('not a cursor this server wrote');
  }
  const parsed = cursorSchema.safeParse(value);
  if (!parsed.success) badCursor('not a cursor this server wrote');
  if (parsed.data.b !== board) badCursor(`a cursor of the ${parsed.data.b} board, not the ${board} board`);
  return { overall: parsed.data.o, tasks: parsed.data.n, created_at: parsed.data.c, id: parsed.data.i };
}

/** One query parameter, given at most once (`?limit=1&limit=2` is refused, not read one way or the other). */
function single(
  query: Record<string, string[]>,
  name: string,
  code: 'BAD_LIMIT' | 'BAD_QUERY',
): string | undefined {
  const values = query[name];
  if (values === undefined) return undefined;
  if (values.length !== 1)
    throw new HttpError(400, code, `${name}: given ${values.length} times; give it once`);
  return values[0];
}

export interface ApiPageQuery {
  limit: number;
  after: OrderKey | null;
}

/** `?limit=&cursor=` of `GET /api/boards/:board`, from all of the request's query values. */
export function parseApiQuery(board: BoardName, query: Record<string, string[]>): ApiPageQuery {
  const limitText = single(query, 'limit', 'BAD_LIMIT');
  let limit: number = API_LIMIT.default;
  if (limitText !== undefined) {
    const n = DIGITS.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(n >= 1 && n <= API_LIMIT.max))
      throw new HttpError(
        400,
        'BAD_LIMIT',
        `limit: a whole number from 1 to ${API_LIMIT.max} (default ${API_LIMIT.default}); got "${limitText.slice(0, 20)}"`,
      );
    limit = n;
  }
  const cursor = single(query, 'cursor', 'BAD_QUERY');
  return { limit, after: cursor === undefined ? null : decodeCursor(board, cursor) };
}

/** The first index of `entries` (in the board's order) after `key`: a binary search. */
export function indexAfter(entries: readonly Entry[], key: OrderKey): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareKeys(orderKey(entries[mid] as Entry), key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** An API page: its entries (with their places in the board's order) and the cursor of the next, null at the end. */
export function apiPage(
  board: BoardName,
  entries: readonly Entry[],
  { limit, after }: ApiPageQuery,
): { start: number; entries: Entry[]; next: string | null } {
  const start = after === null ? 0 : indexAfter(entries, after);
  const page = entries.slice(start, start + limit);
  const last = page[page.length - 1];
  return {
    start,
    entries: page,
    next: last && start + page.length < entries.length ? encodeCursor(board, last) : null,
  };
}

/** What a board page may be sorted by: its order (rank), names, each task's score, the overalls, cost, age. */
export type SortKey =
  | 'rank'
  | 'model'
  | 'team'
  | 'overall'
  | 'overall_six'
  | 'cost'
  | 'submitted'
  | `task:${string}`;

export interface BoardView {
  sort: SortKey;
  dir: 'asc' | 'desc';
  /** Lower-cased search over model and team; '' for none. */
  q: string;
  page: number;
}

export const DEFAULT_VIEW: BoardView = { sort: 'rank', dir: 'asc', q: '', page: 1 };

/** The columns a board can be sorted by, as the `sort` parameter names them. */
export function sortKeys(board: BoardName): SortKey[] {
  return [
    'rank',
    'model',
    'team',
    ...BOARD_TASKS[board].map((t): SortKey => `task:${t}`),
    'overall',
    ...(board === 'public' ? (['overall_six'] as const) : []),
    'cost',
    'submitted',
  ];
}

/** Names read and numbers best first: the direction a column sorts in when none is asked for. */
export const defaultDir = (sort: SortKey): 'asc' | 'desc' =>
  sort === 'rank' || sort === 'model' || sort === 'team' || sort === 'cost' ? 'asc' : 'desc';

/** `?q=&sort=&dir=&page=` of a board page. */
export function parseView(board: BoardName, query: Record<string, string[]>): BoardView {
  const sortText = single(query, 'sort', 'BAD_QUERY');
  const sorts = sortKeys(board);
  if (sortText !== undefined && !sorts.includes(sortText as SortKey))
    throw new HttpError(400, 'BAD_QUERY', `sort: one of ${sorts.join(', ')}; got "${sortText.slice(0, 40)}"`);
  const sort = (sortText ?? 'rank') as SortKey;
  const dirText = single(query, 'dir', 'BAD_QUERY');
  if (dirText !== undefined && dirText !== 'asc' && dirText !== 'desc')
    throw new HttpError(400, 'BAD_QUERY', `dir: asc or desc; got "${dirText.slice(0, 20)}"`);
  const qText = single(query, 'q', 'BAD_QUERY') ?? '';
  if (qText.length > MAX_SEARCH) throw new HttpError(400, 'BAD_QUERY', `q: at most ${MAX_SEARCH} characters`);
  const pageText = single(query, 'page', 'BAD_QUERY');
  const page = pageText === undefined ? 1 : DIGITS.test(pageText) ? Number(pageText) : 0;
  if (page < 1)
    throw new HttpError(
      400,
      'BAD_QUERY',
      `page: a whole number from 1; got "${(pageText ?? '').slice(0, 20)}"`,
    );
  return { sort, dir: dirText ?? defaultDir(sort), q: searchText(qText), page };
}

/** How a search and the names it is matched against are compared: NFKC, lower case, spaces collapsed. */
export const searchText = (s: string): string =>
  s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

const sortValue = (e: Entry, sort: SortKey): number | string | null => {
  switch (sort) {
    case 'rank':
      return null;
    case 'model':
      return searchText(e.model);
    case 'team':
      return e.team ? searchText(e.team) : null;
    case 'overall':
      return e.overall;
    case 'overall_six':
      return e.overall_six;
    case 'cost':
      return e.usage?.cost_usd ?? null;
    case 'submitted':
      return e.created_at;
    default:
      return e.tasks[sort.slice('task:'.length)]?.score ?? null;
  }
};

/**
 * The entries a view shows, in its order, before paging: those whose model or team holds the search, sorted by the
 * column (missing values last whichever the direction; ties in the board's order). `entries` is in the board's order.
 */
export function viewEntries(entries: readonly Entry[], view: Pick<BoardView, 'sort' | 'dir' | 'q'>): Entry[] {
  const found = view.q
    ? entries.filter(
        (e) =>
          searchText(e.model).includes(view.q) || (e.team !== null && searchText(e.team).includes(view.q)),
      )
    : [...entries];
  if (view.sort === 'rank') return view.dir === 'asc' ? found : found.reverse();
  const at = new Map(entries.map((e, i) => [e.id, i]));
  const values = new Map(found.map((e) => [e.id, sortValue(e, view.sort)]));
  const sign = view.dir === 'asc' ? 1 : -1;
  return found.sort((a, b) => {
    const va = values.get(a.id) ?? null;
    const vb = values.get(b.id) ?? null;
    if (va === null || vb === null) {
      if (va !== vb) return va === null ? 1 : -1;
    } else if (va !== vb) return (va < vb ? -1 : 1) * sign;
    return (at.get(a.id) as number) - (at.get(b.id) as number);
  });
}
