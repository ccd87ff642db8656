/**
 * A cache of parsed data files: what a data file's bytes parse and validate to (a split's records, a train file's
 * labels), kept as one JSON file per entry in the user's cache folder, so that a fresh `eval` does not split, parse
 * and check every line of the five test sets and read the ranking tasks' train files field by field again.
 *
 * Invariant: a cached value is used only for the very bytes it was computed from, read by the same rules.
 * - The key is the sha256 of the data file's bytes (read whole, hashed, and on a miss parsed from those same bytes,
 *   so a file changed while it is read cannot be cached under the old digest), with what read them: the kind of
 *   value, the task's field rules, this package's version and {@link FORMAT}. A changed data file has another
 *   digest and is parsed afresh; no modification time is trusted.
 * - An entry carries its key and the sha256 of its payload; one whose header, digest or JSON does not check (a
 *   damaged or truncated file) is a miss, parsed afresh and written over.
 * - Only values computed without error are stored (an invalid file is checked and reported every time); entries
 *   are written whole (a temporary file, then a rename), and a folder that cannot be written costs nothing but the
 *   cache.
 *
 * `RUMEDBENCH_PARSED_CACHE` names the folder (default: `parsed/` in the user's cache folder); `off` turns it off.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import envPaths from 'env-paths';
import { VERSION } from '../version.js';

/** Bumped whenever what an entry holds, or the rules that made it (record checks, JSONL reading), change. */
export const FORMAT = 'rumedbench.parsed/1';

export const PARSED_CACHE_ENV = 'RUMEDBENCH_PARSED_CACHE';

/** The cache folder, or undefined where the cache is off. */
export function parsedCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const set = env[PARSED_CACHE_ENV];
  if (set === 'off') return undefined;
  if (set !== undefined && set !== '') return set;
  return join(envPaths('rumedbench', { suffix: '' }).cache, 'parsed');
}

export const sha256 = (bytes: Uint8Array | string): string =>
  createHash('sha256').update(bytes).digest('hex');

/** What a value is and how it was read: its entry's name (`RuMedTop3.test.records`) and the rules that made it. */
export interface CacheKind {
  name: string;
  rules: unknown;
}

interface Header {
  format: string;
  key: string;
  source_sha256: string;
  payload_sha256: string;
}

/** JSON of the rules, regular expressions written as their source (JSON.stringify writes them as `{}`). */
const rulesJson = (rules: unknown): string =>
  JSON.stringify(rules, (_k, v: unknown) => (v instanceof RegExp ? `/${v.source}/${v.flags}` : v));

/**
 * The value of `bytes` (a data file's whole content): from the cache where an entry for these bytes and this kind
 * checks, else `compute()`d and stored. `encode` gives the JSON to store, or undefined for a value JSON would not
 * carry faithfully (it is then not stored); `decode` rebuilds the value from it.
 */
export async function cachedParse<T>(
  bytes: Uint8Array,
  kind: CacheKind,
  how: { compute: () => T | Promise<T>; encode: (value: T) => unknown; decode: (json: unknown) => T },
  dir: string | undefined = parsedCacheDir(),
): Promise<T> {
  if (dir === undefined) return await how.compute();
  const source = sha256(bytes);
  const key = sha256(`${FORMAT}\n${VERSION}\n${kind.name}\n${rulesJson(kind.rules)}\n${source}`);
  const safeName = kind.name.replace(/[^A-Za-z0-9._-]/g, '_');
  const path = join(dir, `${safeName}.${key.slice(0, 32)}.json`);
  const hit = await readEntry(path, key, source);
  if (hit !== undefined) {
    try {
      return how.decode(hit);
    } catch {
      // A payload that checks but does not decode was written by other code: parsed afresh below.
    }
  }
  const value = await how.compute();
  const json = how.encode(value);
  if (json !== undefined) writeEntry(dir, safeName, path, key, source, json);
  return value;
}

async function readEntry(path: string, key: string, source: string): Promise<unknown> {
  let text: Buffer;
  try {
    text = readFileSync(path);
  } catch {
    return undefined;
  }
  const nl = text.indexOf(0x0a);
  if (nl < 0) return undefined;
  try {
    const header = JSON.parse(text.toString('utf8', 0, nl)) as Partial<Header>;
    if (header.format !== FORMAT || header.key !== key || header.source_sha256 !== source) return undefined;
    const payload = text.subarray(nl + 1);
    if (sha256(payload) !== header.payload_sha256) return undefined;
    return JSON.parse(payload.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Whether `file` is an entry of the kind `name` (`<name>.<32 hex digits>.json`). */
const isEntryOf = (name: string, file: string): boolean =>
  file.length === name.length + 38 &&
  file.startsWith(`${name}.`) &&
  file.endsWith('.json') &&
  /^[0-9a-f]{32}$/.test(file.slice(name.length + 1, -5));

function writeEntry(
  dir: string,
  name: string,
  path: string,
  key: string,
  source: string,
  json: unknown,
): void {
  try {
    const payload = JSON.stringify(json);
    const header: Header = { format: FORMAT, key, source_sha256: source, payload_sha256: sha256(payload) };
    mkdirSync(dir, { recursive: true });
    // Older entries of the same kind (an earlier version of the file, or of the package) are never read again. Only
    // this kind's: `RuMedNER.test.records.idx_ner_tags_tokens` is another kind, not an older `RuMedNER.test.records`.
    for (const f of readdirSync(dir))
      if (isEntryOf(name, f) && join(dir, f) !== path) rmSync(join(dir, f), { force: true });
    const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(header)}\n${payload}`);
    renameSync(tmp, path);
  } catch {
    // A read-only or full cache folder: the value was computed, and is simply not kept.
  }
}

/**
 * Whether a JSON value read by JSON.parse survives JSON.stringify unchanged: not where it holds a number JSON
 * cannot write back (`1e999` parses to Infinity, written as null; `-0` is written as 0).
 */
export function jsonFaithful(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (value === null || typeof value !== 'object') return true;
  if (Array.isArray(value)) return value.every(jsonFaithful);
  for (const k in value) if (!jsonFaithful((value as Record<string, unknown>)[k])) return false;
  return true;
}
