/**
 * Every query the leaderboard makes, one function each. The rest of the server never writes SQL; every value goes
 * through Kysely as a bound parameter. Counts are normalised to numbers (pg returns them as strings).
 */
import { randomUUID } from 'node:crypto';
import type { Insertable, Kysely, Transaction } from 'kysely';
import type { HeldGold } from '../../scoring/reference.js';
import type { Split } from '../../tasks/types.js';
import type {
  AnnotatorRow,
  AnnotatorsTable,
  AnswerRow,
  AssignmentsTable,
  AuditRow,
  BoardName,
  CampaignRow,
  CampaignsTable,
  Database,
  ListedRow,
  NewSubmission,
  SubmissionRow,
  SubmissionsTable,
  TokenRow,
} from './schema.js';

type Q = Kysely<Database> | Transaction<Database>;

/** Writes a submission, its files and an audit line in one transaction: all or nothing. */
/** A ladder moved on (another upload, in any process) since its state was read: the step is computed again. */
export class LadderMoved extends Error {
  constructor(readonly key: string) {
    super(`ladder ${key} moved on while an upload was measured against it`);
    this.name = 'LadderMoved';
  }
}

/**
 * Stores a submission with its files. With `ladder`, in the same transaction, the ladder's version moves from the one
 * its step was computed against (null: no row yet) and its best becomes this upload where it improved; where the
 * version moved meanwhile nothing is stored and {@link LadderMoved} is thrown.
 */
export async function insertSubmission(
  db: Kysely<Database>,
  row: NewSubmission,
  files: readonly { name: string; content: string }[],
  ladder?: { key: string; version: number | null; improved: boolean },
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    // The ladder first: on SQLite its write takes the database's write lock, on PostgreSQL the row's lock, so the
    // version read is the one the upload is measured against, or the step is computed again.
    if (ladder) {
      const moved =
        ladder.version === null
          ? (
              await tx
                .insertInto('ladders')
                .values({ key: ladder.key, best_id: ladder.improved ? row.id : null, version: 1 })
                .onConflict((oc) => oc.column('key').doNothing())
                .executeTakeFirst()
            ).numInsertedOrUpdatedRows
          : (
              await tx
                .updateTable('ladders')
                .set((eb) => ({
                  version: eb('version', '+', 1),
                  ...(ladder.improved ? { best_id: row.id } : {}),
                }))
                .where('key', '=', ladder.key)
                .where('version', '=', ladder.version)
                .executeTakeFirst()
            ).numUpdatedRows;
      if (Number(moved ?? 0) !== 1) throw new LadderMoved(ladder.key);
    }
    await tx.insertInto('submissions').values(row).execute();
    if (files.length > 0) {
      await tx
        .insertInto('submission_files')
        .values(files.map((f) => ({ submission_id: row.id, name: f.name, content: f.content })))
        .execute();
    }
    await addAudit(tx, row.token_id ? `token:${row.token_id}` : `address:${row.address}`, 'upload', row.id, {
      status: row.status,
      board: row.board,
    });
  });
}

export async function getSubmission(db: Q, id: string): Promise<SubmissionRow | undefined> {
  return db.selectFrom('submissions').selectAll().where('id', '=', id).executeTakeFirst();
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

const LISTED = [
  'id',
  'created_at',
  'board',
  'status',
  'model',
  'team',
  'description',
  'link',
  'kind',
  'params',
  'open_weights',
  'token_id',
  'address',
  'content_hash',
  'duplicate_of',
  'idempotency_key',
  'summary',
  'overall',
  'hidden',
  'flagged',
  'verified',
  'platform_run',
  'trust',
  'usage',
  'source',
  'files',
  'ladder_key',
  'released',
  'ladder_improved',
] as const;

/** Scored submissions of a board (what its page shows): visible ones, or all for the admin. */
export async function listBoard(
  db: Q,
  board: BoardName,
  options: { includeHidden?: boolean } = {},
): Promise<ListedRow[]> {
  let q = db
    .selectFrom('submissions')
    .select(LISTED)
    .where('board', '=', board)
    .where('status', '=', 'scored');
  if (!options.includeHidden) q = q.where('hidden', '=', 0);
  return q.orderBy('created_at', 'desc').execute();
}

/** Some rows of a board, if they are visible and scored (the rows of new uploads). */
export async function listBoardRows(db: Q, board: BoardName, ids: readonly string[]): Promise<ListedRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('submissions')
    .select(LISTED)
    .where('board', '=', board)
    .where('status', '=', 'scored')
    .where('hidden', '=', 0)
    .where('id', 'in', ids)
    .execute();
}

/** What a board's ranking needs of its visible scored entries: who climbs which Ladder, and the per-item counts. */
export async function rankableRows(
  db: Q,
  board: BoardName,
): Promise<
  Pick<
    SubmissionRow,
    'id' | 'created_at' | 'ladder_key' | 'released' | 'ladder_improved' | 'summary' | 'source'
  >[]
> {
  return db
    .selectFrom('submissions')
    .select(['id', 'created_at', 'ladder_key', 'released', 'ladder_improved', 'summary', 'source'])
    .where('board', '=', board)
    .where('status', '=', 'scored')
    .where('hidden', '=', 0)
    .execute();
}

/** The per-item counts of some entries (null: not kept yet). */
export async function itemStatsOf(
  db: Q,
  ids: readonly string[],
): Promise<{ id: string; item_stats: string | null }[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('submissions').select(['id', 'item_stats']).where('id', 'in', ids).execute();
}

/** Keeps an entry's per-item counts (filled in for entries scored before they were kept). */
export async function setItemStats(db: Q, id: string, itemStats: string): Promise<void> {
  await db.updateTable('submissions').set({ item_stats: itemStats }).where('id', '=', id).execute();
}

/** The kept replicate rows of one task of some entries. */
export async function replicateRowsOf(
  db: Q,
  task: string,
  ids: readonly string[],
): Promise<{ submission_id: string; key: string; data: string }[]> {
  const out: { submission_id: string; key: string; data: string }[] = [];
  for (let i = 0; i < ids.length; i += 500)
    out.push(
      ...(await db
        .selectFrom('replicate_rows')
        .select(['submission_id', 'key', 'data'])
        .where('task', '=', task)
        .where('submission_id', 'in', ids.slice(i, i + 500))
        .execute()),
    );
  return out;
}

/** Keeps replicate rows, replacing an entry's earlier row of the same task. */
export async function saveReplicateRows(
  db: Q,
  rows: readonly { submission_id: string; task: string; key: string; data: string }[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows.slice(i, i + 100);
    await db
      .insertInto('replicate_rows')
      .values(chunk)
      .onConflict((oc) =>
        oc.columns(['submission_id', 'task']).doUpdateSet((eb) => ({
          key: eb.ref('excluded.key'),
          data: eb.ref('excluded.data'),
        })),
      )
      .execute();
  }
}

/** Drops one task's replicate rows of entries no longer ranked (deleted, hidden, rejected). */
export async function dropReplicateRows(db: Q, task: string, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 200)
    await db
      .deleteFrom('replicate_rows')
      .where('task', '=', task)
      .where('submission_id', 'in', ids.slice(i, i + 200))
      .execute();
}

/** Every submission, newest first, for the admin (rejected and hidden ones too). */
export async function listAll(db: Q, limit = 500): Promise<ListedRow[]> {
  return db.selectFrom('submissions').select(LISTED).orderBy('created_at', 'desc').limit(limit).execute();
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
 * The Ladder's current best for `ladderKey` (which names the board and the tasks): the highest released score, the
 * earliest of ties.
 */
/** A ladder's version and its best (the submission its margin is measured against), as stored now. */
export async function ladderState(
  db: Q,
  ladderKey: string,
): Promise<{ version: number | null; best?: { released: number; item_stats: string } }> {
  const l = await db
    .selectFrom('ladders')
    .select(['version', 'best_id'])
    .where('key', '=', ladderKey)
    .executeTakeFirst();
  if (!l) return { version: null };
  const b = l.best_id
    ? await db
        .selectFrom('submissions')
        .select(['released', 'item_stats'])
        .where('id', '=', l.best_id)
        .where('status', '=', 'scored')
        .executeTakeFirst()
    : undefined;
  return {
    version: Number(l.version),
    ...(b && b.released !== null && b.item_stats !== null
      ? { best: { released: Number(b.released), item_stats: b.item_stats } }
      : {}),
  };
}

/** After a rescore: each ladder's best as climbed again (null: none), its version moved on. */
export async function resetLadders(db: Q, bests: ReadonlyMap<string, string | null>): Promise<void> {
  for (const [key, best] of bests) {
    const r = await db
      .updateTable('ladders')
      .set((eb) => ({ version: eb('version', '+', 1), best_id: best }))
      .where('key', '=', key)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0)
      await db
        .insertInto('ladders')
        .values({ key, best_id: best, version: 1 })
        .onConflict((oc) => oc.column('key').doUpdateSet({ best_id: best }))
        .execute();
  }
}

export async function getSubmissionFiles(db: Q, id: string): Promise<{ name: string; content: string }[]> {
  return db
    .selectFrom('submission_files')
    .select(['name', 'content'])
    .where('submission_id', '=', id)
    .orderBy('name')
    .execute();
}

type EditableFields = Partial<
  Pick<SubmissionsTable, 'model' | 'team' | 'description' | 'link' | 'kind' | 'params' | 'open_weights'>
>;
export interface Marks {
  hidden?: number;
  flagged?: number;
  verified?: number;
  platform_run?: string;
}

/** An admin change to a submission, logged in the same transaction. */
export async function updateSubmission(
  db: Kysely<Database>,
  id: string,
  change: EditableFields & Marks,
  actor: string,
  action: string,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.updateTable('submissions').set(change).where('id', '=', id).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, actor, action, id, change);
    return true;
  });
}

/** Removes a submission and its files; the audit log keeps what it was. */
export async function deleteSubmission(db: Kysely<Database>, id: string, actor: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const row = await getSubmission(tx, id);
    if (!row) return false;
    await tx.deleteFrom('submission_files').where('submission_id', '=', id).execute();
    await tx.deleteFrom('submissions').where('id', '=', id).execute();
    const { result: _result, response: _response, files: _files, ...kept } = row;
    await addAudit(tx, actor, 'delete', id, kept);
    return true;
  });
}

// The log is read newest first by time; two actions in one millisecond would otherwise come back in random (id)
// order. Within a process, each entry is stamped at least a millisecond after the one before.
let lastAudit = 0;
function auditTime(): string {
  lastAudit = Math.max(Date.now(), lastAudit + 1);
  return new Date(lastAudit).toISOString();
}

export async function addAudit(
  db: Q,
  actor: string,
  action: string,
  submissionId: string | null,
  detail: unknown,
): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: randomUUID(),
      at: auditTime(),
      actor,
      action,
      submission_id: submissionId,
      detail: JSON.stringify(detail),
    })
    .execute();
}

export async function listAudit(db: Q, limit = 200): Promise<AuditRow[]> {
  return db.selectFrom('audit_log').selectAll().orderBy('at', 'desc').orderBy('id').limit(limit).execute();
}

// Tokens

export async function createToken(db: Kysely<Database>, team: string, tokenHash: string): Promise<TokenRow> {
  const row: TokenRow = {
    id: randomUUID(),
    team,
    token_hash: tokenHash,
    created_at: new Date().toISOString(),
    revoked_at: null,
  };
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('tokens').values(row).execute();
    await addAudit(tx, 'admin', 'token-create', null, { id: row.id, team });
  });
  return row;
}

export async function findActiveToken(db: Q, tokenHash: string): Promise<TokenRow | undefined> {
  return db
    .selectFrom('tokens')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function revokeToken(db: Kysely<Database>, id: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('tokens')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, 'admin', 'token-revoke', null, { id });
    return true;
  });
}

export async function listTokens(db: Q): Promise<TokenRow[]> {
  return db.selectFrom('tokens').selectAll().orderBy('created_at').execute();
}

// Admin sessions

export async function createAdminSession(
  db: Q,
  row: { token_hash: string; expires_at: string; address: string },
): Promise<void> {
  await db
    .insertInto('admin_sessions')
    .values({ ...row, created_at: new Date().toISOString() })
    .execute();
}

export async function adminSessionAlive(db: Q, tokenHash: string, now = new Date()): Promise<boolean> {
  const r = await db
    .selectFrom('admin_sessions')
    .select('token_hash')
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', now.toISOString())
    .executeTakeFirst();
  return r !== undefined;
}

/** Deletes one session (sign-out) and every expired one. */
export async function endAdminSession(db: Q, tokenHash: string, now = new Date()): Promise<void> {
  await db
    .deleteFrom('admin_sessions')
    .where((eb) => eb.or([eb('token_hash', '=', tokenHash), eb('expires_at', '<=', now.toISOString())]))
    .execute();
}

// Settings

export async function getSetting(db: Q, key: string): Promise<string | undefined> {
  const r = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
  return r?.value;
}

export async function setSetting(db: Q, key: string, value: string): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
    .execute();
}

/** Inserts the setting unless it exists; returns the value that is stored afterwards (the first writer's). */
export async function setSettingOnce(db: Q, key: string, value: string): Promise<string> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  return (await getSetting(db, key)) as string;
}

// Gold the host holds

/** Replaces a task's held gold of one split and bumps the gold version, in one transaction. */
export async function replaceHeldGold(
  db: Kysely<Database>,
  split: Split,
  task: string,
  answers: readonly { id: string; answer: string | readonly string[] }[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('held_gold').where('split', '=', split).where('task', '=', task).execute();
    // Batches keep each statement under SQLite's and PostgreSQL's parameter limits.
    for (let i = 0; i < answers.length; i += 500) {
      await tx
        .insertInto('held_gold')
        .values(
          answers
            .slice(i, i + 500)
            .map((a) => ({ split, task, item_id: a.id, answer: JSON.stringify(a.answer) })),
        )
        .execute();
    }
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

/** Re-scored results after a gold import, written in one transaction. */
export async function updateResults(
  db: Kysely<Database>,
  rows: readonly {
    id: string;
    result: string;
    summary: string;
    overall: number | null;
    status: SubmissionRow['status'];
    released: number | null;
    ladder_improved: number | null;
    item_stats: string | null;
  }[],
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (const r of rows) {
      await tx
        .updateTable('submissions')
        .set({
          result: r.result,
          summary: r.summary,
          overall: r.overall,
          status: r.status,
          released: r.released,
          ladder_improved: r.ladder_improved,
          item_stats: r.item_stats,
        })
        .where('id', '=', r.id)
        .execute();
    }
    await addAudit(tx, 'admin', 'rescore', null, { submissions: rows.length });
  });
}

export async function submissionsOfBoard(db: Q, board: BoardName): Promise<SubmissionRow[]> {
  return db
    .selectFrom('submissions')
    .selectAll()
    .where('board', '=', board)
    .orderBy('created_at', 'asc')
    .execute();
}

// Human evaluation campaigns

interface NewCampaign {
  campaign: Insertable<CampaignsTable>;
  annotators: Insertable<AnnotatorsTable>[];
  assignments: Insertable<AssignmentsTable>[];
}

/** A campaign with its annotators and every assignment, in one transaction. */
export async function createCampaign(db: Kysely<Database>, c: NewCampaign): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('campaigns').values(c.campaign).execute();
    await tx.insertInto('annotators').values(c.annotators).execute();
    for (let i = 0; i < c.assignments.length; i += 500) {
      await tx
        .insertInto('assignments')
        .values(c.assignments.slice(i, i + 500))
        .execute();
    }
    await addAudit(tx, 'admin', 'campaign-create', null, {
      id: c.campaign.id,
      task: c.campaign.task,
      split: c.campaign.split,
      annotators: c.annotators.length,
      assignments: c.assignments.length,
    });
  });
}

export async function getCampaign(db: Q, id: string): Promise<CampaignRow | undefined> {
  return db.selectFrom('campaigns').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listCampaigns(db: Q): Promise<CampaignRow[]> {
  return db.selectFrom('campaigns').selectAll().orderBy('created_at', 'desc').execute();
}

export async function updateCampaign(
  db: Kysely<Database>,
  id: string,
  change: Partial<Pick<CampaignsTable, 'status' | 'guidelines' | 'submission_id'>>,
  action: string,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.updateTable('campaigns').set(change).where('id', '=', id).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, 'admin', action, null, { campaign: id, ...change });
    return true;
  });
}

export async function annotatorsOf(db: Q, campaignId: string): Promise<AnnotatorRow[]> {
  return db
    .selectFrom('annotators')
    .selectAll()
    .where('campaign_id', '=', campaignId)
    .orderBy('position')
    .execute();
}

export async function findAnnotator(db: Q, tokenHash: string): Promise<AnnotatorRow | undefined> {
  return db.selectFrom('annotators').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function revokeAnnotator(db: Kysely<Database>, id: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('annotators')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, 'admin', 'annotator-revoke', null, { annotator: id });
    return true;
  });
}

/** An annotator's queue, in order. */
export async function annotatorQueue(db: Q, annotatorId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('assignments')
    .select('item_id')
    .where('annotator_id', '=', annotatorId)
    .orderBy('position')
    .execute();
  return rows.map((r) => r.item_id);
}

export async function isAssigned(db: Q, annotatorId: string, itemId: string): Promise<boolean> {
  const r = await db
    .selectFrom('assignments')
    .select('item_id')
    .where('annotator_id', '=', annotatorId)
    .where('item_id', '=', itemId)
    .executeTakeFirst();
  return r !== undefined;
}

export async function assignmentsOfCampaign(
  db: Q,
  campaignId: string,
): Promise<{ annotator_id: string; item_id: string }[]> {
  return db
    .selectFrom('assignments')
    .select(['annotator_id', 'item_id'])
    .where('campaign_id', '=', campaignId)
    .execute();
}

export async function answersOf(db: Q, annotatorId: string): Promise<AnswerRow[]> {
  return db.selectFrom('answers').selectAll().where('annotator_id', '=', annotatorId).execute();
}

export async function answersOfCampaign(db: Q, campaignId: string): Promise<AnswerRow[]> {
  return db
    .selectFrom('answers')
    .selectAll()
    .where('campaign_id', '=', campaignId)
    .orderBy('updated_at')
    .orderBy('annotator_id')
    .orderBy('item_id')
    .execute();
}

/** Saves an answer (or a skip), replacing an earlier one; the time spent adds up over visits. */
export async function saveAnswer(db: Q, row: Omit<AnswerRow, 'created_at' | 'updated_at'>): Promise<void> {
  const now = new Date().toISOString();
  await db
    .insertInto('answers')
    .values({ ...row, created_at: now, updated_at: now })
    .onConflict((oc) =>
      oc.columns(['annotator_id', 'item_id']).doUpdateSet((eb) => ({
        answer: eb.ref('excluded.answer'),
        skipped: eb.ref('excluded.skipped'),
        time_ms: eb(eb.ref('answers.time_ms'), '+', eb.ref('excluded.time_ms')),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}
