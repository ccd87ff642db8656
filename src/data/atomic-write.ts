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
