/**
 * The leaderboard service, apart from HTTP: uploads (authentication by token, idempotency, quotas, scoring in the
 * worker pool, one transaction per submission), the boards, submissions and comparisons as data, the closed tests'
 * gold, and the admin's actions. The route groups and the admin commands (cli/serve.ts) both call this; metadata,
 * board entries and issue caps live beside their routes (submissions/, boards/).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonlFile } from '../data/jsonl.js';
import { loadSplit } from '../data/load.js';
import { RumedbenchError } from '../errors.js';
import type { ComparisonResult } from '../scoring/compare.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import type { EvaluationResult } from '../scoring/score.js';
import { getTask, isTaskName } from '../tasks/registry.js';
import { assertStrongSecret, newToken, sha256Hex } from './auth.js';
import { type Entry, type PlatformRun, rank, summarize, toEntry, visible } from './boards/entries.js';
import type { Db } from './db/connect.js';
import * as q from './db/queries.js';
import type { BoardName, ListedRow, SubmissionStatus } from './db/schema.js';
import { HttpError } from './errors.js';
import { RateLimiter } from './rate-limit.js';
import { BOARD_TASKS, type ScoreOutcome } from './score-upload.js';
import type { Scorer } from './scorer.js';
import { capIssues } from './submissions/issues.js';
import { type Metadata, parseMetadata, type Uploader } from './submissions/metadata.js';
import { DEFAULT_LIMITS, type UploadFile, type UploadLimits } from './upload.js';

export interface LeaderboardOptions {
  dataDir: string;
  /** Anonymous uploads (on by default, as on medbench.ru). */
  anonymous: boolean;
  /** Anonymous uploads per address and minute, in this process. */
  anonymousPerMinute: number;
  /** Uploads per token and minute, in this process (rejected ones count too). */
  tokenPerMinute: number;
  /** Scored uploads per token and per address and UTC day; 0 turns the quota off (the default). */
  quotaPerDay: number;
  bootstrap: number;
  seed: number;
  limits: UploadLimits;
}

export const DEFAULT_OPTIONS: Omit<LeaderboardOptions, 'dataDir'> = {
  anonymous: true,
  anonymousPerMinute: 20,
  tokenPerMinute: 60,
  quotaPerDay: 0,
  bootstrap: 1000,
  seed: 0,
  limits: DEFAULT_LIMITS,
};

export interface Quota {
  limit: number;
  used: number;
  remaining: number;
}

export interface UploadAnswer {
  id: string;
  status: SubmissionStatus;
  board: BoardName;
  overall: number | null;
  /** The scorer's result, with the schema of `rumedbench eval --json` (closed tests: aggregates only). */
  result: EvaluationResult;
  errors: SubmissionIssue[];
  warnings: SubmissionIssue[];
  /** Issues left out of `errors` and `warnings` (past the first few of each code), counted per code. */
  omitted: Record<string, number>;
  /** An earlier submission with the same normalised content on this board. */
  duplicate_of: string | null;
  quota: Quota | null;
}

/** 201 scored, 202 accepted and waiting for gold, 422 rejected (kept for audit). */
const UPLOAD_STATUS = { scored: 201, pending: 202, rejected: 422 } as const;

const startOfUtcDay = (now: Date): string =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();

export class Leaderboard {
  private goldSeen = 'none';
  private readonly boardCache = new Map<BoardName, { at: number; entries: Entry[] }>();
  private readonly anonymousRate: RateLimiter;
  private readonly tokenRate: RateLimiter;
  private readonly compareCache = new Map<string, Promise<ComparisonResult>>();
  /** Run after closed-test gold is imported (the campaigns re-publish their human rows). */
  readonly afterGoldImport: (() => Promise<void>)[] = [];
  /** Pages are cached this long, so that several processes on one database agree within it. */
  static readonly BOARD_TTL_MS = 1000;

  constructor(
    readonly db: Db,
    readonly scorer: Scorer,
    readonly options: LeaderboardOptions,
  ) {
    this.anonymousRate = new RateLimiter(options.anonymousPerMinute, 60_000);
    this.tokenRate = new RateLimiter(options.tokenPerMinute, 60_000);
  }

  /** Loads the closed tests' gold into the workers if another process (or the admin command) changed it. */
  async syncGold(): Promise<void> {
    const version = await q.goldVersion(this.db.db);
    if (version === this.goldSeen) return;
    await this.scorer.setGold(await q.loadPrivateGold(this.db.db));
    this.goldSeen = version;
  }

  // Secrets

  /**
   * The admin secret: from the environment (checked, then stored hashed), or the stored hash, or a new one that is
   * returned to be printed once.
   */
  async ensureAdminSecret(fromEnv: string | undefined): Promise<{ generated?: string }> {
    if (fromEnv !== undefined && fromEnv !== '') {
      assertStrongSecret(fromEnv, 'RUMEDBENCH_ADMIN_TOKEN');
      await q.setSetting(this.db.db, 'admin_token_hash', sha256Hex(fromEnv));
      return {};
    }
    if (await q.getSetting(this.db.db, 'admin_token_hash')) return {};
    const secret = newToken();
    const stored = await q.setSettingOnce(this.db.db, 'admin_token_hash', sha256Hex(secret));
    // Another process may have stored its own first; then that one is the secret, and ours is never shown.
    return stored === sha256Hex(secret) ? { generated: secret } : {};
  }

  async isAdminSecret(secret: string): Promise<boolean> {
    const stored = await q.getSetting(this.db.db, 'admin_token_hash');
    return stored !== undefined && stored === sha256Hex(secret);
  }

  // Uploads

  async authenticate(authorization: string | undefined, address: string): Promise<Uploader> {
    if (authorization !== undefined) {
      const m = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!m) throw new HttpError(401, 'BAD_TOKEN', 'Authorization must be "Bearer <token>"');
      const token = await q.findActiveToken(this.db.db, sha256Hex(m[1] as string));
      if (!token) throw new HttpError(401, 'BAD_TOKEN', 'unknown or revoked token');
      return { tokenId: token.id, team: token.team, address };
    }
    if (!this.options.anonymous) {
      throw new HttpError(
        401,
        'TOKEN_REQUIRED',
        'anonymous uploads are off here: send Authorization: Bearer <token>',
      );
    }
    return { tokenId: null, team: null, address };
  }

  /**
   * Lets an uploader in, or refuses it (429), before its body is read: the rate per token or (anonymous) address
   * and minute, which every upload counts, rejected ones too; and the daily quota, which it answers.
   */
  async admit(who: Uploader, now = Date.now()): Promise<Quota | null> {
    const [rate, key, limit, whose] =
      who.tokenId !== null
        ? [this.tokenRate, who.tokenId, this.options.tokenPerMinute, 'token']
        : [this.anonymousRate, who.address, this.options.anonymousPerMinute, 'address'];
    const wait = rate.hit(key, now);
    if (wait > 0) {
      throw new HttpError(429, 'RATE_LIMITED', `at most ${limit} uploads a minute from one ${whose}`, {
        retryAfter: wait,
      });
    }
    return this.checkQuota(who, new Date(now));
  }

  /** The daily quota, refused (429) when it is used up. */
  private async checkQuota(who: Uploader, now = new Date()): Promise<Quota | null> {
    const quota = await this.quota(who, now);
    if (quota && quota.remaining === 0) {
      throw new HttpError(
        429,
        'QUOTA_EXCEEDED',
        `the daily quota of ${quota.limit} scored uploads is used up`,
        {
          quota,
        },
      );
    }
    return quota;
  }

  /** The key a retried upload is known by: scoped to its uploader, so nobody can replay another's answer. */
  private idempotencyKey(who: Uploader, key: string | undefined): string | null {
    if (key === undefined) return null;
    if (!/^[\x21-\x7e]{1,200}$/.test(key))
      throw new HttpError(400, 'BAD_IDEMPOTENCY_KEY', 'Idempotency-Key: 1 to 200 printable ASCII characters');
    return sha256Hex(`${who.tokenId ? `token:${who.tokenId}` : `address:${who.address}`}\n${key}`);
  }

  /** The first answer to an upload sent again with the same Idempotency-Key, if there was one. */
  async replay(who: Uploader, key: string | undefined): Promise<UploadAnswer | undefined> {
    const idemKey = this.idempotencyKey(who, key);
    const seen = idemKey ? await q.findByIdempotencyKey(this.db.db, idemKey) : undefined;
    return seen ? (JSON.parse(seen.response) as UploadAnswer) : undefined;
  }

  async quota(who: Uploader, now = new Date()): Promise<Quota | null> {
    const limit = this.options.quotaPerDay;
    if (limit <= 0) return null;
    const since = startOfUtcDay(now);
    const used = await q.countScoredSince(
      this.db.db,
      who.tokenId ? { tokenId: who.tokenId } : { address: who.address },
      since,
    );
    return { limit, used, remaining: Math.max(0, limit - used) };
  }

  /**
   * Takes an upload: answers `{status, body}` with 201 (scored), 422 (rejected, kept for audit), or the first
   * answer again (200) for a repeated Idempotency-Key.
   */
  async submit(input: {
    files: UploadFile[];
    metadata: Metadata;
    who: Uploader;
    idempotencyKey?: string;
    /** Set by a route that already looked for a replay and admitted the uploader (`replay`, `admit`). */
    admitted?: { quota: Quota | null };
  }): Promise<{ status: 200 | 201 | 202 | 422; body: UploadAnswer; replayed: boolean }> {
    const { who } = input;
    const idemKey = this.idempotencyKey(who, input.idempotencyKey);
    if (!input.admitted) {
      const seen = await this.replay(who, input.idempotencyKey);
      if (seen) return { status: 200, body: seen, replayed: true };
    }
    const before = input.admitted ? input.admitted.quota : await this.checkQuota(who);
    await this.syncGold();
    const outcome: ScoreOutcome = await this.scorer.score({
      files: input.files,
      board: input.metadata.board,
      source: 'upload',
      bootstrap: this.options.bootstrap,
      seed: this.options.seed,
      limits: this.options.limits,
    });
    const id = crypto.randomUUID();
    const duplicateOf = await q.firstWithHash(this.db.db, outcome.board, outcome.contentHash, who);
    // Issues are capped (the first few per code, long strings cut): a hostile file cannot make a huge answer or row.
    const errors = capIssues(outcome.result.errors);
    const warnings = capIssues(outcome.result.warnings);
    const result = { ...outcome.result, errors: errors.shown, warnings: warnings.shown };
    const omitted = { ...errors.omitted, ...warnings.omitted };
    const quota =
      before && outcome.status === 'scored'
        ? { ...before, used: before.used + 1, remaining: before.remaining - 1 }
        : before;
    const body: UploadAnswer = {
      id,
      status: outcome.status,
      board: outcome.board,
      overall: outcome.overall,
      result,
      errors: errors.shown,
      warnings: warnings.shown,
      omitted,
      duplicate_of: duplicateOf ?? null,
      quota,
    };
    const m = input.metadata;
    try {
      await q.insertSubmission(
        this.db.db,
        {
          id,
          created_at: new Date().toISOString(),
          board: outcome.board,
          status: outcome.status,
          model: m.model,
          team: who.team ?? '',
          description: m.description,
          link: m.link,
          kind: m.kind,
          params: m.params,
          open_weights: m.open_weights ? 1 : 0,
          token_id: who.tokenId,
          address: who.address,
          content_hash: outcome.contentHash,
          duplicate_of: duplicateOf ?? null,
          idempotency_key: idemKey,
          result: JSON.stringify(result),
          summary: JSON.stringify(summarize(outcome.result)),
          overall: outcome.overall,
          response: JSON.stringify(body),
          files: JSON.stringify(outcome.files.map((f) => ({ name: f.name, chars: f.content.length }))),
          trust: m.trust ? JSON.stringify(m.trust) : null,
        },
        outcome.files,
      );
    } catch (e) {
      // The same key raced in from a retry: the first to commit is the answer.
      const seen = idemKey ? await q.findByIdempotencyKey(this.db.db, idemKey) : undefined;
      if (seen) return { status: 200, body: JSON.parse(seen.response) as UploadAnswer, replayed: true };
      throw e;
    }
    this.invalidate();
    return { status: UPLOAD_STATUS[outcome.status], body, replayed: false };
  }

  /**
   * An evaluation the platform's workers ran: its predictions scored as an upload is (closed tests on the imported
   * gold), entered verified and marked as the platform's, with how it was run. No rate limit or quota applies.
   */
  async recordPlatformRun(input: {
    files: UploadFile[];
    board: BoardName;
    model: string;
    team: string;
    description: string;
    run: PlatformRun;
  }): Promise<UploadAnswer> {
    const r = await this.submit({
      files: input.files,
      metadata: {
        model: input.model,
        team: input.team,
        description: input.description,
        link: null,
        kind: 'LLM',
        params: null,
        open_weights: false,
        board: input.board,
        trust: null,
      },
      who: { tokenId: null, team: input.team, address: 'platform' },
      // Imported twice (a restart between scoring and marking it), it lands once.
      idempotencyKey: `platform-run:${input.run.plan_id}`,
    });
    await q.updateSubmission(
      this.db.db,
      r.body.id,
      { verified: 1, platform_run: JSON.stringify(input.run) },
      'platform',
      'platform-run',
    );
    this.invalidate();
    return r.body;
  }

  // Reading

  async board(board: BoardName, options: { includeHidden?: boolean } = {}): Promise<Entry[]> {
    if (options.includeHidden)
      return rank((await q.listBoard(this.db.db, board, options)).map((r) => toEntry(r)));
    const hit = this.boardCache.get(board);
    if (hit && Date.now() - hit.at < Leaderboard.BOARD_TTL_MS) return hit.entries;
    const entries = rank((await q.listBoard(this.db.db, board)).map((r) => toEntry(r)));
    // A repeat links only to an entry that is on the board (never a hidden or rejected one).
    const visible = new Set(entries.map((e) => e.id));
    for (const e of entries) if (e.duplicate_of && !visible.has(e.duplicate_of)) e.duplicate_of = null;
    this.boardCache.set(board, { at: Date.now(), entries });
    return entries;
  }

  /** A submission as its page shows it; hidden and rejected ones only to the admin. */
  async entry(id: string, options: { admin?: boolean } = {}): Promise<Entry> {
    const row = await q.getSubmission(this.db.db, id);
    if (!row || (!options.admin && !visible(row))) {
      throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    }
    const entry = toEntry(row, JSON.parse(row.result) as EvaluationResult);
    if (!options.admin && entry.duplicate_of) {
      const first = await q.getSubmission(this.db.db, entry.duplicate_of);
      if (!first || !visible(first)) entry.duplicate_of = null;
    }
    return entry;
  }

  /** The paired comparison of two scored public-board submissions (closed tests show aggregates only). */
  async compare(
    aId: string,
    bId: string,
  ): Promise<{ a: Entry; b: Entry; comparison: ComparisonResult | null }> {
    const [a, b] = [await this.entry(aId), await this.entry(bId)];
    if (a.board !== b.board)
      throw new HttpError(400, 'DIFFERENT_BOARDS', 'the two submissions are on different boards');
    if (a.board === 'closed') return { a, b, comparison: null };
    const files = async (e: Entry) => ({
      source: e.model,
      files: await q.getSubmissionFiles(this.db.db, e.id),
    });
    // Cached until the boards change: a comparison costs a bootstrap, and anybody may ask for one.
    const key = `${a.id}:${b.id}`;
    let comparison = this.compareCache.get(key);
    if (!comparison) {
      comparison = (async () =>
        this.scorer.compare({
          board: a.board,
          a: await files(a),
          b: await files(b),
          bootstrap: this.options.bootstrap,
          seed: this.options.seed,
        }))();
      comparison.catch(() => this.compareCache.delete(key));
      if (this.compareCache.size >= 256)
        this.compareCache.delete(this.compareCache.keys().next().value as string);
      this.compareCache.set(key, comparison);
    }
    return { a, b, comparison: await comparison };
  }

  /** Whether the comparison of a and b is cached (a cached one costs nothing to show again). */
  hasComparison(aId: string, bId: string): boolean {
    return this.compareCache.has(`${aId}:${bId}`);
  }

  // Admin

  async adminList(): Promise<ListedRow[]> {
    return q.listAll(this.db.db);
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
    if (action === 'delete') ok = await q.deleteSubmission(this.db.db, id, actor);
    else if (marks[action]) ok = await q.updateSubmission(this.db.db, id, marks[action], actor, action);
    else throw new HttpError(400, 'BAD_ACTION', `unknown action "${action}"`);
    if (!ok) throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    this.invalidate();
  }

  async adminEdit(id: string, fields: Record<string, unknown>, actor = 'admin'): Promise<void> {
    const m = parseMetadata(fields);
    const ok = await q.updateSubmission(
      this.db.db,
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
    this.invalidate();
  }

  /**
   * Imports the closed tests' gold from `<Task>.jsonl` files (id and answer per line, every private_test id once),
   * then re-scores every closed-board submission. Every problem is listed; nothing is imported unless all is right.
   */
  async importGold(dir: string): Promise<{ tasks: Record<string, number>; rescored: number }> {
    const problems: string[] = [];
    const imported: { task: string; answers: { id: string; answer: string }[] }[] = [];
    const names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
    if (names.length === 0) throw new RumedbenchError('USAGE', `${dir}: no <Task>.jsonl files`);
    for (const name of names.sort()) {
      const taskName = name.slice(0, -'.jsonl'.length);
      const file = join(dir, name);
      if (!isTaskName(taskName) || !BOARD_TASKS.closed.includes(taskName)) {
        problems.push(`${file}: not a closed-test task (${BOARD_TASKS.closed.join(', ')})`);
        continue;
      }
      const task = getTask(taskName);
      const ids = new Set(
        (await loadSplit(task, 'private_test', { dataDir: this.options.dataDir })).map((r) => r.id),
      );
      const labels = task.kind === 'classification' ? task.labels : [];
      const answers = new Map<string, string>();
      for await (const line of readJsonlFile(file)) {
        const at = `${file}:${line.line}`;
        if ('error' in line) {
          problems.push(`${at}: ${line.error}`);
          continue;
        }
        const v = line.value as Record<string, unknown>;
        const id = v?.[task.idField];
        const answer = v?.[task.goldField] ?? v?.answer;
        if (typeof id !== 'string' && typeof id !== 'number') {
          problems.push(`${at}: no "${task.idField}"`);
          continue;
        }
        const sid = String(id);
        if (!ids.has(sid)) problems.push(`${at} (id ${sid}): not an id of ${taskName}'s private_test split`);
        else if (answers.has(sid)) problems.push(`${at} (id ${sid}): repeated`);
        else if (typeof answer !== 'string' || !labels.includes(answer))
          problems.push(`${at} (id ${sid}): answer must be one of ${labels.map((l) => `"${l}"`).join(', ')}`);
        else answers.set(sid, answer);
      }
      const missing = [...ids].filter((i) => !answers.has(i));
      if (missing.length > 0)
        problems.push(
          `${file}: ${missing.length} private_test id(s) without an answer, e.g. ${missing.slice(0, 3).join(', ')}`,
        );
      imported.push({ task: taskName, answers: [...answers].map(([id, answer]) => ({ id, answer })) });
    }
    if (problems.length > 0) {
      const shown = problems.slice(0, 20).join('\n  ');
      const more = problems.length > 20 ? `\n  … and ${problems.length - 20} more` : '';
      throw new RumedbenchError(
        'DATA_INVALID',
        `gold not imported, ${problems.length} problem(s):\n  ${shown}${more}`,
      );
    }
    for (const i of imported) await q.replacePrivateGold(this.db.db, i.task, i.answers);
    await this.syncGold();
    const rescored = await this.rescore('closed');
    for (const hook of this.afterGoldImport) await hook();
    return { tasks: Object.fromEntries(imported.map((i) => [i.task, i.answers.length])), rescored };
  }

  /** Scores every submission of a board again from its stored files (after new gold). */
  async rescore(board: BoardName): Promise<number> {
    // Human rows from campaigns cover a sample, not the split: their campaign scores them again.
    const rows = (await q.submissionsOfBoard(this.db.db, board)).filter(
      (r) => !r.address.startsWith('campaign:'),
    );
    const updates: {
      id: string;
      result: string;
      summary: string;
      overall: number | null;
      status: SubmissionStatus;
    }[] = [];
    for (const row of rows) {
      const files = await q.getSubmissionFiles(this.db.db, row.id);
      const outcome = await this.scorer.score({
        files: files.map((f) => ({ name: f.name, data: new TextEncoder().encode(f.content) })),
        board,
        source: 'upload',
        bootstrap: this.options.bootstrap,
        seed: this.options.seed,
        limits: this.options.limits,
      });
      updates.push({
        id: row.id,
        result: JSON.stringify(outcome.result),
        summary: JSON.stringify(summarize(outcome.result)),
        overall: outcome.overall,
        status: outcome.status,
      });
    }
    await q.updateResults(this.db.db, updates);
    this.invalidate();
    return updates.length;
  }

  /** Forgets cached boards (after a change made outside `submit`). */
  invalidate(): void {
    this.boardCache.clear();
    this.compareCache.clear();
  }

  async createToken(team: string): Promise<{ id: string; token: string }> {
    if (team.trim() === '') throw new RumedbenchError('USAGE', '--team must not be empty');
    const token = newToken();
    const row = await q.createToken(this.db.db, team.trim(), sha256Hex(token));
    return { id: row.id, token };
  }

  async close(): Promise<void> {
    await this.scorer.close();
    await this.db.close();
  }
}
