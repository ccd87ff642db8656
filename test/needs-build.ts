/**
 * The unit tests (src/**\/*.test.ts) that need dist/: those that reach, through their imports, the built CLI, that is
 * a module that imports its path, `CLI` of test/helpers/data.ts (test/helpers/cli-process.ts, the helpers that start
 * workers or servers as processes). vitest.config.ts puts them with the end-to-end tests, whose project builds dist/
 * first; the rest run without a build: the CLI in process (test/helpers/cli.ts), worker threads from the sources
 * (test/source-hooks.js) and the browser's files from src/browser/ (src/report/assets.ts). Found from the imports, so
 * that a new test lands on the right side by itself.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** An import of the built CLI's path from test/helpers/data.ts. */
const IMPORTS_CLI = /\bimport\s*\{[^}]*\bCLI\b[^}]*\}\s*from\s*['"][^'"]*\/data\.js['"]/;

function relativeImports(file: string): string[] {
  const out: string[] = [];
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/\bfrom\s+['"](\.[^'"]+)['"]|\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    const base = resolve(dirname(file), (m[1] ?? m[2]) as string).replace(/\.js$/, '');
    const found = ['.ts', '.tsx'].map((ext) => base + ext).find((p) => existsSync(p));
    if (found) out.push(found);
  }
  return out;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** The unit test files under `root`/src that need dist/, relative to `root`. */
export function unitTestsNeedingBuild(root: string): string[] {
  const memo = new Map<string, boolean>();
  const needs = (file: string): boolean => {
    const known = memo.get(file);
    if (known !== undefined) return known;
    memo.set(file, false); // an import cycle ends here
    const answer = IMPORTS_CLI.test(readFileSync(file, 'utf8')) || relativeImports(file).some(needs);
    memo.set(file, answer);
    return answer;
  };
  return testFiles(join(root, 'src'))
    .filter(needs)
    .map((f) => relative(root, f).split('\\').join('/'))
    .sort();
}
