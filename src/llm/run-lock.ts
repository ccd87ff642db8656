/**
 * One process at a time in a run folder. Two runs into one folder (the same command started twice, two resumes at
 * once) each created a batch, wrote two answers for one request and read each other's temporary files: the folder
 * is locked while a run writes it (`.rumedbench.lock`), and a second process is refused at once, named. A lock whose
 * process is gone (a run killed with SIGKILL) is taken over.
 *
 * Both steps are atomic, so that of any number of processes started at once exactly one holds the lock:
 * - taking it: the lock's content (process id and a random token) is written to a file of this process's own, which is
 *   then hard-linked to the lock's name; link(2) fails if the name exists, so the lock is never seen empty or half
 *   written (an empty lock read as stale let a second process in).
 * - taking over a stale lock: only the process that holds the lock's takeover guard may remove it, and only after
 *   reading it again and finding the same stale content. The guard is named by the stale lock's token and is itself a
 *   lock, taken the same way (a guard left by a process killed while it held it is taken over in turn). Removing a
 *   lock after reading it stale is thus a compare-and-swap: a lock another process made in between has another token,
 *   and is left alone.
 */
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';

const LOCK = '.rumedbench.lock';

/** Who holds a lock: a process (by id) and, within it, one holding (a token no other holding has). */
export interface LockHolder {
  pid: number;
  token: string;
}

/** How a lock is taken: who takes it, and how a holder is told alive. Tests stand in for processes with threads. */
export interface LockOptions {
  /** The taking process's id (this process's by default). */
  pid?: number;
  /** Whether a holder is alive (by default: its process exists and, for this process, the holding is still held). */
  alive?: (holder: LockHolder) => boolean;
}

/** This process's holdings: a lock naming this process's id and another token is a dead run's (a reused id). */
const held = new Set<string>();

const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: a process of another user holds that id, alive.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const defaultAlive = (h: LockHolder): boolean =>
  h.pid === process.pid ? held.has(h.token) : processAlive(h.pid);

const parse = (text: string): LockHolder | undefined => {
  const m = /^(\d+) ([0-9a-f]{32})\n$/.exec(text);
  return m ? { pid: Number(m[1]), token: m[2] as string } : undefined;
};

const read = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
};

/**
 * Takes the lock `file` for `me`, atomically; returns undefined when it is held, else the holder found alive.
 * A stale lock is removed under its guard (see the module's comment) and taking is tried again.
 */
function take(
  file: string,
  me: LockHolder,
  alive: (h: LockHolder) => boolean,
  depth = 0,
): LockHolder | undefined {
  const content = `${me.pid} ${me.token}\n`;
  const own = `${file}.${me.token}.${depth}`;
  writeFileSync(own, content, { flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 1000; attempt++) {
      try {
        linkSync(own, file);
        return undefined;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const seen = read(file);
      if (seen === undefined) continue; // released in between: try again
      const holder = parse(seen);
      // Content that is no lock of ours at all (written by hand, or by an older rumedbench) is stale by its process.
      const legacy = holder ? undefined : Number.parseInt(seen, 10);
      if (
        holder
          ? alive(holder)
          : Number.isInteger(legacy) && legacy !== process.pid && processAlive(legacy as number)
      )
        return holder ?? { pid: legacy as number, token: '' };
      // Stale: removed only by the holder of its guard, and only if it still holds the same content.
      const guard = `${file}.takeover-${createHash('sha256').update(seen).digest('hex').slice(0, 16)}`;
      if (take(guard, me, alive, depth + 1) !== undefined) continue; // another process is taking it over
      try {
        if (read(file) === seen) rmSync(file, { force: true });
      } finally {
        rmSync(guard, { force: true });
      }
    }
    throw new Error(`${file}: the lock changed hands 1000 times while this process tried to take it`);
  } finally {
    rmSync(own, { force: true });
  }
}

/**
 * Locks `dir` for this process; returns the release. Throws a UsageError naming the process that holds it.
 *
 * @example
 * const release = lockRunFolder(outDir);
 * try { … } finally { release(); }
 */
export function lockRunFolder(dir: string, o: LockOptions = {}): () => void {
  const file = join(dir, LOCK);
  const me: LockHolder = { pid: o.pid ?? process.pid, token: randomBytes(16).toString('hex') };
  held.add(me.token);
  let holder: LockHolder | undefined;
  try {
    holder = take(file, me, o.alive ?? defaultAlive);
  } catch (e) {
    held.delete(me.token);
    throw e;
  }
  if (holder !== undefined) {
    held.delete(me.token);
    throw new UsageError(
      `${dir} is being written by another rumedbench run (process ${holder.pid}, ${file}): two runs in one folder would ask each request twice. Wait for it to end, or give this run another --out`,
    );
  }
  return () => {
    held.delete(me.token);
    // Removed only while it is still this holding's (a lock is never taken from a live holder, so it is).
    if (read(file) === `${me.pid} ${me.token}\n`) rmSync(file, { force: true });
  };
}
