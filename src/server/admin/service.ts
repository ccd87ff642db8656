/**
 * The admin's side of the database: the admin secret (stored as a hash), sessions (a row per signed-in browser,
 * stored as a hash), team tokens, the overview (every submission, rejected and hidden ones too, the team tokens and
 * the audit log), one submission as stored, and the admin's actions on submissions (each audited). The pages read
 * these types, never the database's.
 */
import type { Kysely } from 'kysely';
import { RumedbenchError } from '../../errors.js';
import { assertStrongSecret, newSessionToken, newToken, sha256Hex } from '../auth.js';
import type { Entry } from '../boards/entries.js';
import type { Boards } from '../boards/service.js';
import { addressKey } from '../client-address.js';
import * as q from '../db/queries.js';
import type { AuditRow, Database, ListedRow, SubmissionRow, TokenRow } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { RateLimiter } from '../rate-limit.js';
import { parseMetadata } from '../submissions/metadata.js';

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

/** Failed admin sign-ins per address (/64 for IPv6) before it must wait, and for how long. */
const SIGN_IN_FAILURES = 5;
const SIGN_IN_WINDOW_MS = 15 * 60_000;

export class AdminService {
  /** One count of failures for every door the secret opens (the sign-in form, the bearer APIs). */
  private readonly failures = new RateLimiter(SIGN_IN_FAILURES, SIGN_IN_WINDOW_MS);

  constructor(
    private readonly db: Kysely<Database>,
    private readonly boards: Boards,
  ) {}

  /**
   * Checks a secret given from `address`: refused (429) while the address is locked out, whatever the secret;
   * a wrong one counts a failure. Answers whether it is the admin secret.
   */
  async signIn(address: string, secret: string): Promise<boolean> {
    const key = addressKey(address);
    const wait = this.failures.retryAfter(key);
    if (wait > 0) {
      throw new HttpError(
        429,
        'RATE_LIMITED',
        `too many failed sign-ins from this address; try again in ${wait} s`,
        {
          retryAfter: wait,
        },
      );
    }
    if (await this.isAdminSecret(secret)) {
      this.failures.reset(key);
      return true;
    }
    this.failures.hit(key);
    return false;
  }

  /** A bearer request's admin check (`Authorization: Bearer <admin secret>`), locked out as the form is. */
  async requireBearer(address: string, authorization: string | undefined): Promise<void> {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    if (!(await this.signIn(address, m?.[1] ?? '')))
      throw new HttpError(401, 'ADMIN_ONLY', 'send the admin token as Authorization: Bearer');
  }

  /**
   * The admin secret: from the environment (checked, then stored hashed), or the stored hash, or a new one that is
   * returned to be printed once.
   */
  async ensureAdminSecret(fromEnv: string | undefined): Promise<{ generated?: string }> {
    if (fromEnv !== undefined && fromEnv !== '') {
      assertStrongSecret(fromEnv, 'RUMEDBENCH_ADMIN_TOKEN');
      await q.setSetting(this.db, 'admin_token_hash', sha256Hex(fromEnv));
      return {};
    }
    if (await q.getSetting(this.db, 'admin_token_hash')) return {};
    const secret = newToken();
    const stored = await q.setSettingOnce(this.db, 'admin_token_hash', sha256Hex(secret));
    // Another process may have stored its own first; then that one is the secret, and ours is never shown.
    return stored === sha256Hex(secret) ? { generated: secret } : {};
  }

  async isAdminSecret(secret: string): Promise<boolean> {
    const stored = await q.getSetting(this.db, 'admin_token_hash');
    return stored !== undefined && stored === sha256Hex(secret);
  }

  async createToken(team: string): Promise<{ id: string; token: string }> {
    if (team.trim() === '') throw new RumedbenchError('USAGE', '--team must not be empty');
    const token = newToken();
    const row = await q.createToken(this.db, team.trim(), sha256Hex(token));
    return { id: row.id, token };
  }

  async adminList(): Promise<ListedRow[]> {
    return q.listAll(this.db);
  }

  async adminAction(id: string, action: string, actor = 'admin'): Promise<void> {
    const marks: Record<string, q.Marks> = {
      hide: { hidden: 1 },
      unhide: { hidden: 0 },
      flag: { flagged: 1 },
      unflag: { flagged: 0 },
      verify: { verified: 1 },
      unverify: { verified: 0 },
    };
    let ok: boolean;
    if (action === 'delete') ok = await q.deleteSubmission(this.db, id, actor);
    else if (marks[action]) ok = await q.updateSubmission(this.db, id, marks[action], actor, action);
    else throw new HttpError(400, 'BAD_ACTION', `unknown action "${action}"`);
    if (!ok) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    this.boards.invalidate();
  }

  async adminEdit(id: string, fields: Record<string, unknown>, actor = 'admin'): Promise<void> {
    const m = parseMetadata(fields);
    const ok = await q.updateSubmission(
      this.db,
      id,
      {
        model: m.model,
        team: m.team,
        description: m.description,
        link: m.link,
        kind: m.kind,
        params: m.params,
        open_weights: m.open_weights ? 1 : 0,
      },
      actor,
      'edit',
    );
    if (!ok) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    this.boards.invalidate();
  }

  /** A new session for a signed-in admin: the cookie's value (only its hash is stored). */
  async startSession(address: string, ttlMs: number): Promise<string> {
    const session = newSessionToken();
    await q.createAdminSession(this.db, {
      token_hash: sha256Hex(session),
      expires_at: new Date(Date.now() + ttlMs).toISOString(),
      address,
    });
    await q.addAudit(this.db, 'admin', 'sign-in', null, { address });
    return session;
  }

  async endSession(session: string): Promise<void> {
    await q.endAdminSession(this.db, sha256Hex(session));
  }

  async overview(): Promise<AdminOverview> {
    return {
      rows: await this.adminList(),
      tokens: await q.listTokens(this.db),
      audit: await q.listAudit(this.db),
    };
  }

  async submission(id: string): Promise<AdminSubmission> {
    const row = await q.getSubmission(this.db, id);
    if (!row) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    return {
      row,
      entry: await this.boards.entry(row.id, { admin: true }),
      files: JSON.parse(row.files) as { name: string; chars: number }[],
    };
  }
}
