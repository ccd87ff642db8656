/**
 * The leaderboard's services over one database and one scoring pool, composed, each built here once with what it
 * works with: `boards` (the boards as data), `uploads` (who may upload, and each upload scored and stored), `gold`
 * (the closed tests' gold and rescoring), `admin` (the admin secret, sessions, tokens and actions), `campaigns`
 * (human evaluation) and `runs` (evaluations the platform runs, through its workers' queue on PostgreSQL). Each lives
 * in its concern's folder; the route groups and the admin commands (cli/serve.ts) call them; this module only
 * builds them.
 */

import { type Logger, silentLogger } from '../log.js';
import type { QueueDb } from '../workers/store.js';
import { AdminService } from './admin/service.js';
import type { Boards as BoardsType } from './boards/service.js';
import { Boards } from './boards/service.js';
import { Campaigns } from './campaigns/service.js';
import type { Db } from './db/connect.js';
import { Gold } from './gold/service.js';
import { Runs } from './runs/service.js';
import type { Scorer } from './scorer.js';
import { type UploadOptions, Uploads } from './submissions/service.js';
import { DEFAULT_LIMITS } from './upload.js';

export type { Quota, UploadAnswer } from './submissions/service.js';

export interface LeaderboardOptions extends UploadOptions {
  dataDir: string;
  /** Reads of a board's API and CSV export per address (IPv6: /64) and minute, in this process; 0: no limit. */
  apiPerMinute: number;
  /** What the boards' caches take the time from (as `Date.now`, its default): tests move it instead of waiting. */
  clock?: () => number;
}

export const DEFAULT_OPTIONS: Omit<LeaderboardOptions, 'dataDir'> = {
  anonymous: true,
  anonymousPerMinute: 20,
  tokenPerMinute: 60,
  apiPerMinute: 120,
  quotaPerDay: 0,
  closedQuotaPerDay: 5,
  closedAnonymous: false,
  closedRelease: 'ladder',
  bootstrap: 1000,
  seed: 0,
  limits: DEFAULT_LIMITS,
};

export class Leaderboard {
  readonly boards: BoardsType;
  readonly gold: Gold;
  readonly uploads: Uploads;
  readonly admin: AdminService;
  readonly campaigns: Campaigns;
  readonly runs: Runs;

  constructor(
    readonly db: Db,
    readonly scorer: Scorer,
    readonly options: LeaderboardOptions,
    /** The platform's: its workers' queue (without it, /runs says what it needs) and the log its runs report to. */
    platform: { queue?: QueueDb; log?: Logger } = {},
  ) {
    this.boards = new Boards(db.db, scorer, options);
    this.gold = new Gold(db.db, scorer, this.boards, options);
    this.uploads = new Uploads(db.db, scorer, this.gold, this.boards, options);
    this.admin = new AdminService(db.db, this.boards, options.clock);
    this.campaigns = new Campaigns({
      db: db.db,
      scorer,
      boards: this.boards,
      gold: this.gold,
      options,
    });
    // New closed-test gold re-scores the campaigns' human rows, whichever door imports it (`serve import-gold` too).
    this.gold.afterImport.push(() => this.campaigns.republishClosed());
    this.runs = new Runs(this, platform.queue, platform.log ?? silentLogger);
  }

  async close(): Promise<void> {
    await this.runs.queue?.close();
    await this.scorer.close();
    await this.db.close();
  }
}
