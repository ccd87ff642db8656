/** The issues an upload is answered with, bounded: a hostile file cannot make a huge answer or database row. */
import type { SubmissionIssue } from '../../scoring/issues.js';

const CUT = 300;
const cut = (v: string | undefined): string | undefined =>
  v === undefined || v.length <= CUT ? v : `${v.slice(0, CUT)}… (${v.length} characters)`;

/** The first `perCode` issues of each code, their strings cut to a few hundred characters; the rest counted. */
export function capIssues(
  issues: readonly SubmissionIssue[],
  perCode = 20,
): { shown: SubmissionIssue[]; omitted: Record<string, number> } {
  const seen = new Map<string, number>();
  const shown: SubmissionIssue[] = [];
  const omitted: Record<string, number> = {};
  for (const i of issues) {
    const n = (seen.get(i.code) ?? 0) + 1;
    seen.set(i.code, n);
    if (n > perCode) {
      omitted[i.code] = (omitted[i.code] ?? 0) + 1;
      continue;
    }
    const c: SubmissionIssue = { ...i, message: cut(i.message) as string, file: cut(i.file) as string };
    for (const k of ['id', 'expected', 'found', 'task'] as const) {
      const v = cut(i[k]);
      if (v !== undefined) c[k] = v;
    }
    shown.push(c);
  }
  return { shown, omitted };
}
