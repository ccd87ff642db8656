/**
 * Builds dist/: the library and the CLI, then the browser's scripts (their own tsconfig, with the DOM's types and
 * none of Node's), then the stylesheets beside them. The report inlines them and the server serves them from there.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';
import { STAMP, sourceDigest } from './build-stamp.js';
import { watFiles, watModuleSource } from './wat.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const digest = sourceDigest(root);
const tsc = join(root, 'node_modules/typescript/bin/tsc');
for (const project of ['tsconfig.build.json', 'src/browser/tsconfig.json'])
  execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });
// The WebAssembly kernels: src/<room>/NAME.wat assembled (wabt, from node_modules: no network) into the module
// dist/<room>/NAME.wat.js that dist/<room>/*.js imports, before the bundle below takes them in.
for (const wat of watFiles(join(root, 'src'))) {
  const to = join(root, 'dist', `${relative(join(root, 'src'), wat)}.js`);
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, await watModuleSource(wat));
}
const out = join(root, 'dist/browser');
mkdirSync(out, { recursive: true });
for (const f of readdirSync(join(root, 'src/browser')).filter((f) => f.endsWith('.css')))
  copyFileSync(join(root, 'src/browser', f), join(out, f));
// The package's bin: the CLI bundled into one entry file and a few lazily loaded chunks (issue #47). Node.js loads
// an ES module graph file by file, about a third of a millisecond each, and a cold `eval` loaded 41 of them: the
// bundle starts about 8 ms sooner, commander bundled into it 4 ms more (commander is CommonJS, loaded through the
// ESM-to-CommonJS bridge). Other packages stay outside it (native addons, large optional ones). Its files sit at
// dist/bin/, two folders deep like dist/<room>/, so that what a module finds beside or above itself (the shipped
// tasks, the browser assets, the package.json; ../worker-script.ts) is found from the bundle too; the worker threads'
// scripts are entries of their own beside it. dist/index.js, the library, stays tsc's files.
const bin = join(root, 'dist/bin');
rmSync(bin, { recursive: true, force: true });
const BUNDLED = new Set(['commander']);
const bundle = await rolldown({
  input: {
    rumedbench: join(root, 'dist/cli/main.js'),
    'score-worker': join(root, 'dist/server/score-worker.js'),
    'ovr-worker': join(root, 'dist/ml/ovr-worker.js'),
    'lstm-worker': join(root, 'dist/ml/lstm-worker.js'),
    'tokenize-worker': join(root, 'dist/encoders/tokenize-worker.js'),
  },
  platform: 'node',
  external: (id) => !id.startsWith('.') && !id.startsWith('/') && !BUNDLED.has(id),
  logLevel: 'warn',
});
await bundle.write({
  dir: bin,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: '[name]-[hash].js',
});
await bundle.close();
// Run by path (`npx rumedbench` in a clone, a shell): npm's install sets the mode only for the packages it installs.
chmodSync(join(bin, 'rumedbench.js'), 0o755);
// The unbundled entry stays runnable by path too (the bin of releases before the bundle, which npx's cache of a
// project may still link to).
chmodSync(join(root, 'dist/cli/main.js'), 0o755);
// Digested before it is written: sources edited during the build leave a stamp that no longer matches them.
writeFileSync(join(root, STAMP), `${digest}\n`);
