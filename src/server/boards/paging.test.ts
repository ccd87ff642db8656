/** The board's pieces as pure functions: cursors, the API's limit, the page's view, and If-None-Match. */
import { describe, expect, it } from 'vitest';
import { HttpError } from '../errors.js';
import { noneMatch } from '../middleware/cache.js';
import type { Entry } from './entries.js';
import {
  apiPage,
  decodeCursor,
  encodeCursor,
  indexAfter,
  orderKey,
  parseApiQuery,
  parseView,
  viewEntries,
} from './paging.js';

const entry = (id: string, overall: number | null, extra: Partial<Entry> = {}): Entry =>
  ({
    id,
    created_at: `2026-01-01T00:00:${id.padStart(2, '0')}.000Z`,
    board: 'public',
    model: `model ${id}`,
    team: id === '3' ? 'Лаборатория' : 'lab',
    overall,
    overall_six: null,
    usage: null,
    tasks:
      overall === null
        ? {}
        : { RuMedNLI: { n: 1, metrics: {}, score: 100 - overall, score_ci: null, ci: {} } },
    ...extra,
  }) as Entry;

/** A board in its order: 1 best, 5 without an overall. */
const BOARD = [entry('1', 90), entry('2', 80), entry('3', 80), entry('4', 70), entry('5', null)];

const refusal = (f: () => unknown): [number, string] | 'accepted' => {
  try {
    f();
    return 'accepted';
  } catch (e) {
    if (e instanceof HttpError) return [e.status, e.code];
    throw e;
  }
};

describe('API pages and cursors', () => {
  it('walks the board in its order with each cursor naming the last entry seen', () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const page = apiPage(
        'public',
        BOARD,
        parseApiQuery('public', { limit: ['2'], ...(cursor ? { cursor: [cursor] } : {}) }),
      );
      ids.push(...page.entries.map((e) => e.id));
      cursor = page.next;
      if (cursor === null) break;
    }
    expect(ids).toEqual(['1', '2', '3', '4', '5']);
  });

  it('neither repeats nor skips an entry that kept its place when the board changes between pages', () => {
    const first = apiPage('public', BOARD, { limit: 2, after: null });
    // A new best entry and the removal of one already seen.
    const changed = [entry('9', 99), ...BOARD.filter((e) => e.id !== '1')];
    const next = apiPage('public', changed, {
      limit: 2,
      after: decodeCursor('public', first.next as string),
    });
    expect(next.entries.map((e) => e.id)).toEqual(['3', '4']);
    expect(indexAfter(changed, orderKey(BOARD[4] as Entry))).toBe(changed.length);
  });

  it('refuses every limit but a whole number from 1 to 1000, given once, with a 400 that says so', () => {
    expect(
      ['0', '1001', '-1', '1e3', '10.5', ' 5', 'abc', '', '00000001000000'].map((l) =>
        refusal(() => parseApiQuery('public', { limit: [l] })),
      ),
    ).toEqual(Array(9).fill([400, 'BAD_LIMIT']));
    expect(refusal(() => parseApiQuery('public', { limit: ['1', '2'] }))).toEqual([400, 'BAD_LIMIT']);
    expect([parseApiQuery('public', {}).limit, parseApiQuery('public', { limit: ['1000'] }).limit]).toEqual([
      100, 1000,
    ]);
  });

  it('refuses cursors it did not write, of another board, too long, or doctored', () => {
    const good = encodeCursor('public', BOARD[1] as Entry);
    const doctored = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const cursors = [
      'not a cursor!',
      'x'.repeat(401),
      Buffer.from('{"b":"public"').toString('base64url'),
      doctored({ b: 'public', o: 1, n: 1, c: 'x', i: 'y', extra: 1 }),
      doctored({ b: 'public', o: '1', n: 1, c: 'x', i: 'y' }),
      doctored({ b: 'public', o: 1, n: 1, c: 'x'.repeat(65), i: 'y' }),
      doctored(['public']),
      doctored({ b: 'secret', o: 1, n: 1, c: 'x', i: 'y' }),
      encodeCursor('closed', BOARD[1] as Entry),
    ];
    expect(cursors.map((c) => refusal(() => decodeCursor('public', c)))).toEqual(
      Array(9).fill([400, 'BAD_CURSOR']),
    );
    expect(refusal(() => parseApiQuery('public', { cursor: [good, good] }))).toEqual([400, 'BAD_QUERY']);
    expect(decodeCursor('public', good)).toEqual(orderKey(BOARD[1] as Entry));
  });
});

describe('board page views', () => {
  it('searches model and team alike (NFKC, any case) and sorts by a column with missing values last', () => {
    const found = (q: Record<string, string[]>) =>
      viewEntries(BOARD, parseView('public', q)).map((e) => e.id);
    expect(found({ q: ['ЛАБОРАТОРИЯ'] })).toEqual(['3']);
    expect(found({ q: ['ＭＯＤＥＬ 4'] })).toEqual(['4']);
    expect(found({ sort: ['task:RuMedNLI'] })).toEqual(['4', '2', '3', '1', '5']);
    expect(found({ sort: ['task:RuMedNLI'], dir: ['asc'] })).toEqual(['1', '2', '3', '4', '5']);
    expect(found({ sort: ['overall'], dir: ['asc'] })).toEqual(['4', '2', '3', '1', '5']);
    expect(found({ sort: ['rank'], dir: ['desc'] })).toEqual(['5', '4', '3', '2', '1']);
    expect(found({ sort: ['team'] })).toEqual(['1', '2', '4', '5', '3']);
  });

  it('refuses a sort, direction, page or search it does not take', () => {
    expect(
      [
        { sort: ['nope'] },
        { sort: ['task:RuMedTest'] },
        { dir: ['up'] },
        { page: ['0'] },
        { page: ['-2'] },
        { page: ['1', '2'] },
        { q: ['x'.repeat(101)] },
      ].map((q) => refusal(() => parseView('public', q))),
    ).toEqual(Array(7).fill([400, 'BAD_QUERY']));
    expect(parseView('closed', { sort: ['task:RuMedTest'] }).dir).toBe('desc');
  });
});

describe('If-None-Match', () => {
  it('matches the tag in a list, weakly, or *, and nothing else', () => {
    const tag = '"abc"';
    expect(
      [undefined, '"abc"', 'W/"abc"', '"x", "abc"', '*', '"abcd"', 'abc', ''].map((h) => noneMatch(h, tag)),
    ).toEqual([false, true, true, true, true, false, false, false]);
  });
});
