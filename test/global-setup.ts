/** Builds dist/ once before the tests, so end-to-end tests run the same CLI a user installs. */
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  execFileSync(process.execPath, [resolve(root, 'scripts/build.js')], { cwd: root, stdio: 'inherit' });
}
