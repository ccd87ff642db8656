/**
 * Builds dist/: the library and the CLI, then the browser's scripts (their own tsconfig, with the DOM's types and
 * none of Node's), then the stylesheets beside them. The report inlines them and the server serves them from there.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STAMP, sourceDigest } from './build-stamp.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const digest = sourceDigest(root);
const tsc = join(root, 'node_modules/typescript/bin/tsc');
for (const project of ['tsconfig.build.json', 'src/browser/tsconfig.json'])
  execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
const out = join(root, 'dist/browser');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(join(root, 'src/browser')).filter((f) => f.endsWith('.css')))
  copyFileSync(join(root, 'src/browser', f), join(out, f));
// The package's bin, run by path (`npx rumedbench` in a clone, a shell): tsc writes it 0644, npm's install sets the
// mode only for the packages it installs.
chmodSync(join(root, 'dist/cli/main.js'), 0o755);
// Digested before it is written: sources edited during the build leave a stamp that no longer matches them.
writeFileSync(join(root, STAMP), `${digest}\n`);
