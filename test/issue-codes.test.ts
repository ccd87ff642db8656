/**
 * Every code a submission problem can carry (`IssueCode`, src/scoring/issues.ts) is listed in the docs a user reads
 * when one is printed: docs/scoring.md (eval, compare, rank, report) or docs/leaderboard.md (uploads).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

describe('issue codes', () => {
  it('are each named in docs/scoring.md or docs/leaderboard.md', () => {
    const source = read('src/scoring/issues.ts');
    const union = source.slice(source.indexOf('export type IssueCode'), source.indexOf('export interface'));
    const codes = [...union.matchAll(/\| '([A-Z_]+)'/g)].map((m) => m[1] as string);
    expect(codes).toContain('WRONG_SPLIT');
    const docs = read('docs/scoring.md') + read('docs/leaderboard.md');
    expect(codes.filter((c) => !docs.includes(`\`${c}\``))).toEqual([]);
  });
});
