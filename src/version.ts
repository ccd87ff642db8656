/**
 * The package version, read once from the package.json above this module: one folder up from src/ and dist/, two
 * from the CLI's bundle in dist/bin/ (scripts/build.js), so it is looked for upward.
 */
import { existsSync, readFileSync } from 'node:fs';

function packageJson(): URL {
  for (let dir = new URL('./', import.meta.url); ; ) {
    const file = new URL('package.json', dir);
    if (existsSync(file)) return file;
    const up = new URL('../', dir);
    if (up.href === dir.href) throw new Error(`no package.json above ${import.meta.url}`);
    dir = up;
  }
}

export const VERSION: string = (JSON.parse(readFileSync(packageJson(), 'utf8')) as { version: string })
  .version;
