/** What a submission reader gives: the task files it found, and what it could not read (submission.ts, lm-eval.ts). */
import type { JsonlLine } from '../data/jsonl.js';
import type { SubmissionIssue } from './issues.js';

export interface SubmissionFile {
  task: string;
  /** How messages name the file. */
  file: string;
  lines: JsonlLine[];
}

export interface Submission {
  source: string;
  files: SubmissionFile[];
  issues: SubmissionIssue[];
}
