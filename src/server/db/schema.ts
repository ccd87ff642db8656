/**
 * The leaderboard's tables, as Kysely sees them. One schema for SQLite and PostgreSQL: text ids (UUIDs), ISO-8601
 * text timestamps, integers for booleans and JSON kept as text, so that every query means the same on both.
 */
import type { Generated, Insertable, Selectable } from 'kysely';

export type BoardName = 'public' | 'closed';
/** `pending`: a valid closed-test upload waiting for the admin to import that test's gold. */
export type SubmissionStatus = 'scored' | 'rejected' | 'pending';
export const KINDS = ['LLM', 'encoder', 'feature-based', 'baseline', 'human'] as const;
export type SubmissionKind = (typeof KINDS)[number];

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
  /** Kept for audit (rejected uploads too), never shown to anyone but the admin. */
  files: string;
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

export interface PrivateGoldTable {
  task: string;
  item_id: string;
  answer: string;
}

export interface Database {
  submissions: SubmissionsTable;
  submission_files: SubmissionFilesTable;
  tokens: TokensTable;
  settings: SettingsTable;
  audit_log: AuditTable;
  private_gold: PrivateGoldTable;
}

export type SubmissionRow = Selectable<SubmissionsTable>;
/** A submission without its full result and first answer: what boards and lists need. */
export type ListedRow = Omit<SubmissionRow, 'result' | 'response'>;
export type NewSubmission = Insertable<SubmissionsTable>;
export type TokenRow = Selectable<TokensTable>;
export type AuditRow = Selectable<AuditTable>;
