/**
 * What the server's queries share: the query handle, the chunking of long lists, the audit log that every concern
 * writes in its own transactions, the settings, and the submission rows that more than one concern reads or writes
 * (a row stored by an upload or a campaign, a rescore's results, a change by the admin or a campaign). A concern's
 * own queries sit beside its service (`boards/queries.ts`, `submissions/queries.ts`, …), one function each; the rest
 * of the server never writes SQL. Every value goes through Kysely as a bound parameter; counts are normalised to
 * numbers (pg returns them as strings).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database, NewSubmission, SubmissionRow, SubmissionsTable } from './schema.js';

export type Q = Kysely<Database> | Transaction<Database>;

/**
 * Calls `f` on `items` a chunk of `size` at a time, in order, and answers what each call answered: long lists are
 * read and written in batches that keep each statement under SQLite's and PostgreSQL's parameter limits.
 */
export async function inChunks<T, R>(
  items: readonly T[],
  size: number,
  f: (chunk: T[]) => Promise<R>,
): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(await f(items.slice(i, i + size)));
  return out;
}

// The audit log

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

// Submission rows

/** The columns a listed submission has (a board's rows, the admin's list): all but the stored result and files. */
export const LISTED = [
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

export async function getSubmission(db: Q, id: string): Promise<SubmissionRow | undefined> {
  return db.selectFrom('submissions').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function getSubmissionFiles(db: Q, id: string): Promise<{ name: string; content: string }[]> {
  return db
    .selectFrom('submission_files')
    .select(['name', 'content'])
    .where('submission_id', '=', id)
    .orderBy('name')
    .execute();
}

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
  // The best's state goes on the ladders row with its id: it outlives the row (ladders.best_items).
  const bestOf = (improved: boolean) =>
    improved
      ? { best_id: row.id, best_released: row.released ?? null, best_items: row.item_stats ?? null }
      : { best_id: null, best_released: null, best_items: null };
  await db.transaction().execute(async (tx) => {
    // The ladder first: on SQLite its write takes the database's write lock, on PostgreSQL the row's lock, so the
    // version read is the one the upload is measured against, or the step is computed again.
    if (ladder) {
      const moved =
        ladder.version === null
          ? (
              await tx
                .insertInto('ladders')
                .values({ key: ladder.key, version: 1, ...bestOf(ladder.improved) })
                .onConflict((oc) => oc.column('key').doNothing())
                .executeTakeFirst()
            ).numInsertedOrUpdatedRows
          : (
              await tx
                .updateTable('ladders')
                .set((eb) => ({
                  version: eb('version', '+', 1),
                  ...(ladder.improved ? bestOf(true) : {}),
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

export type EditableFields = Partial<
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
