/**
 * The browser's files: TypeScript and CSS in src/browser/, built into dist/browser/ by scripts/build.js. The report
 * inlines them and the server serves them, so both read them from the built package, at first use. Run from the
 * TypeScript sources (the tests), they are made from src/browser/ the way the build makes them (the CSS as it is,
 * the scripts compiled by TypeScript with src/browser/tsconfig.json), so that no build is needed and a stale dist/
 * never stands in for the sources under test.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export type BrowserAsset =
  | 'report.js'
  | 'report.css'
  | 'pages.js'
  | 'pages.css'
  | 'annotate.js'
  | 'annotate.css';

/** src/report/ and dist/report/ both sit two levels below the package root. */
const DIR = new URL('../../dist/browser/', import.meta.url);
const cache = new Map<BrowserAsset, string>();
const FROM_SOURCES = import.meta.url.endsWith('.ts');

/** `name` made from src/browser/ as scripts/build.js makes it (TypeScript is a development dependency, here). */
function fromSources(name: BrowserAsset): string {
  const dir = new URL('../browser/', import.meta.url);
  if (name.endsWith('.css')) return readFileSync(new URL(name, dir), 'utf8');
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  const config = fileURLToPath(new URL('tsconfig.json', dir));
  const { options } = ts.parseJsonConfigFileContent(
    ts.readConfigFile(config, ts.sys.readFile).config,
    ts.sys,
    fileURLToPath(dir),
  );
  const file = new URL(name.replace(/\.js$/, '.ts'), dir);
  return ts.transpileModule(readFileSync(file, 'utf8'), {
    compilerOptions: options,
    fileName: fileURLToPath(file),
  }).outputText;
}

/** `name` as `npm run build` wrote it into dist/browser/. */
function fromBuild(name: BrowserAsset): string {
  try {
    return readFileSync(new URL(name, DIR), 'utf8');
  } catch (e) {
    throw new Error(
      `dist/browser/${name} is missing (${(e as NodeJS.ErrnoException).code}): run \`npm run build\``,
    );
  }
}

export function browserAsset(name: BrowserAsset): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = FROM_SOURCES ? fromSources(name) : fromBuild(name);
    cache.set(name, text);
  }
  return text;
}
