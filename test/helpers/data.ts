/**
 * Where tests find the public RuMedBench files: RUMEDBENCH_DATA, else ../shared/rumedbench/data beside the
 * repository. Tests that need them are skipped with a visible reason when neither exists.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHARED = resolve(REPO_ROOT, '..', 'shared', 'rumedbench');

function find(): string | undefined {
  const fromEnv = process.env.RUMEDBENCH_DATA;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const shared = join(SHARED, 'data');
  return existsSync(shared) ? shared : undefined;
}

export const DATA_DIR = find();
export const REFERENCE_PREDICTIONS = existsSync(join(SHARED, 'reference-predictions'))
  ? join(SHARED, 'reference-predictions')
  : undefined;
export const PLATFORM_SUBMISSIONS = existsSync(join(SHARED, 'platform-submissions'))
  ? join(SHARED, 'platform-submissions')
  : undefined;

export const NO_DATA_REASON =
  'RuMedBench data not found: set RUMEDBENCH_DATA or place ../shared/rumedbench beside the repo';

/** `.ci/run` sets RUMEDBENCH_REQUIRE_DATA=1: there a missing data folder fails the run instead of skipping suites. */
const DATA_REQUIRED = process.env.RUMEDBENCH_REQUIRE_DATA === '1';
const missing = [
  ...(DATA_DIR ? [] : ['the data folder']),
  ...(REFERENCE_PREDICTIONS ? [] : ['reference-predictions/']),
  ...(PLATFORM_SUBMISSIONS ? [] : ['platform-submissions/']),
];
if (missing.length > 0 && DATA_REQUIRED)
  throw new Error(`RUMEDBENCH_REQUIRE_DATA=1, but ${missing.join(', ')} not found: ${NO_DATA_REASON}`);
if (!DATA_DIR) console.warn(`[rumedbench tests] skipping data-dependent tests: ${NO_DATA_REASON}`);

export const CLI = join(REPO_ROOT, 'dist', 'cli', 'main.js');
