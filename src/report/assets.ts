/**
 * The browser's files: TypeScript and CSS in src/browser/, built into dist/browser/ by scripts/build.js. The report
 * inlines them and the server serves them, so both read them from the built package, at first use.
 */
import { readFileSync } from 'node:fs';

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

export function browserAsset(name: BrowserAsset): string {
  let text = cache.get(name);
  if (text === undefined) {
    try {
      text = readFileSync(new URL(name, DIR), 'utf8');
    } catch (e) {
      throw new Error(
        `dist/browser/${name} is missing (${(e as NodeJS.ErrnoException).code}): run \`npm run build\``,
      );
    }
    cache.set(name, text);
  }
  return text;
}
