/**
 * Writing a state file so that a crash or a full disk never leaves it half-written: the text goes to a temporary file
 * beside it, is flushed to the disk (fsync), and replaces the file by a rename, which the file system makes atomic.
 * Whatever happens, the file holds the old text or the new, never a prefix (a 0-byte plan.json made `--resume`
 * impossible); a failed write removes its temporary file and throws the file system's error (ENOSPC, EROFS…).
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export function writeFileAtomic(path: string, text: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, 'w');
    const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, path);
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** The file system's refusals to write, in words: the path given cannot take what the command writes. */
const WRITE_REFUSALS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'a file stands where a folder goes',
  EISDIR: 'a folder stands where a file goes',
};

/**
 * A refusal of the file system to write (an --out that is read-only, full, or a file), as words and the path; undefined
 * for any other error. The CLI says it in one line instead of a stack trace.
 */
export function writeRefusal(
  e: unknown,
): { why: string; path: string | undefined; full: boolean } | undefined {
  const err = e as NodeJS.ErrnoException | undefined;
  const code = typeof err?.code === 'string' ? err.code : '';
  const why = WRITE_REFUSALS[code];
  if (why === undefined || typeof err?.syscall !== 'string') return undefined;
  // access: a check for write permission (W_OK) before writing, refused as the write would be.
  if (
    !/^(access|mkdir|open|write|rename|copyfile|symlink|link|unlink|rmdir|rm|mkdtemp|utime|chmod|ftruncate|fsync|close)$/.test(
      err.syscall,
    )
  )
    return undefined;
  return { why, path: err.path, full: code === 'ENOSPC' || code === 'EDQUOT' };
}
