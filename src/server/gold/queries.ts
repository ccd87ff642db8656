/**
 * The held gold's queries: the gold itself and its version, and what a rescore reads and resets (a board's
 * submissions, its ladders); the results it writes go through db/shared.ts's `updateResults`, which campaigns use too.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { HeldGold } from '../../scoring/reference.js';
import type { Split } from '../../tasks/types.js';
import type { BoardName, Database, SubmissionRow } from '../db/schema.js';
import { addAudit, getSetting, inChunks, type Q, setSetting } from '../db/shared.js';

// The submission rows other concerns use too.
export { getSubmissionFiles, updateResults } from '../db/shared.js';

/** Replaces a task's held gold of one split and bumps the gold version, in one transaction. */
export async function replaceHeldGold(
  db: Kysely<Database>,
  split: Split,
  task: string,
  answers: readonly { id: string; answer: string | readonly string[] }[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('held_gold').where('split', '=', split).where('task', '=', task).execute();
    await inChunks(answers, 500, (chunk) =>
      tx
        .insertInto('held_gold')
        .values(chunk.map((a) => ({ split, task, item_id: a.id, answer: JSON.stringify(a.answer) })))
        .execute(),
    );
    await setSetting(tx, 'gold_version', randomUUID());
    await addAudit(tx, 'admin', 'import-gold', null, { task, split, items: answers.length });
  });
}

export async function loadHeldGold(db: Q): Promise<HeldGold> {
  const rows = await db.selectFrom('held_gold').select(['split', 'task', 'item_id', 'answer']).execute();
  const out: Partial<Record<Split, Record<string, Map<string, string | readonly string[]>>>> = {};
  for (const r of rows) {
    out[r.split as Split] ??= {};
    const split = out[r.split as Split] as Record<string, Map<string, string | readonly string[]>>;
    split[r.task] ??= new Map();
    split[r.task]?.set(r.item_id, JSON.parse(r.answer) as string | string[]);
  }
  return out;
}

export async function goldVersion(db: Q): Promise<string> {
  return (await getSetting(db, 'gold_version')) ?? 'none';
}

export async function submissionsOfBoard(db: Q, board: BoardName): Promise<SubmissionRow[]> {
  return db
    .selectFrom('submissions')
    .selectAll()
    .where('board', '=', board)
    .orderBy('created_at', 'asc')
    .execute();
}

/** A ladder's best as the ladders row keeps it (it outlives the best's submission). */
export interface LadderBest {
  id: string | null;
  released: number;
  item_stats: string;
}

/** The stored best of each of these ladders that has one. */
export async function ladderBests(db: Q, keys: readonly string[]): Promise<Map<string, LadderBest>> {
  const out = new Map<string, LadderBest>();
  await inChunks(keys, 500, async (chunk) => {
    const rows = await db
      .selectFrom('ladders')
      .select(['key', 'best_id', 'best_released', 'best_items'])
      .where('key', 'in', chunk)
      .execute();
    for (const r of rows)
      if (r.best_released !== null && r.best_items !== null)
        out.set(r.key, { id: r.best_id, released: Number(r.best_released), item_stats: r.best_items });
  });
  return out;
}

/** After a rescore: each ladder's best as climbed again (null: none), its version moved on. */
export async function resetLadders(db: Q, bests: ReadonlyMap<string, LadderBest | null>): Promise<void> {
  for (const [key, best] of bests) {
    const state = {
      best_id: best?.id ?? null,
      best_released: best?.released ?? null,
      best_items: best?.item_stats ?? null,
    };
    const r = await db
      .updateTable('ladders')
      .set((eb) => ({ version: eb('version', '+', 1), ...state }))
      .where('key', '=', key)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0)
      await db
        .insertInto('ladders')
        .values({ key, version: 1, ...state })
        .onConflict((oc) => oc.column('key').doUpdateSet(state))
        .execute();
  }
}
