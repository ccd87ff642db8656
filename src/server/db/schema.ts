/**
 * The leaderboard's tables, as Kysely sees them. One schema for SQLite and PostgreSQL: text ids (UUIDs), ISO-8601
 * text timestamps, integers for booleans and JSON kept as text, so that every query means the same on both.
 */
import type { Generated, Insertable, Selectable } from 'kysely';

export type BoardName = 'public' | 'closed';
/** `pending`: a valid closed-test upload waiting for the admin to import that test's gold. */
export type SubmissionStatus = 'scored' | 'rejected' | 'pending';
/** `unknown`: an upload that did not say (a plain predictions folder, no run summary to read it from). */
export const KINDS = ['LLM', 'encoder', 'feature-based', 'baseline', 'human', 'unknown'] as const;
export type SubmissionKind = (typeof KINDS)[number];
/** What an upload may call itself: human rows come only from the platform's own evaluation campaigns. */
export const UPLOAD_KINDS = KINDS.filter((k) => k !== 'human');
/** Longest text each submission field takes: the upload check and both forms read it. */
export const FIELD_LIMITS = { model: 200, team: 200, description: 4000, link: 500, params: 100 } as const;

export type SubmissionSource = 'upload' | 'platform' | 'campaign';

export interface SubmissionsTable {
  id: string;
  created_at: string;
  board: BoardName;
  status: SubmissionStatus;
  model: string;
  team: string;
  description: string;
  link: string | null;
  kind: SubmissionKind;
  params: string | null;
  open_weights: number;
  /** The API token that uploaded it, or null for an anonymous upload. */
  token_id: string | null;
  address: string;
  /** sha256 of the normalised content; repeats are linked through it. */
  content_hash: string;
  /** The earliest submission with the same content on the same board, if any. */
  duplicate_of: string | null;
  /** Scope and key of an `Idempotency-Key` header: a retried upload lands once. */
  idempotency_key: string | null;
  /** The scorer's result (`rumedbench eval --json` schema), as JSON. */
  result: string;
  /** What a board row shows (per task: n, metrics, score and intervals; the overall's interval), as JSON: boards
   * read this, not the whole result with its breakdowns. */
  summary: string;
  overall: number | null;
  /** The API answer as first sent, for idempotent replays. */
  response: string;
  hidden: Generated<number>;
  flagged: Generated<number>;
  verified: Generated<number>;
  /** Set on entries the platform ran itself (JSON: plan id, endpoint, settings, prompt versions, manifest). */
  platform_run: Generated<string | null>;
  /** What the run's trust files say, sent with the upload and checked (scoring/trust-files.ts), as JSON. */
  trust: Generated<string | null>;
  /** What the uploaded run spent (tokens, cost where priced; scoring/run-usage.ts), as its uploader says, as JSON. */
  usage: Generated<string | null>;
  /** How it came: uploaded, run by the platform's workers, or a human row published by a campaign. */
  source: Generated<SubmissionSource>;
  /** Kept for audit (rejected uploads too), never shown to anyone but the admin. */
  files: string;
  /** Whose Ladder the entry is on: `team:<name>|<board>` or `address:<address /64>|<board>`. */
  ladder_key: Generated<string | null>;
  /** The score the Ladder released for it (null with a ladder key: none; without one: shown as scored). */
  released: Generated<number | null>;
  /** Unused since migration 0011 (the Ladder reads `item_stats`); kept empty. */
  item_scores: Generated<string | null>;
  /** On a ladder: 1 where this upload beat its uploader's best (and became it), 0 where it did not. */
  ladder_improved: Generated<number | null>;
  /** Per-item counts of each task (boards/ranking.ts `StoredItemStats`), as JSON; server-side only. */
  item_stats: Generated<string | null>;
}

export interface UploadQuotaTable {
  /** `token:<id>` or `address:<address key>`. */
  key: string;
  /** `all` (every upload) or `closed` (uploads on hidden gold: the closed board's, a host-held public test's). */
  scope: string;
  /** The UTC day, YYYY-MM-DD. */
  day: string;
  used: number;
}

export interface SubmissionFilesTable {
  submission_id: string;
  name: string;
  content: string;
}

export interface TokensTable {
  id: string;
  team: string;
  token_hash: string;
  created_at: string;
  revoked_at: string | null;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface AuditTable {
  id: string;
  at: string;
  actor: string;
  action: string;
  submission_id: string | null;
  detail: string;
}

/** Gold the host holds (never shown): the closed tests' (split private_test) and host-held test splits. */
export interface HeldGoldTable {
  split: string;
  task: string;
  item_id: string;
  answer: string;
}

export type CampaignSplit = 'test' | 'private_test';

export interface CampaignsTable {
  id: string;
  name: string;
  created_at: string;
  task: string;
  split: CampaignSplit;
  /** The sampled item ids, in sample order, as a JSON array. */
  items: string;
  /** How many annotators answer each item. */
  overlap: number;
  seed: number;
  guidelines: string;
  status: 'open' | 'closed';
  /** The human row published from the campaign's answers, if any. */
  submission_id: string | null;
}

export interface AnnotatorsTable {
  id: string;
  campaign_id: string;
  /** "annotator 1", …: what the admin sees; annotators are not named in the data. */
  label: string;
  /** Assignment order: the first answer by this order decides where the overlap is even. */
  position: number;
  token_hash: string;
  revoked_at: string | null;
}

export interface AssignmentsTable {
  annotator_id: string;
  item_id: string;
  /** The item's place in this annotator's queue. */
  position: number;
  campaign_id: string;
}

export interface AnswersTable {
  annotator_id: string;
  item_id: string;
  campaign_id: string;
  /** JSON: a label, a ranked list, or IOB2 tags; null when skipped. */
  answer: string | null;
  skipped: number;
  /** Time spent on the item, summed over visits. */
  time_ms: number;
  created_at: string;
  updated_at: string;
}

/** A signed-in admin's browser session: the cookie holds a random token, the table its sha256; sign-out deletes it. */
export interface AdminSessionsTable {
  token_hash: string;
  created_at: string;
  expires_at: string;
  address: string;
}

export interface Database {
  admin_sessions: AdminSessionsTable;
  submissions: SubmissionsTable;
  submission_files: SubmissionFilesTable;
  tokens: TokensTable;
  settings: SettingsTable;
  audit_log: AuditTable;
  held_gold: HeldGoldTable;
  campaigns: CampaignsTable;
  annotators: AnnotatorsTable;
  assignments: AssignmentsTable;
  answers: AnswersTable;
  upload_quota: UploadQuotaTable;
  ladders: LaddersTable;
  replicate_rows: ReplicateRowsTable;
  sign_in_failures: SignInFailuresTable;
}

/**
 * The admin secret's attempts per address key (IPv6: /64) in the current window, counted before each check and
 * cleared by a right secret: every process on the database counts into one row.
 */
export interface SignInFailuresTable {
  key: string;
  /** Milliseconds since the epoch when the window began. */
  window_start: number;
  attempts: number;
}

/**
 * Each ranked entry's bootstrap replicates of one task, so that a restart reads them instead of drawing them again.
 * `key` names what a row depends on (the entry's counts, the items, the seed, the resamples): a row whose key is not
 * the one wanted is drawn again and replaced.
 */
export interface ReplicateRowsTable {
  submission_id: string;
  task: string;
  key: string;
  /** Float64, little-endian: the observed score, then the score in each replicate; deflated, base64. */
  data: string;
}

/**
 * One row per ladder: its best so far and a version that every upload on it moves by one, in the transaction that
 * stores the upload. An upload whose step was computed against another version is computed again, so that uploads
 * from any number of server processes climb a ladder one at a time.
 */
export interface LaddersTable {
  key: string;
  best_id: string | null;
  version: number;
  /**
   * The best's state as the Ladder needs it (its release, in percent, and its per-item counts, JSON of
   * StoredItemStats), kept here rather than read from the best's row: the admin may delete or hide that row, and a
   * ladder whose best vanished would otherwise start again and release the next upload exactly (issue #57).
   */
  best_released: Generated<number | null>;
  best_items: Generated<string | null>;
}

export type SubmissionRow = Selectable<SubmissionsTable>;
/** A submission without its full result and first answer: what boards and lists need. */
export type ListedRow = Omit<SubmissionRow, 'result' | 'response' | 'item_scores' | 'item_stats'>;
export type NewSubmission = Insertable<SubmissionsTable>;
export type TokenRow = Selectable<TokensTable>;
export type AuditRow = Selectable<AuditTable>;
export type CampaignRow = Selectable<CampaignsTable>;
export type AnnotatorRow = Selectable<AnnotatorsTable>;
export type AnswerRow = Selectable<AnswersTable>;
