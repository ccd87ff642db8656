/**
 * Migration 0011: a database from before "one ladder per uploader and board" keeps each team's best and release,
 * under the new key, and subset ladders stop counting. Migration 0017: each ladder keeps its best's state itself, so
 * that deleting the best's row leaves the ladder where it stood.
 */
import { describe, expect, it } from 'vitest';
import { databaseBefore, ENGINES } from '../../../test/helpers/engines.js';
import { ladderState } from '../submissions/queries.js';
import { openDatabase } from './connect.js';

/** A submission row as an older version stored it. */
const stored = (id: string, board: string, key: string, released: number | null, at: string) => ({
  id,
  created_at: at,
  board,
  status: 'scored',
  model: id,
  team: 'A',
  description: '',
  kind: 'LLM',
  open_weights: 0,
  address: '127.0.0.1',
  content_hash: id,
  result: '{}',
  summary: '{}',
  response: '{}',
  files: '[]',
  ladder_key: key,
  released,
});

describe('migration 0011: one ladder per uploader and board', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    it('rewrites old keys, marks each ladder’s best, and leaves subset ladders out', async () => {
      const { target, db } = await databaseBefore(engine, '0011');
      const row = (id: string, board: string, key: string, released: number | null, at: string) => ({
        ...stored(id, board, key, released, at),
        team: 'A|B',
        item_scores: '{}',
        item_stats: '{}',
      });
      const full = 'team:A|B|RuMedDaNet,RuMedNLI,RuMedTest';
      await db
        .insertInto('submissions')
        .values([
          // A subset ladder released higher first: it must not become the best of the team's one ladder.
          row('subset', 'closed', 'team:A|B|RuMedDaNet', 80, '2026-01-01T00:00:00Z'),
          row('first', 'closed', full, 50, '2026-01-02T00:00:00Z'),
          row('best', 'closed', full, 60, '2026-01-03T00:00:00Z'),
          row('again', 'closed', full, 60, '2026-01-04T00:00:00Z'),
          row('ecg', 'public', 'team:A|B|public|ECG2Pathology', 30, '2026-01-05T00:00:00Z'),
          row('pending', 'closed', full, null, '2026-01-06T00:00:00Z'),
        ])
        .execute();
      await db.destroy();

      const opened = await openDatabase(target);
      try {
        const rows = await opened.db
          .selectFrom('submissions')
          .select(['id', 'ladder_key', 'ladder_improved', 'item_scores'])
          .orderBy('created_at')
          .execute();
        expect(rows).toEqual([
          { id: 'subset', ladder_key: 'team:A|B|closed', ladder_improved: 0, item_scores: null },
          { id: 'first', ladder_key: 'team:A|B|closed', ladder_improved: 0, item_scores: null },
          { id: 'best', ladder_key: 'team:A|B|closed', ladder_improved: 1, item_scores: null },
          { id: 'again', ladder_key: 'team:A|B|closed', ladder_improved: 0, item_scores: null },
          { id: 'ecg', ladder_key: 'team:A|B|public', ladder_improved: 1, item_scores: null },
          { id: 'pending', ladder_key: 'team:A|B|closed', ladder_improved: null, item_scores: null },
        ]);
        expect(await ladderState(opened.db, 'team:A|B|closed')).toEqual({
          version: 1,
          best: { released: 60, item_stats: '{}' },
        });
        expect(await ladderState(opened.db, 'team:A|B|public')).toMatchObject({ version: 1 });
        expect(await ladderState(opened.db, 'address:1.2.3.4|closed')).toEqual({ version: null });
      } finally {
        await opened.close();
      }
    });
  });
});

describe('migration 0017: each ladder keeps its best’s state', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    it('copies the best’s release and counts onto its ladder, which outlive the row', async () => {
      const { target, db } = await databaseBefore(engine, '0017');
      const row = (id: string, released: number, stats: string) => ({
        ...stored(id, 'closed', 'team:A|closed', released, `2026-01-0${id.length}T00:00:00Z`),
        item_stats: stats,
      });
      await db
        .insertInto('submissions')
        .values([row('best', 61.5, '{"RuMedDaNet":"b"}'), row('later', 58, '{"RuMedDaNet":"l"}')])
        .execute();
      await db.insertInto('ladders').values({ key: 'team:A|closed', best_id: 'best', version: 2 }).execute();
      await db.destroy();

      const opened = await openDatabase(target);
      try {
        await opened.db.deleteFrom('submissions').where('id', '=', 'best').execute();
        expect(await ladderState(opened.db, 'team:A|closed')).toEqual({
          version: 2,
          best: { released: 61.5, item_stats: '{"RuMedDaNet":"b"}' },
        });
      } finally {
        await opened.close();
      }
    });
  });
});
