/**
 * Where tests find the public RuMedBench files: the data folder (RUMEDBENCH_DATA, else ../shared/rumedbench/data
 * beside the repository), and upstream's prediction files and platform uploads (RUMEDBENCH_REFERENCE and
 * RUMEDBENCH_PLATFORM_SUBMISSIONS, else `reference-predictions/` and `platform-submissions/` inside the data folder
 * or beside it, else in ../shared/rumedbench), so that a clone outside this workspace runs the paper-table tests with
 * its own folders. Tests that need them are skipped with a visible reason when they are not found.
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

/**
 * A folder of the public material (`reference-predictions`, `platform-submissions`): the variable's folder where it
 * is set (one that does not exist is an error, not a quiet skip), else the folder inside the data folder, beside it,
 * or in ../shared/rumedbench, the first that exists.
 */
export function locateMaterial(
  name: string,
  variable: string,
  env: Record<string, string | undefined>,
  dataDir: string | undefined,
  shared = SHARED,
): string | undefined {
  const fromEnv = env[variable];
  if (fromEnv) {
    if (!existsSync(fromEnv))
      throw new Error(`${variable}=${fromEnv}: no such folder (it should hold ${name}/'s files)`);
    return fromEnv;
  }
  const places = [
    ...(dataDir ? [join(dataDir, name), join(dirname(resolve(dataDir)), name)] : []),
    join(shared, name),
  ];
  return places.find((p) => existsSync(p));
}

export const REFERENCE_PREDICTIONS = locateMaterial(
  'reference-predictions',
  'RUMEDBENCH_REFERENCE',
  process.env,
  DATA_DIR,
);
export const PLATFORM_SUBMISSIONS = locateMaterial(
  'platform-submissions',
  'RUMEDBENCH_PLATFORM_SUBMISSIONS',
  process.env,
  DATA_DIR,
);

export const NO_DATA_REASON =
  'RuMedBench data not found: set RUMEDBENCH_DATA or place ../shared/rumedbench beside the repo';
/** Why a suite that scores upstream's prediction files is skipped. */
export const NO_REFERENCE_REASON =
  'upstream prediction files not found: set RUMEDBENCH_REFERENCE, or put reference-predictions/ in or beside the data folder';

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
else if (!REFERENCE_PREDICTIONS)
  console.warn(`[rumedbench tests] skipping the paper-table and report suites: ${NO_REFERENCE_REASON}`);

export const CLI = join(REPO_ROOT, 'dist', 'bin', 'rumedbench.js');
