/**
 * Problems found in a submission. Each names the file, the line and the id where it has them, what was expected
 * and what was found; `code` is stable for scripts. Errors make the submission fail (exit 1); warnings are shown
 * and kept in the JSON result but do not stop scoring.
 */
import { formatLocation } from '../errors.js';

export type IssueCode =
  | 'SUBMISSION_NOT_FOUND'
  | 'BAD_ZIP'
  | 'BAD_ZIP_LAYOUT'
  | 'UNKNOWN_TASK_FILE'
  | 'IGNORED_FILE'
  | 'EMPTY_FILE'
  | 'MALFORMED_JSON'
  /** A whole file in another format (CSV, a JSON array): one error, not one per line. */
  | 'NOT_JSONL'
  | 'NOT_AN_OBJECT'
  | 'MISSING_ID'
  | 'DUPLICATE_ID'
  | 'UNKNOWN_ID'
  | 'MISSING_ITEM'
  | 'MISSING_PREDICTION'
  | 'MIXED_FORMAT'
  | 'WRONG_TYPE'
  | 'EMPTY_PREDICTION'
  | 'UNKNOWN_LABEL'
  | 'TOO_MANY_PREDICTIONS'
  | 'DUPLICATE_PREDICTION'
  | 'NER_LENGTH_MISMATCH'
  | 'INVALID_GOLD'
  | 'GOLD_MISMATCH'
  | 'NO_REFERENCE_DATA'
  | 'NO_GOLD'
  /** A MedBench platform task (ECG2Pathology) in an upload to a board that does not hold it. */
  | 'PLATFORM_ONLY_TASK'
  | 'LABEL_OUTSIDE_TRAIN'
  | 'MISSING_TASK'
  /** `rank`, `report`: a task left out of the ranking because this file does not answer the items the others do. */
  | 'TASK_NOT_RANKED'
  | 'DATA_VERSION_HINT'
  | 'FILE_GOLD_IGNORED'
  | 'UNANSWERED_ITEMS'
  // Uploads to the leaderboard server (src/server/upload.ts):
  | 'UPLOAD_TOO_LARGE'
  | 'TOO_MANY_FILES'
  | 'BAD_FILE_NAME'
  | 'DUPLICATE_FILE'
  | 'NESTED_ARCHIVE'
  | 'ZIP_BOMB'
  | 'BAD_ENCODING'
  | 'LINE_TOO_LONG'
  | 'TOO_MANY_LINES'
  | 'NO_FILES'
  /** Task files were read, but no task could be scored (no gold here for any of them): a score was asked for. */
  | 'NOTHING_SCORED'
  | 'WRONG_BOARD'
  /** Under the Ladder, an upload on hidden gold that leaves out one of its board's hidden tasks. */
  | 'CLOSED_INCOMPLETE'
  /** A re-score: a task file stored before its board held the task's hidden gold, set aside (src/server/gold/release.ts). */
  | 'HELD_GOLD_AFTER_UPLOAD'
  /** A platform evaluation over its team's daily quota of uploads on hidden gold: nothing on hidden gold released. */
  | 'CLOSED_QUOTA_USED'
  /** The ids answer another split of the task (dev predictions scored as test). */
  | 'WRONG_SPLIT'
  /**
   * An lm-eval output folder that cannot be read as one run: several runs in it, an unreadable results file, one
   * task answered by two lm-eval tasks (its log-likelihood and generation prompts), a sample without one reply.
   */
  | 'LMEVAL_RUN'
  /** An lm-eval task that asked the model otherwise than we ask (a task we did not export, an edited one). */
  | 'LMEVAL_PROMPT_MISMATCH'
  /** lm-eval answered a split other than test (RuMedTest's private test): not scored with the test splits. */
  | 'LMEVAL_OTHER_SPLIT';

export interface SubmissionIssue {
  severity: 'error' | 'warning';
  code: IssueCode;
  /** The file as the user named it (a zip entry is shown as `archive.zip!entry`). */
  file: string;
  line?: number;
  id?: string;
  task?: string;
  message: string;
  expected?: string;
  found?: string;
}

export function formatIssue(issue: SubmissionIssue): string {
  const where = formatLocation(issue);
  const detail: string[] = [];
  if (issue.expected !== undefined) detail.push(`expected ${issue.expected}`);
  if (issue.found !== undefined) detail.push(`found ${issue.found}`);
  const tail = detail.length > 0 ? ` (${detail.join('; ')})` : '';
  return `${issue.severity}: ${where}: ${issue.message}${tail} [${issue.code}]`;
}

/** A short, printable rendering of a JSON value for messages. */
export function show(value: unknown, max = 60): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
