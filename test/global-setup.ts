/**
 * Builds dist/ before the tests that run it (the end-to-end project, see vitest.config.ts), so they run the same CLI
 * a user installs; skipped when dist/ already holds a build of the sources as they are (scripts/build-stamp.js).
 */
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtFromCurrentSources } from '../scripts/build-stamp.js';

export default function setup(): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  if (builtFromCurrentSources(root)) return;
  execFileSync(process.execPath, [resolve(root, 'scripts/build.js')], { cwd: root, stdio: 'inherit' });
}
