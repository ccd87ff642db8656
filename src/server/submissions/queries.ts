/**
 * The uploads' queries: a team token by its hash, a retried upload by its idempotency key, the first upload of the same
 * content, the daily quotas, and a ladder's state before an upload climbs it (the row itself is stored by
 * db/shared.ts's `insertSubmission`, which campaigns use too).
 */
import type { BoardName, SubmissionRow, TokenRow } from '../db/schema.js';
import type { Q } from '../db/shared.js';

// The submission rows other concerns write too.
export { insertSubmission, LadderMoved, updateSubmission } from '../db/shared.js';

export async function findActiveToken(db: Q, tokenHash: string): Promise<TokenRow | undefined> {
  return db
    .selectFrom('tokens')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function findByIdempotencyKey(db: Q, key: string): Promise<SubmissionRow | undefined> {
  return db.selectFrom('submissions').selectAll().where('idempotency_key', '=', key).executeTakeFirst();
}

/**
 * The earliest visible, scored submission with this content on this board from the same uploader (token, or
 * address for anonymous uploads): hidden, rejected and other people's entries are never named.
 */
export async function firstWithHash(
  db: Q,
  board: BoardName,
  hash: string,
  who: { tokenId: string | null; address: string },
): Promise<string | undefined> {
  let q = db
    .selectFrom('submissions')
    .select('id')
    .where('board', '=', board)
    .where('content_hash', '=', hash)
    .where('status', '=', 'scored')
    .where('hidden', '=', 0);
  q =
    who.tokenId !== null
      ? q.where('token_id', '=', who.tokenId)
      : q.where('address', '=', who.address).where('token_id', 'is', null);
  const r = await q.orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
  return r?.id;
}

/**
 * Takes one unit of a daily quota if one is left: answers whether it was taken. One conditional UPDATE, so that
 * concurrent uploads (in any number of processes) cannot share the last unit.
 */
export async function reserveQuota(
  db: Q,
  slot: { key: string; scope: string; day: string },
  limit: number,
): Promise<boolean> {
  await db
    .insertInto('upload_quota')
    .values({ ...slot, used: 0 })
    .onConflict((oc) => oc.columns(['key', 'scope', 'day']).doNothing())
    .execute();
  const r = await db
    .updateTable('upload_quota')
    .set((eb) => ({ used: eb('used', '+', 1) }))
    .where('key', '=', slot.key)
    .where('scope', '=', slot.scope)
    .where('day', '=', slot.day)
    .where('used', '<', limit)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Gives a unit back (an upload that turned out not to count). */
export async function releaseQuota(db: Q, slot: { key: string; scope: string; day: string }): Promise<void> {
  await db
    .updateTable('upload_quota')
    .set((eb) => ({ used: eb('used', '-', 1) }))
    .where('key', '=', slot.key)
    .where('scope', '=', slot.scope)
    .where('day', '=', slot.day)
    .where('used', '>', 0)
    .execute();
}

export async function quotaUsed(db: Q, slot: { key: string; scope: string; day: string }): Promise<number> {
  const r = await db
    .selectFrom('upload_quota')
    .select('used')
    .where('key', '=', slot.key)
    .where('scope', '=', slot.scope)
    .where('day', '=', slot.day)
    .executeTakeFirst();
  return r ? Number(r.used) : 0;
}

/**
 * A ladder's version and its best (what its margin is measured against), as stored now: from the ladders row itself,
 * so that deleting or hiding the best's submission leaves the ladder where it stood (issue #57).
 */
export async function ladderState(
  db: Q,
  ladderKey: string,
): Promise<{ version: number | null; best?: { released: number; item_stats: string } }> {
  const l = await db
    .selectFrom('ladders')
    .select(['version', 'best_released', 'best_items'])
    .where('key', '=', ladderKey)
    .executeTakeFirst();
  if (!l) return { version: null };
  return {
    version: Number(l.version),
    ...(l.best_released !== null && l.best_items !== null
      ? { best: { released: Number(l.best_released), item_stats: l.best_items } }
      : {}),
  };
}
