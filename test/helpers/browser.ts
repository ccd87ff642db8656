/**
 * A real browser for page tests: Debian's Chromium driven by playwright-core (no browser download). Where Chromium
 * is absent the tests are skipped with the reason, except under `RUMEDBENCH_REQUIRE_BROWSER=1` (set by .ci/run,
 * which installs it), where its absence fails them.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { REPO_ROOT } from './data.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const BROWSER_REQUIRED = process.env.RUMEDBENCH_REQUIRE_BROWSER === '1';
export const HAVE_BROWSER = existsSync(CHROMIUM);
export const NO_BROWSER_REASON = `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;
if (!HAVE_BROWSER && !BROWSER_REQUIRED)
  console.warn(`[rumedbench tests] skipping browser tests: ${NO_BROWSER_REASON}`);

/** Screenshots that tests keep for people to look at (ignored by git). */
export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');

export function artifactPath(...parts: string[]): string {
  const file = join(ARTIFACTS, ...parts);
  mkdirSync(join(file, '..'), { recursive: true });
  return file;
}

export async function launchBrowser(): Promise<Browser> {
  if (!HAVE_BROWSER) throw new Error(NO_BROWSER_REASON);
  return chromium.launch({
    executablePath: CHROMIUM,
    // Headless, and nothing that phones home: this machine has no network beyond loopback.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
