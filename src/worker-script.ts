/** Where a worker thread's script is: beside the module that starts it, or, run from TypeScript sources (tests), its build in dist/. */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

export function workerScript(name: string, moduleUrl: string): URL {
  const here = new URL(`./${name}`, moduleUrl);
  const path = fileURLToPath(here);
  if (existsSync(path)) return here;
  const built = path.replace(/([/\\])src([/\\])(?!.*[/\\]src[/\\])/, '$1dist$2');
  if (built !== path && existsSync(built)) return pathToFileURL(built);
  throw new Error(`worker script not found at ${path}; run \`npm run build\` first`);
}
