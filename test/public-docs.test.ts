/**
 * The public docs speak to a user, not to this repository's developers: no path of the developers' workspace
 * (`../shared`, "this project's workspace"), and every environment variable the code reads is in troubleshooting's
 * table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';

/** The user's pages: the README and docs/, but the developers' guide (which names the workspace on purpose). */
const PUBLIC = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'development.md')
    .map((f) => `docs/${f}`),
];

/** Every `RUMEDBENCH_*` name in the library's sources (tests' own variables are theirs). */
function variablesRead(dir: string): Set<string> {
  const out = new Set<string>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.test.ts')) continue;
    const text = readFileSync(join(e.parentPath, e.name), 'utf8');
    for (const m of text.matchAll(/\bRUMEDBENCH_[A-Z][A-Z_]*[A-Z]\b/g)) out.add(m[0]);
  }
  return out;
}

describe('the public docs', () => {
  it('name no path of the developers’ workspace', () => {
    const found = PUBLIC.flatMap((page) =>
      readFileSync(join(REPO_ROOT, page), 'utf8')
        .split('\n')
        .flatMap((line, i) => (/\.\.\/shared\b|project's workspace/.test(line) ? [`${page}:${i + 1}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('list every environment variable the code reads in troubleshooting’s table', () => {
    const table = readFileSync(join(REPO_ROOT, 'docs', 'troubleshooting.md'), 'utf8');
    const missing = [...variablesRead(join(REPO_ROOT, 'src'))]
      .filter((v) => !table.includes(`\`${v}\``))
      .sort();
    expect(missing).toEqual([]);
  });
});
