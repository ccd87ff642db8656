/**
 * Uploads: who sends (a team token, or an anonymous address), whether they may (a rate per minute, a daily quota),
 * a retried upload answered once (Idempotency-Key, scoped to its uploader), scoring in the worker pool, and one
 * transaction per submission. The platform's own evaluations enter through `recordPlatformRun`, a path no upload
 * reaches: their idempotency scope is the platform's, which no uploader's can equal.
 */
import type { Kysely } from 'kysely';
import type { SubmissionIssue } from '../../scoring/issues.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { sha256Hex } from '../auth.js';
import { type PlatformRun, summarize } from '../boards/entries.js';
import type { Boards } from '../boards/service.js';
import * as q from '../db/queries.js';
import type { BoardName, Database, SubmissionSource, SubmissionStatus } from '../db/schema.js';
import { HttpError } from '../errors.js';
import type { Gold } from '../gold/service.js';
import { RateLimiter } from '../rate-limit.js';
import type { ScoreOutcome } from '../score-upload.js';
import type { Scorer } from '../scorer.js';
import type { UploadFile, UploadLimits } from '../upload.js';
import { capIssues } from './issues.js';
import type { Metadata, Uploader } from './metadata.js';

export interface UploadOptions {
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

export class Uploads {
  private readonly anonymousRate: RateLimiter;
  private readonly tokenRate: RateLimiter;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly scorer: Scorer,
    private readonly gold: Gold,
    private readonly boards: Boards,
    private readonly options: UploadOptions,
  ) {
    this.anonymousRate = new RateLimiter(options.anonymousPerMinute, 60_000);
    this.tokenRate = new RateLimiter(options.tokenPerMinute, 60_000);
  }

  async authenticate(authorization: string | undefined, address: string): Promise<Uploader> {
    if (authorization !== undefined) {
      const m = /^Bearer\s+(\S+)$/i.exec(authorization);
      if (!m) throw new HttpError(401, 'BAD_TOKEN', 'Authorization must be "Bearer <token>"');
      const token = await q.findActiveToken(this.db, sha256Hex(m[1] as string));
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
    const seen = idemKey ? await q.findByIdempotencyKey(this.db, idemKey) : undefined;
    return seen ? (JSON.parse(seen.response) as UploadAnswer) : undefined;
  }

  async quota(who: Uploader, now = new Date()): Promise<Quota | null> {
    const limit = this.options.quotaPerDay;
    if (limit <= 0) return null;
    const since = startOfUtcDay(now);
    const used = await q.countScoredSince(
      this.db,
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
    if (!input.admitted) {
      const seen = await this.replay(who, input.idempotencyKey);
      if (seen) return { status: 200, body: seen, replayed: true };
    }
    const before = input.admitted ? input.admitted.quota : await this.checkQuota(who);
    return this.enter({
      files: input.files,
      metadata: input.metadata,
      who,
      idemKey: this.idempotencyKey(who, input.idempotencyKey),
      quota: before,
      source: 'upload',
    });
  }

  /** Scores and stores one submission, whoever it is from; answers as `submit` does. */
  private async enter(input: {
    files: UploadFile[];
    metadata: Metadata;
    who: Uploader;
    idemKey: string | null;
    quota: Quota | null;
    source: SubmissionSource;
  }): Promise<{ status: 200 | 201 | 202 | 422; body: UploadAnswer; replayed: boolean }> {
    const { who, idemKey } = input;
    const before = input.quota;
    await this.gold.sync();
    const outcome: ScoreOutcome = await this.scorer.score({
      files: input.files,
      board: input.metadata.board,
      source: 'upload',
      bootstrap: this.options.bootstrap,
      seed: this.options.seed,
      limits: this.options.limits,
    });
    const id = crypto.randomUUID();
    const duplicateOf = await q.firstWithHash(this.db, outcome.board, outcome.contentHash, who);
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
        this.db,
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
          source: input.source,
        },
        outcome.files,
      );
    } catch (e) {
      // The same key raced in from a retry: the first to commit is the answer.
      const seen = idemKey ? await q.findByIdempotencyKey(this.db, idemKey) : undefined;
      if (seen) return { status: 200, body: JSON.parse(seen.response) as UploadAnswer, replayed: true };
      throw e;
    }
    this.boards.invalidate();
    return { status: UPLOAD_STATUS[outcome.status], body, replayed: false };
  }

  /**
   * An evaluation the platform's workers ran: its predictions scored as an upload is (closed tests on the imported
   * gold), entered verified and marked as the platform's, with how it was run. No rate limit or quota applies, and
   * no upload can take its place: its idempotency key is in the platform's own scope.
   */
  async recordPlatformRun(input: {
    files: UploadFile[];
    board: BoardName;
    model: string;
    team: string;
    description: string;
    run: PlatformRun;
  }): Promise<UploadAnswer> {
    // One entry per plan and board: imported twice (a restart between scoring and marking it), it lands once.
    const idemKey = sha256Hex(`platform\n${input.run.plan_id}\n${input.board}`);
    const seen = await q.findByIdempotencyKey(this.db, idemKey);
    const r = seen
      ? { body: JSON.parse(seen.response) as UploadAnswer }
      : await this.enter({
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
          idemKey,
          quota: null,
          source: 'platform',
        });
    await q.updateSubmission(
      this.db,
      r.body.id,
      { verified: 1, platform_run: JSON.stringify(input.run) },
      'platform',
      'platform-run',
    );
    this.boards.invalidate();
    return r.body;
  }
}
