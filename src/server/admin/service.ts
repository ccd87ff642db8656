/**
 * The admin's side of the database: the admin secret (stored as a hash), sessions (a row per signed-in browser,
 * stored as a hash), team tokens, the overview (every submission, rejected and hidden ones too, the team tokens and
 * the audit log), one submission as stored, and the admin's actions on submissions (each audited). The pages read
 * these types, never the database's.
 */
import type { Kysely } from 'kysely';
import { cleanName } from '../../data/clean-text.js';
import { lookAlike } from '../../data/confusables.js';
import { RumedbenchError } from '../../errors.js';
import { assertStrongSecret, newSessionToken, newToken, sha256Hex } from '../auth.js';
import { type Entry, shownNames } from '../boards/entries.js';
import type { Boards } from '../boards/service.js';
import { addressKey } from '../client-address.js';
import type { AuditRow, Database, ListedRow, SubmissionRow, TokenRow } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { parseMetadata } from '../submissions/metadata.js';
import * as q from './queries.js';

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

/** A new team token's team, as stored, and what the admin should know of its name. */
export interface CreatedToken {
  id: string;
  /** Shown once: only its hash is stored. */
  token: string;
  /** The team as stored and shown: cleaned as every displayed name is (`cleanName`). */
  team: string;
  /** Where the team only looks like an existing one: created all the same (a team may be named so), but said. */
  warning: TeamLookalike | null;
}

export interface TeamLookalike {
  code: 'TEAM_LOOKALIKE';
  /** The existing team it looks like. */
  existing: string;
  message: string;
}

/** Failed admin sign-ins per address (/64 for IPv6) before it must wait, and for how long. */
const SIGN_IN_FAILURES = 5;
const SIGN_IN_WINDOW_MS = 15 * 60_000;

export class AdminService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly boards: Boards,
    /** What the lockout's windows take the time from (`Date.now` by default). */
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Checks a secret given from `address`: refused (429) while the address is locked out, whatever the secret.
   * Every attempt is counted in the database before the secret is compared, one count for every door the secret
   * opens (the sign-in form, the bearer APIs) and for every server process on the database; a right secret clears
   * it. Answers whether it is the admin secret.
   *
   * Invariant: at most SIGN_IN_FAILURES secrets per address (IPv6: /64) are compared per window, across processes.
   */
  async signIn(address: string, secret: string): Promise<boolean> {
    const key = addressKey(address);
    const now = this.clock();
    const attempt = await q.takeSignInAttempt(this.db, key, {
      now,
      windowMs: SIGN_IN_WINDOW_MS,
      limit: SIGN_IN_FAILURES,
    });
    if (!attempt.taken) {
      const wait = Math.max(1, Math.ceil((attempt.windowStart + SIGN_IN_WINDOW_MS - now) / 1000));
      throw new HttpError(
        429,
        'RATE_LIMITED',
        `too many failed sign-ins from this address; try again in ${wait} s`,
        { retryAfter: wait },
      );
    }
    if (await this.isAdminSecret(secret)) {
      await q.clearSignInAttempts(this.db, key);
      return true;
    }
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

  /**
   * A new token for a team. The name is cleaned as uploads' are; one that only looks like an existing team's (a
   * Cyrillic е for a Latin e, capitals, fullwidth forms: `lookAlike`) is created with a warning that names that team,
   * so that the admin sees a team posing as another before handing its token out.
   *
   * @example
   * const { token, warning } = await lb.admin.createToken('Sbеr AI');
   * // warning?.existing === 'Sber AI' where a team "Sber AI" has a token
   */
  async createToken(name: string): Promise<CreatedToken> {
    const team = cleanName(name);
    if (team === '') throw new RumedbenchError('USAGE', '--team must not be empty');
    // Another token for a team of this very name is routine (a new key); a name that only looks like one is not.
    const teams = new Set((await q.listTokens(this.db)).map((t) => t.team));
    const existing = teams.has(team) ? undefined : [...teams].find((t) => lookAlike(team, t));
    const token = newToken();
    const row = await q.createToken(this.db, team, sha256Hex(token));
    return {
      id: row.id,
      token,
      team,
      warning: existing === undefined ? null : lookalikeWarning(team, cleanName(existing)),
    };
  }

  /** Every submission, its names cleaned as the boards show them (rows stored before names were cleaned too). */
  async adminList(): Promise<ListedRow[]> {
    return (await q.listAll(this.db)).map((r) => ({ ...r, ...shownNames(r) }));
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

  /** Whether a session cookie's value is a session that is signed in and not expired. */
  async sessionAlive(session: string): Promise<boolean> {
    return q.adminSessionAlive(this.db, sha256Hex(session));
  }

  /** The team tokens (hashes, never the tokens), their teams cleaned as every displayed name is. */
  async tokens(): Promise<AdminToken[]> {
    return (await q.listTokens(this.db)).map((t) => ({ ...t, team: cleanName(t.team) }));
  }

  /** Revokes a team token; answers whether an active one had that id (audited). */
  async revokeToken(id: string): Promise<boolean> {
    return q.revokeToken(this.db, id);
  }

  async overview(): Promise<AdminOverview> {
    return {
      rows: await this.adminList(),
      tokens: await this.tokens(),
      // An edit's record holds the names as they were sent before names were cleaned.
      audit: (await q.listAudit(this.db)).map((a) => ({ ...a, detail: cleanName(a.detail) })),
    };
  }

  async submission(id: string): Promise<AdminSubmission> {
    const row = await q.getSubmission(this.db, id);
    if (!row) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    return {
      row: { ...row, ...shownNames(row) },
      entry: await this.boards.entry(row.id, { admin: true }),
      // The uploader named the files.
      files: (JSON.parse(row.files) as { name: string; chars: number }[]).map((f) => ({
        ...f,
        name: cleanName(f.name),
      })),
    };
  }
}

/** One line for the admin: both names, and the characters of the new one that the existing one lacks. */
function lookalikeWarning(team: string, existing: string): TeamLookalike {
  const theirs = new Set(existing);
  const odd = [...new Set(team)]
    .filter((c) => !theirs.has(c))
    .map((c) => `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`);
  return {
    code: 'TEAM_LOOKALIKE',
    existing,
    message: `the team "${team}" looks like the existing team "${existing}"${odd.length > 0 ? ` (characters not in it: ${odd.join(' ')})` : ''}; created as another team`,
  };
}
