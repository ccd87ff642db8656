/**
 * `rumedbench data download`: fetch the task files from the pinned upstream commit, check size and sha256, and
 * write each atomically (a temporary file beside it, then a rename), so an interrupted run never leaves a file
 * that looks complete. Files already present and intact are kept; a corrupt or partial one is fetched again.
 * Every request goes through the shared transport (./transport.ts: a timeout, the body capped at the manifest's size,
 * no redirect followed). Network faults (dropped connections, timeouts, 5xx) are retried with exponential backoff, as
 * is a wrong checksum; a 404 or a redirect is not.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ChecksumError, DownloadError, RumedbenchError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import { sha256File } from './checksum.js';
import { MANIFEST, type ManifestEntry, UPSTREAM } from './manifest.js';
import { type Answer, backoffMs as backoff, send, TransportError } from './transport.js';

const DATA_URL_ENV = 'RUMEDBENCH_DATA_URL';

export interface DownloadOptions {
  /** Target data folder. */
  dir: string;
  baseUrl?: string;
  /** Only these task folders (all by default). */
  tasks?: readonly string[];
  manifest?: readonly ManifestEntry[];
  /** Attempts per file, including the first; 4 by default. */
  attempts?: number;
  /** First backoff delay in ms (doubled each retry, with jitter); 500 by default. */
  backoffMs?: number;
  /** Per-request timeout in ms; 60 s by default. */
  timeoutMs?: number;
  logger?: Logger;
}

type DownloadStatus = 'present' | 'downloaded' | 'failed';

export interface DownloadReport {
  path: string;
  status: DownloadStatus;
  /** Whether the file was checked (its sha256, or git's blob id); false where the manifest has neither. */
  verified: boolean;
  /** How it was checked. */
  check?: 'sha256' | 'git blob';
  bytes?: number;
  error?: string;
}

/** Git's blob id of a file: sha1 of `"blob <size>\0"` and the content. */
export async function gitBlobSha1(file: string): Promise<string> {
  const hash = createHash('sha1').update(`blob ${(await stat(file)).size}\0`);
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** How a file is checked: its sha256, else git's blob id, else not at all. */
const checkOf = (entry: ManifestEntry): 'sha256' | 'git blob' | null =>
  entry.sha256 !== null ? 'sha256' : entry.gitBlob ? 'git blob' : null;

/** Whether a file on disk matches its manifest entry. */
export async function isIntact(file: string, entry: ManifestEntry): Promise<boolean> {
  if (!existsSync(file)) return false;
  if (entry.size !== null && (await stat(file)).size !== entry.size) return false;
  if (entry.sha256 !== null) return (await sha256File(file)).sha256 === entry.sha256;
  if (entry.gitBlob) return (await gitBlobSha1(file)) === entry.gitBlob;
  return true;
}

class NotFound extends DownloadError {}

/** The most a file with no size in the manifest may take: larger than any task file, far from a full disk. */
const UNSIZED_MAX_BYTES = 1 << 30;

async function fetchOnce(
  url: string,
  target: string,
  entry: ManifestEntry,
  timeoutMs: number,
): Promise<number> {
  const tmp = `${target}.part-${process.pid}`;
  // A file longer than the manifest says is wrong already: one byte past its size and the reading stops.
  const cap = entry.size !== null ? entry.size + 1 : UNSIZED_MAX_BYTES;
  try {
    let res: Answer;
    try {
      // One attempt through the shared transport (timeout, cap, no redirects); the loop in downloadData retries,
      // since a wrong checksum needs a fresh download as much as a dropped connection does.
      res = await send(url, () => ({ method: 'GET' }), {
        maxBytes: cap,
        saveTo: tmp,
        timeoutMs,
        retry: { retries: 0 },
      });
    } catch (e) {
      if (!(e instanceof TransportError)) throw e;
      throw new DownloadError(
        url,
        e.phase === 'read' ? `the connection broke off: ${e.message}` : `request failed: ${e.message}`,
        { cause: e },
      );
    }
    if (res.status === 404) throw new NotFound(url, 'HTTP 404 (not found)');
    if (res.status >= 300 && res.status < 400)
      throw new NotFound(
        url,
        `HTTP ${res.status}, a redirect to ${res.headers.get('location') ?? '(no Location)'}; redirects are not followed: give the final address (${DATA_URL_ENV})`,
      );
    if (res.status !== 200) throw new DownloadError(url, `HTTP ${res.status}`);
    if (res.text === null)
      throw new ChecksumError(url, 'size', String(entry.size ?? `at most ${UNSIZED_MAX_BYTES}`), `more`);
    const { sha256: digest, size } = await sha256File(tmp);
    if (entry.size !== null && size !== entry.size)
      throw new ChecksumError(url, 'size', String(entry.size), String(size));
    if (entry.sha256 !== null && digest !== entry.sha256)
      throw new ChecksumError(url, 'sha256', entry.sha256, digest);
    if (entry.sha256 === null && entry.gitBlob) {
      const blob = await gitBlobSha1(tmp);
      if (blob !== entry.gitBlob) throw new ChecksumError(url, 'git blob sha1', entry.gitBlob, blob);
    }
    await rename(tmp, target);
    return size;
  } finally {
    await rm(tmp, { force: true });
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Downloads (or checks) every manifest file under `dir`.
 * @example await downloadData({ dir: resolveDataDir() });
 */
export async function downloadData(options: DownloadOptions): Promise<DownloadReport[]> {
  const baseUrl = (options.baseUrl ?? process.env[DATA_URL_ENV] ?? UPSTREAM.baseUrl).replace(/\/+$/, '');
  const attempts = options.attempts ?? 4;
  const backoffMs = options.backoffMs ?? 500;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const log = options.logger ?? silentLogger;
  const entries = (options.manifest ?? MANIFEST).filter(
    (e) => !options.tasks || options.tasks.includes(e.path.split('/')[0] as string),
  );
  const reports: DownloadReport[] = [];
  for (const entry of entries) {
    const target = join(options.dir, entry.path);
    const check = checkOf(entry);
    const verified = check !== null;
    if (await isIntact(target, entry)) {
      log.info(`${entry.path}: present${verified ? `, ${check} ok` : ''}`);
      reports.push({ path: entry.path, status: 'present', verified, ...(check ? { check } : {}) });
      continue;
    }
    if (existsSync(target)) log.warn(`${entry.path}: corrupt or partial; fetching again`);
    await mkdir(dirname(target), { recursive: true });
    const url = `${baseUrl}/${entry.path}`;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const bytes = await fetchOnce(url, target, entry, timeoutMs);
        log.info(
          `${entry.path}: downloaded ${bytes} bytes${verified ? `, ${check} ok` : ' (no checksum known: unverified)'}`,
        );
        reports.push({
          path: entry.path,
          status: 'downloaded',
          verified,
          ...(check ? { check } : {}),
          bytes,
        });
        lastError = undefined;
        break;
      } catch (e) {
        lastError = e;
        if (e instanceof NotFound || !(e instanceof RumedbenchError) || attempt === attempts) break;
        const delay = backoff(attempt - 1, { baseMs: backoffMs });
        log.warn(
          `${entry.path}: ${(e as Error).message}; retrying in ${Math.round(delay)} ms (${attempt}/${attempts})`,
        );
        await sleep(delay);
      }
    }
    if (lastError !== undefined) {
      const message = lastError instanceof Error ? lastError.message : String(lastError);
      log.error(`${entry.path}: ${message}`);
      reports.push({ path: entry.path, status: 'failed', verified, error: message });
    }
  }
  return reports;
}
