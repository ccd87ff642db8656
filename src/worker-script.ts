/**
 * Where a worker thread's script is: beside the module that starts it. Built (dist/), that is `NAME.js`; run from the
 * TypeScript sources (the tests), `NAME.ts`, which the process that starts it must be able to load: vitest's test
 * processes register test/source-hooks.js for that, and their worker threads inherit it. Never a build of other
 * sources: a stale dist/ cannot stand in for the sources under test.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function workerScript(name: string, moduleUrl: string): URL {
  const here = new URL(`./${name}`, moduleUrl);
  if (existsSync(fileURLToPath(here))) return here;
  const source = new URL(`./${name.replace(/\.js$/, '.ts')}`, moduleUrl);
  if (moduleUrl.endsWith('.ts') && existsSync(fileURLToPath(source))) return source;
  throw new Error(`worker script not found at ${fileURLToPath(here)}; run \`npm run build\` first`);
}
