/**
 * A worker's own disk. Finishing a cell writes its run folder in the temporary folder (`cellTempDir`, made inside
 * the finish's `try`); `localFault` says a refusal of that disk in one phrase. And what a worker checks before it registers or claims anything: that it can do the work it would take. A worker
 * that cannot write its temporary folder (TMPDIR missing or read-only, as in a container with a read-only root) would
 * answer a cell's requests and then fail to finish it; one given a --data that is not there would fail every cell it
 * took for the whole plan ("its data differ"). Both refuse at start, in one line, and the queue never sees them.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RumedbenchError } from '../errors.js';

/**
 * A folder of this machine's temporary folder for a cell's run folder while it is finished. Made inside the finish's
 * `try`: a temporary folder that cannot be made (TMPDIR missing, read-only, full) fails or hands back the cell.
 */
export function cellTempDir(): string {
  return mkdtempSync(join(tmpdir(), 'rumedbench-cell-'));
}

/** This machine's file system refusing to write (ENOENT, EACCES, EROFS, ENOSPC…), in words naming the path. */
const LOCAL_FAULTS: Readonly<Record<string, string>> = {
  ENOENT: 'a folder on its path is missing',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOTDIR: 'a part of the path is a file',
};

/** A fault of this worker's own disk while it finishes a cell, as one phrase naming the folder and the fix. */
export function localFault(e: unknown): string | undefined {
  const err = e as NodeJS.ErrnoException | undefined;
  const why = typeof err?.code === 'string' ? LOCAL_FAULTS[err.code] : undefined;
  if (why === undefined || typeof err?.syscall !== 'string') return undefined;
  const where = err.path ?? tmpdir();
  return `its temporary folder cannot take the cell's run folder (${why}: ${err.syscall} ${where}); ${
    err.code === 'ENOSPC' || err.code === 'EDQUOT'
      ? `free some space in ${tmpdir()}`
      : `set TMPDIR to a writable folder (now ${tmpdir()})`
  } on this worker`;
}

/** Throws STORAGE_REFUSED or DATA_NOT_FOUND, in one line naming the folder and the fix, when the worker cannot work. */
export function checkWorkerCanWork(who: string, o: { dataDir?: string | undefined }): void {
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join(tmpdir(), 'rumedbench-check-'));
    writeFileSync(join(dir, 'probe'), 'x');
  } catch (e) {
    const fault = localFault(e);
    if (fault === undefined) throw e;
    throw new RumedbenchError('STORAGE_REFUSED', `worker ${who} cannot work: ${fault}`);
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
  if (o.dataDir !== undefined) {
    const st = statSync(o.dataDir, { throwIfNoEntry: false });
    if (!st?.isDirectory())
      throw new RumedbenchError(
        'DATA_NOT_FOUND',
        `worker ${who} cannot work: --data ${o.dataDir} is ${st ? 'a file, not a folder' : 'not there'}; give this machine's data folder (rumedbench data download fetches it)`,
      );
  }
}
