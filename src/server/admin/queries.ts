/**
 * The admin's queries: every submission and the audit log for the overview, a submission's deletion, team tokens,
 * sessions, and the admin secret's first writer.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditRow, Database, ListedRow, TokenRow } from '../db/schema.js';
import { addAudit, getSetting, getSubmission, LISTED, type Q } from '../db/shared.js';

// The audit log, settings and submission rows other concerns use too.
export {
  addAudit,
  getSetting,
  getSubmission,
  type Marks,
  setSetting,
  updateSubmission,
} from '../db/shared.js';

/** Every submission, newest first, for the admin (rejected and hidden ones too). */
export async function listAll(db: Q, limit = 500): Promise<ListedRow[]> {
  return db.selectFrom('submissions').select(LISTED).orderBy('created_at', 'desc').limit(limit).execute();
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

// Sessions

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

// The sign-in lockout

/**
 * Takes one attempt at the admin secret for `key` in its window (a new window once the last is `windowMs` old):
 * whether it was under `limit`, and when the window began. The count is a conditional update, one statement, so that
 * processes sharing the database never take more than `limit` attempts of one window between them.
 */
export async function takeSignInAttempt(
  db: Q,
  key: string,
  o: { now: number; windowMs: number; limit: number },
): Promise<{ taken: boolean; windowStart: number }> {
  // Ended windows go first: a flood of addresses leaves at most one window's rows behind.
  await db
    .deleteFrom('sign_in_failures')
    .where('window_start', '<=', o.now - o.windowMs)
    .execute();
  await db
    .insertInto('sign_in_failures')
    .values({ key, window_start: o.now, attempts: 0 })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const r = await db
    .updateTable('sign_in_failures')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('key', '=', key)
    .where('attempts', '<', o.limit)
    .executeTakeFirst();
  const row = await db
    .selectFrom('sign_in_failures')
    .select('window_start')
    .where('key', '=', key)
    .executeTakeFirst();
  return { taken: Number(r.numUpdatedRows) === 1, windowStart: row ? Number(row.window_start) : o.now };
}

/** A right secret: the address's attempts are forgotten. */
export async function clearSignInAttempts(db: Q, key: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('key', '=', key).execute();
}

// Settings

/** Inserts the setting unless it exists; returns the value that is stored afterwards (the first writer's). */
export async function setSettingOnce(db: Q, key: string, value: string): Promise<string> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  return (await getSetting(db, key)) as string;
}
