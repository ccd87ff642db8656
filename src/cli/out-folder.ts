/**
 * An `--out` that does not exist yet is tried before the command runs: the first missing folder of its path is made
 * and removed again. A path that cannot be made (a read-only file system, a folder it may not write, /proc or /sys,
 * where Node's recursive mkdir loops for good instead of failing) is refused in one line naming the folder and the
 * fix, before anything is read, asked or written. Existing folders and files are each command's own business (an
 * export refuses one that is not empty; a write into a full disk is said by the CLI's one handler of such refusals).
 */
import { existsSync, mkdirSync, rmdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { writeRefusal } from './io.js';

/** Why ENOENT may come back from a mkdir whose parent exists: a pseudo file system that makes nothing. */
const NOTHING_MADE = 'this file system makes no folders (a /proc or /sys path?)';

export function checkOutFolder(command: string, out: string): void {
  const target = resolve(out);
  if (existsSync(target)) return;
  let missing = target;
  for (let up = dirname(missing); !existsSync(up); up = dirname(up)) missing = up;
  const parent = dirname(missing);
  const refuse = (why: string, where: string, full = false) =>
    new UsageError(
      `${command}: cannot write into ${target} (${why}: ${where}); ${full ? 'free some space, or choose another --out' : 'choose another --out, or make it writable'}`,
    );
  if (!statSync(parent).isDirectory()) throw refuse('a part of the path is a file, not a folder', parent);
  try {
    mkdirSync(missing);
  } catch (e) {
    const refused = writeRefusal(e);
    if (refused) throw refuse(refused.why, refused.path ?? missing, refused.full);
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw refuse(NOTHING_MADE, missing);
    throw e;
  }
  rmdirSync(missing);
}
