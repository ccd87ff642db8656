/**
 * Upload errors on a web page: one line per kind of problem (its code and file), counted, with the first few shown;
 * no advice for the command line (a page's reader has no `--file-gold` to give).
 */
import { describe, expect, it } from 'vitest';
import { IssueList } from './layout.js';

const issue = (code: string, id: string, severity = 'error') => ({
  severity,
  code,
  file: 'RuMedDaNet.jsonl',
  id,
  message: code === 'MISSING_ITEM' ? 'no answer for this item' : 'not an item of the split',
});

describe('IssueList', () => {
  it('gives one line per kind, counted, the first three shown, and no command-line advice', async () => {
    const issues = [
      issue('UNKNOWN_ID', 'x1'),
      ...Array.from({ length: 256 }, (_, i) => issue('MISSING_ITEM', `q${i}`)),
      {
        severity: 'warning',
        code: 'DATA_VERSION_HINT',
        file: 'RuMedDaNet.jsonl',
        message:
          '1 unknown and 256 missing ids: … --file-gold scores a RuMedBench-format file on the gold it carries',
      },
    ];
    const html = String(await IssueList({ issues }));
    const lines = [...html.matchAll(/<li[^>]*>([\s\S]*?)<\/li>/g)].map((m) =>
      (m[1] as string)
        .replace(/<[^>]+>/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    );
    expect(lines).toEqual([
      'UNKNOWN_ID RuMedDaNet.jsonl (id x1): not an item of the split',
      'MISSING_ITEM RuMedDaNet.jsonl × 256, the first (id q0): no answer for this item — ids q0, q1, q2 and 253 more',
    ]);
  });
});
