/**
 * The admin's side of the database: sessions (a row per signed-in browser, stored as a hash), the overview (every
 * submission, rejected and hidden ones too, the team tokens and the audit log) and one submission as stored.
 * The pages read these types, never the database's.
 */
import { newSessionToken, sha256Hex } from '../auth.js';
import type { Entry } from '../boards/entries.js';
import * as q from '../db/queries.js';
import type { AuditRow, ListedRow, SubmissionRow, TokenRow } from '../db/schema.js';
import { HttpError } from '../errors.js';
import type { Leaderboard } from '../leaderboard.js';

export type AdminListedSubmission = ListedRow;
export type AdminToken = TokenRow;
export type AdminAuditEntry = AuditRow;
export type AdminStoredSubmission = SubmissionRow;

export interface AdminOverview {
  rows: AdminListedSubmission[];
  tokens: AdminToken[];
  audit: AdminAuditEntry[];
}

export interface AdminSubmission {
  row: AdminStoredSubmission;
  entry: Entry;
  files: { name: string; chars: number }[];
}

export class AdminService {
  constructor(private readonly lb: Leaderboard) {}

  /** A new session for a signed-in admin: the cookie's value (only its hash is stored). */
  async startSession(address: string, ttlMs: number): Promise<string> {
    const session = newSessionToken();
    await q.createAdminSession(this.lb.db.db, {
      token_hash: sha256Hex(session),
      expires_at: new Date(Date.now() + ttlMs).toISOString(),
      address,
    });
    await q.addAudit(this.lb.db.db, 'admin', 'sign-in', null, { address });
    return session;
  }

  async endSession(session: string): Promise<void> {
    await q.endAdminSession(this.lb.db.db, sha256Hex(session));
  }

  async overview(): Promise<AdminOverview> {
    return {
      rows: await this.lb.adminList(),
      tokens: await q.listTokens(this.lb.db.db),
      audit: await q.listAudit(this.lb.db.db),
    };
  }

  async submission(id: string): Promise<AdminSubmission> {
    const row = await q.getSubmission(this.lb.db.db, id);
    if (!row) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    return {
      row,
      entry: await this.lb.entry(row.id, { admin: true }),
      files: JSON.parse(row.files) as { name: string; chars: number }[],
    };
  }
}
