/**
 * One process at a time in a run folder. Two runs into one folder (the same command started twice, two resumes at
 * once) each created a batch, wrote two answers for one request and read each other's temporary files: the folder
 * is locked while a run writes it (`.rumedbench.lock`, holding the process id), and a second process is refused at
 * once, named. A lock whose process is gone (a run killed with SIGKILL) is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';

const LOCK = '.rumedbench.lock';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: a process of another user holds that id, alive.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Locks `dir` for this process; returns the release. Throws a UsageError naming the process that holds it. */
export function lockRunFolder(dir: string): () => void {
  const file = join(dir, LOCK);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      let holder = Number.NaN;
      try {
        holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
      } catch {
        // Gone between the two calls: its holder released it; try again.
      }
      if (Number.isInteger(holder) && holder !== process.pid && alive(holder))
        throw new UsageError(
          `${dir} is being written by another rumedbench run (process ${holder}, ${file}): two runs in one folder would ask each request twice. Wait for it to end, or give this run another --out`,
        );
      // Its process is gone (killed): the lock is stale.
      rmSync(file, { force: true });
    }
  }
}
