/**
 * What dist/ was built from: a digest of every file the build reads (src/, the tsconfigs, package.json, the build script). The build
 * writes it to dist/.build-stamp; the tests' global set-up builds again only when the sources no longer match, so a
 * second test run (or one file's) does not pay a minute for a build it already has.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const INPUTS = [
  'src',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'scripts/build.js',
  'scripts/wat.js',
];

/** The digest of the build's inputs under `root`: their paths and contents, in a stable order. */
export function sourceDigest(root) {
  const hash = createHash('sha256');
  const add = (path) => {
    const rel = relative(root, path);
    if (rel.endsWith('.test.ts')) return;
    hash.update(rel).update('\0').update(readFileSync(path)).update('\0');
  };
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) add(p);
    }
  };
  for (const input of INPUTS) {
    const p = join(root, input);
    if (!existsSync(p)) continue;
    if (input === 'src') walk(p);
    else add(p);
  }
  return hash.digest('hex');
}

export const STAMP = 'dist/.build-stamp';

/** Whether dist/ holds a build of the sources as they are now. */
export function builtFromCurrentSources(root) {
  const stamp = join(root, STAMP);
  return existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === sourceDigest(root);
}
