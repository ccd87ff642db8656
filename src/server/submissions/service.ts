/**
 * Uploads: who sends (a team token, or an anonymous address), whether they may (a rate per minute, a daily quota),
 * a retried upload answered once (Idempotency-Key, scoped to its uploader), scoring in the worker pool, and one
 * transaction per submission. The platform's own evaluations enter through `recordPlatformRun`, a path no upload
 * reaches: their idempotency scope is the platform's, which no uploader's can equal.
 */
import type { Kysely } from 'kysely';
import type { LadderState } from '../../metrics/ladder.js';
import type { SubmissionIssue } from '../../scoring/issues.js';
import type { RunUsage } from '../../scoring/run-usage.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { trustTasksProblem } from '../../scoring/trust-files.js';
import { sha256Hex } from '../auth.js';
import { type PlatformRun, releasedResult, summarize } from '../boards/entries.js';
import type { StoredItemStats } from '../boards/ranking.js';
import type { Boards } from '../boards/service.js';
import { addressKey } from '../client-address.js';
import type { BoardName, Database, SubmissionSource, SubmissionStatus } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { type ClosedRelease, climbsLadder, type ReleaseInput, releaseOnHeldGold } from '../gold/release.js';
import type { Gold } from '../gold/service.js';
import { RateLimiter } from '../rate-limit.js';
import { HELD_TASKS, heldTasksOf, ladderItemsOf, type ScoreOutcome } from '../score-upload.js';
import type { Scorer } from '../scorer.js';
import type { UploadFile, UploadLimits } from '../upload.js';
import type { Metadata, Uploader } from './metadata.js';
import * as q from './queries.js';

export interface UploadOptions {
  /** Anonymous uploads (on by default, as on medbench.ru). */
  anonymous: boolean;
  /** Anonymous uploads per address and minute, in this process. */
  anonymousPerMinute: number;
  /** Uploads per token and minute, in this process (rejected ones count too). */
  tokenPerMinute: number;
  /**
   * Uploads per token and per address (/64 for IPv6) and UTC day, counted whatever their fate except public-board
   * rejections; 0 turns the quota off (the default).
   */
  quotaPerDay: number;
  /** Closed-board uploads per token and per address and UTC day, rejected ones too; 0: none (default 5). */
  closedQuotaPerDay: number;
  /**
   * Anonymous uploads on hidden gold (off by default): each address is a ladder of its own, and comparing the first
   * releases of two addresses' uploads that differ in one item tells that item.
   */
  closedAnonymous: boolean;
  /** How scores on hidden gold are released (gold/release.ts). */
  closedRelease: ClosedRelease;
  bootstrap: number;
  seed: number;
  limits: UploadLimits;
}

export type { ClosedRelease };

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
  /** The daily quota of all uploads (null: off). */
  quota: Quota | null;
  /** The daily quota of uploads on hidden gold, the closed board's and ECG2Pathology's (null: off, or none of it). */
  closed_quota?: Quota | null;
  /**
   * Scores on hidden gold under the Ladder: what is released is the team's best so far unless this upload beat it by
   * more than a standard error; those tasks' own scores are not released. Closed board: `overall` is the released
   * score. Public board (a test only its host holds, ECG2Pathology): `released` is the mean of `tasks`' scores as
   * released, `overall` the five public tasks', and `result.overall_six` is made with the released score.
   */
  ladder?: { mechanism: 'ladder'; improved: boolean; tasks?: string[]; released?: number };
}

/** 201 scored, 202 accepted and waiting for gold, 422 rejected (kept for audit). */
const UPLOAD_STATUS = { scored: 201, pending: 202, rejected: 422 } as const;

/**
 * The one ladder of an uploader on a board: its team (all of a team's tokens, and the platform's evaluations of the
 * team's endpoints), or an anonymous address's /64.
 */
export const ladderKeyOf = (who: Uploader, board: BoardName): string =>
  `${who.team ? `team:${who.team}` : `address:${addressKey(who.address)}`}|${board}`;

export class Uploads {
  private readonly anonymousRate: RateLimiter;
  private readonly tokenRate: RateLimiter;
  private readonly ladderLocks = new Map<string, Promise<void>>();

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
   * and minute, which every upload counts, rejected ones too; then a unit of the daily quota is taken (given back
   * only if the upload turns out to be a rejected public-board one).
   */
  async admit(who: Uploader, now = Date.now()): Promise<Quota | null> {
    const [rate, key, limit, whose] =
      who.tokenId !== null
        ? [this.tokenRate, who.tokenId, this.options.tokenPerMinute, 'token']
        : [this.anonymousRate, addressKey(who.address), this.options.anonymousPerMinute, 'address'];
    const wait = rate.hit(key, now);
    if (wait > 0) {
      throw new HttpError(429, 'RATE_LIMITED', `at most ${limit} uploads a minute from one ${whose}`, {
        retryAfter: wait,
      });
    }
    return this.reserve(who, 'all', this.options.quotaPerDay, new Date(now));
  }

  /**
   * Whose quota an upload draws on: all uploads, per token (or address); uploads on hidden gold, per team (all of its
   * tokens: the one ladder they climb), as a team given several tokens would otherwise probe its ladder once per
   * token a day.
   */
  private slot(who: Uploader, scope: 'all' | 'closed', now: Date) {
    const key =
      scope === 'closed' && who.team
        ? `team:${who.team}`
        : who.tokenId !== null
          ? `token:${who.tokenId}`
          : `address:${addressKey(who.address)}`;
    return { key, scope, day: now.toISOString().slice(0, 10) };
  }

  /** Takes one unit of a daily quota, atomically, or refuses (429) when none is left; null when it is off. */
  private async reserve(
    who: Uploader,
    scope: 'all' | 'closed',
    limit: number,
    now = new Date(),
  ): Promise<Quota | null> {
    if (limit <= 0) return null;
    const slot = this.slot(who, scope, now);
    const taken = await q.reserveQuota(this.db, slot, limit);
    const used = await q.quotaUsed(this.db, slot);
    const quota = { limit, used, remaining: Math.max(0, limit - used) };
    if (!taken) {
      const what = scope === 'closed' ? 'uploads on hidden gold (closed tests)' : 'uploads';
      throw new HttpError(429, 'QUOTA_EXCEEDED', `the daily quota of ${limit} ${what} is used up`, {
        quota,
      });
    }
    return quota;
  }

  /** The uploader's daily quota as it stands (null when off). */
  async quota(who: Uploader, now = new Date()): Promise<Quota | null> {
    const limit = this.options.quotaPerDay;
    if (limit <= 0) return null;
    const used = await q.quotaUsed(this.db, this.slot(who, 'all', now));
    return { limit, used, remaining: Math.max(0, limit - used) };
  }

  /** The key a retried upload is known by: scoped to its uploader, so nobody can replay another's answer. */
  private idempotencyKey(who: Uploader, key: string | undefined): string | null {
    if (key === undefined) return null;
    if (!/^[\x21-\x7e]{1,200}$/.test(key))
      throw new HttpError(400, 'BAD_IDEMPOTENCY_KEY', 'Idempotency-Key: 1 to 200 printable ASCII characters');
    return sha256Hex(
      `${who.tokenId ? `token:${who.tokenId}` : `address:${addressKey(who.address)}`}\n${key}`,
    );
  }

  /** The first answer to an upload sent again with the same Idempotency-Key, if there was one. */
  async replay(who: Uploader, key: string | undefined): Promise<UploadAnswer | undefined> {
    const idemKey = this.idempotencyKey(who, key);
    const seen = idemKey ? await q.findByIdempotencyKey(this.db, idemKey) : undefined;
    return seen ? (JSON.parse(seen.response) as UploadAnswer) : undefined;
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
    const before = input.admitted
      ? input.admitted.quota
      : await this.reserve(who, 'all', this.options.quotaPerDay);
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
    let outcome: ScoreOutcome = await this.scorer.score({
      files: input.files,
      board: input.metadata.board,
      source: 'upload',
      bootstrap: this.options.bootstrap,
      seed: this.options.seed,
      limits: this.options.limits,
    });
    const uploaded = input.source === 'upload';
    const trustProblem = input.metadata.trust
      ? trustTasksProblem(
          input.metadata.trust,
          outcome.files.map((f) => f.name.slice(f.name.lastIndexOf('/') + 1).replace(/\.jsonl$/, '')),
        )
      : undefined;
    if (trustProblem)
      throw new HttpError(400, 'INVALID_METADATA', `invalid metadata: ${trustProblem}`, {
        problems: [trustProblem],
      });
    // The tasks on hidden gold it answers: every closed test; on the public board, a test only its host holds.
    const heldTasks = heldTasksOf(outcome.board, outcome.result);
    const onHiddenGold = outcome.board === 'closed' || heldTasks.length > 0;
    // Decided by the board and the tasks uploaded, never by the gold, and before any quota is taken.
    if (uploaded && onHiddenGold && who.tokenId === null && !this.options.closedAnonymous)
      throw new HttpError(
        401,
        'TOKEN_REQUIRED',
        `uploads scored on hidden gold (${outcome.board === 'closed' ? 'the closed board' : heldTasks.join(', ')}) need a team token: send Authorization: Bearer <token> (the board's admin gives them); an anonymous address would be a ladder of its own`,
      );
    // An upload on hidden gold counts against the closed quota whatever its fate, before anything of it is answered.
    // A platform evaluation draws on the quota of the team whose endpoint it is; over it, it is stored with nothing on
    // hidden gold released (the run is done: refusing it would only lose it).
    let closedQuota: Quota | null = null;
    let overQuota = false;
    if (onHiddenGold && (uploaded || outcome.status !== 'rejected')) {
      try {
        closedQuota = await this.reserve(who, 'closed', this.options.closedQuotaPerDay);
      } catch (e) {
        if (uploaded || !(e instanceof HttpError) || e.code !== 'QUOTA_EXCEEDED') throw e;
        overQuota = true;
      }
    }
    if (overQuota)
      outcome = {
        ...outcome,
        warnings: [
          {
            severity: 'warning',
            code: 'CLOSED_QUOTA_USED',
            file: 'platform',
            message: `the team's daily quota of ${this.options.closedQuotaPerDay} uploads on hidden gold is used up: no score on hidden gold is released for this evaluation`,
          },
          ...outcome.warnings,
        ],
      };
    let quota = before;
    if (before && outcome.status === 'rejected' && outcome.board === 'public') {
      // A rejected public upload (a typo in a file) costs no quota: nothing secret can be learnt from it.
      const slot = this.slot(who, 'all', new Date());
      await q.releaseQuota(this.db, slot);
      quota = { ...before, used: before.used - 1, remaining: before.remaining + 1 };
    }
    // Under the Ladder only an upload answering every task of its board on hidden gold climbs: the answer to a subset
    // would be an exact score of one task, and each subset would be a ladder of its own (2^T − 1 of them). A partial
    // one is kept (scored for the final ranking) with nothing on hidden gold released, and told so.
    const partial =
      this.options.closedRelease === 'ladder' &&
      outcome.status !== 'rejected' &&
      heldTasks.length > 0 &&
      heldTasks.length < HELD_TASKS[outcome.board].length;
    if (partial) {
      const all = HELD_TASKS[outcome.board];
      const missing = all.filter((t) => !heldTasks.includes(t));
      outcome = {
        ...outcome,
        warnings: [
          {
            severity: 'warning',
            code: 'CLOSED_INCOMPLETE',
            file: 'upload',
            message: `no score on hidden gold is released for an upload that leaves out one of the ${outcome.board} board's hidden tasks (missing: ${missing.join(', ')}); upload them together`,
            expected: all.map((t) => `${t}.jsonl`).join(', '),
          },
          ...outcome.warnings,
        ],
      };
    }
    const id = crypto.randomUUID();
    const duplicateOf = await q.firstWithHash(this.db, outcome.board, outcome.contentHash, who);
    const { errors, warnings, omitted } = outcome;
    // A rejected upload is answered with what is wrong and nothing else: no task's score, closed or not.
    const result =
      outcome.status === 'rejected'
        ? { ...outcome.result, tasks: {}, overall: null, overall_ci: null, errors, warnings }
        : { ...outcome.result, errors, warnings };
    // One Ladder per uploader and board: every upload on it answers all the board's hidden tasks. A pending upload
    // (no gold yet) gets its key now and climbs when the gold is imported (Gold.rescore).
    const ladderKey =
      outcome.status !== 'rejected' && heldTasks.length > 0 && !overQuota
        ? ladderKeyOf(who, outcome.board)
        : undefined;
    const gate: ReleaseInput = {
      mode: this.options.closedRelease,
      heldTasks,
      ladderKey: ladderKey ?? null,
      items:
        outcome.status === 'scored' && !partial ? ladderItemsOf(outcome.board, outcome.itemStats) : undefined,
    };
    const climbs = climbsLadder(gate);
    // The Ladder's step and the row it writes happen under one lock per ladder (in this process): two uploads of
    // one team racing would otherwise both be measured against the same best.
    const write = async (): Promise<{
      status: 200 | 201 | 202 | 422;
      body: UploadAnswer;
      replayed: boolean;
    }> => {
      // The one gate every score on hidden gold passes (gold/release.ts).
      let version: number | null = null;
      const release = await releaseOnHeldGold(gate, async () => {
        const state = await this.ladderState(outcome.board, ladderKey as string);
        version = state.version;
        return state.best;
      });
      const ladder = release.kind === 'ladder' ? release.step : undefined;
      const closedLadder = ladder && outcome.board === 'closed';
      // An upload on hidden gold that does not climb (a subset of the hidden tasks; one of them without gold yet; no
      // ladder) is answered with no score on hidden gold at all.
      const withheld = release.kind === 'withheld';
      const body: UploadAnswer = {
        id,
        status: outcome.status,
        board: outcome.board,
        // Under the Ladder, closed: the released mean of the uploaded closed tasks (all three: the board's overall).
        // Public: the five public tasks' overall, on public gold, as computed.
        overall: closedLadder
          ? ladder.released
          : outcome.status === 'rejected' || (withheld && outcome.board === 'closed')
            ? null
            : outcome.overall,
        // Under the Ladder no score on hidden gold is released but the Ladder's: the answer tells no more.
        result: ladder
          ? releasedResult(outcome.board, result, heldTasks, ladder.released)
          : withheld
            ? releasedResult(outcome.board, result, heldTasks, null)
            : result,
        errors,
        warnings,
        omitted,
        duplicate_of: duplicateOf ?? null,
        quota,
        ...(onHiddenGold ? { closed_quota: closedQuota } : {}),
        ...(ladder
          ? {
              ladder: {
                mechanism: 'ladder' as const,
                improved: ladder.improved,
                // On the public board the overall is not the released score: what was released, for which tasks.
                ...(outcome.board === 'public' ? { tasks: heldTasks, released: ladder.released } : {}),
              },
            }
          : {}),
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
            usage: m.usage ? JSON.stringify(m.usage) : null,
            source: input.source,
            ...(ladderKey ? { ladder_key: ladderKey } : {}),
            ...(ladder ? { released: ladder.released, ladder_improved: ladder.improved ? 1 : 0 } : {}),
            ...(outcome.itemStats ? { item_stats: JSON.stringify(outcome.itemStats) } : {}),
          },
          outcome.files,
          ladder ? { key: ladderKey as string, version, improved: ladder.improved } : undefined,
        );
      } catch (e) {
        // The same key raced in from a retry: the first to commit is the answer.
        const seen = idemKey ? await q.findByIdempotencyKey(this.db, idemKey) : undefined;
        if (seen) return { status: 200, body: JSON.parse(seen.response) as UploadAnswer, replayed: true };
        throw e;
      }
      // Only its row is new: the boards read it alone, and show it before the uploader hears back.
      await this.boards.added(id);
      return { status: UPLOAD_STATUS[outcome.status], body, replayed: false };
    };
    if (!climbs) return write();
    // Another process may move the ladder between the step and its row: then the step is computed again against the
    // new best (the ladders row's version decides, in the transaction that stores the upload).
    const climb = async (attempt: number): Promise<Awaited<ReturnType<typeof write>>> => {
      try {
        return await write();
      } catch (e) {
        if (e instanceof q.LadderMoved && attempt < 100) return climb(attempt + 1);
        throw e;
      }
    };
    return this.oneAtATime(ladderKey as string, () => climb(1));
  }

  /** An uploader's ladder on a board as it stands: its best so far, and the version a step is measured against. */
  private async ladderState(
    board: BoardName,
    key: string,
  ): Promise<{ best: LadderState | undefined; version: number | null }> {
    const { version, best } = await q.ladderState(this.db, key);
    const bestItems = best ? ladderItemsOf(board, JSON.parse(best.item_stats) as StoredItemStats) : undefined;
    return { best: best && bestItems ? { released: best.released, items: bestItems } : undefined, version };
  }

  /** Runs `f` after every earlier call with the same key has settled. */
  private oneAtATime<T>(key: string, f: () => Promise<T>): Promise<T> {
    const run = (this.ladderLocks.get(key) ?? Promise.resolve()).then(f);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.ladderLocks.set(key, settled);
    void settled.then(() => {
      if (this.ladderLocks.get(key) === settled) this.ladderLocks.delete(key);
    });
    return run;
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
    /** What the run spent, from its summary. */
    usage?: RunUsage | null;
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
            usage: input.usage ?? null,
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
