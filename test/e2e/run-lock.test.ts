/**
 * One writer per run folder (issue #59, item 3): two processes started at once on one folder, 1,000 times, half of
 * them over a stale lock (a killed run's): exactly one of each pair takes the folder, never two, never none. The lock
 * checked and then deleted before: a lock read between its creation and its content, or read stale just before
 * another process re-created it, was removed, and both ran.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockRunFolder } from '../../src/llm/run-lock.js';

const CONTENDER = join(import.meta.dirname, '..', 'helpers', 'lock-contender.mjs');
/** A process id no process has (Linux's pid_max is at most 2²² = 4194304). */
const DEAD_PID = 4194304 + 7;

type Reply = { ready?: true; won?: boolean; released?: true };

function contender(): { child: ChildProcess; next: () => Promise<Reply> } {
  const child = fork(CONTENDER, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const inbox: Reply[] = [];
  const waiting: ((r: Reply) => void)[] = [];
  child.on('message', (m: Reply) => {
    const w = waiting.shift();
    if (w) w(m);
    else inbox.push(m);
  });
  return {
    child,
    next: () => {
      const m = inbox.shift();
      return m ? Promise.resolve(m) : new Promise((r) => waiting.push(r));
    },
  };
}

describe('the run folder lock', () => {
  const procs: ChildProcess[] = [];
  afterAll(() => {
    for (const p of procs) p.kill();
  });

  it('lets exactly one of two processes started at once take a folder, 1,000 times, over a stale lock or none', async () => {
    const a = contender();
    const b = contender();
    procs.push(a.child, b.child);
    await Promise.all([a.next(), b.next()]);
    const root = mkdtempSync(join(tmpdir(), 'rumedbench-lock-pairs-'));
    const winners: number[] = [];
    for (let round = 0; round < 1000; round++) {
      const dir = join(root, String(round));
      mkdirSync(dir);
      if (round % 2 === 1) writeFileSync(join(dir, '.rumedbench.lock'), `${DEAD_PID} ${'0'.repeat(32)}\n`);
      // The second starts 0 to 100 µs after the first: each step of taking a lock takes microseconds, and a race
      // between two steps is met only when the starts are that close.
      const at = Date.now() + 3;
      a.child.send({ dir, at });
      b.child.send({ dir, at: at + (round % 50) * 0.002 });
      const [ra, rb] = await Promise.all([a.next(), b.next()]);
      winners.push(Number(ra.won) + Number(rb.won));
      a.child.send({ release: true });
      b.child.send({ release: true });
      await Promise.all([a.next(), b.next()]);
    }
    const counts = { none: 0, one: 0, two: 0 };
    for (const w of winners) counts[w === 0 ? 'none' : w === 1 ? 'one' : 'two']++;
    expect(counts).toEqual({ none: 0, one: 1000, two: 0 });
  }, 120_000);

  it('refuses a second holding in one process, takes over a dead holding, and releases only its own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-lock-'));
    const release = lockRunFolder(dir);
    expect(() => lockRunFolder(dir)).toThrow(/is being written by another rumedbench run \(process \d+/);
    release();
    expect(existsSync(join(dir, '.rumedbench.lock'))).toBe(false);
    // A killed run's lock, and a guard a process was killed holding while it took that lock over.
    writeFileSync(join(dir, '.rumedbench.lock'), `${DEAD_PID} ${'1'.repeat(32)}\n`);
    const again = lockRunFolder(dir);
    expect(readdirSync(dir)).toEqual(['.rumedbench.lock']);
    again();
    expect(readdirSync(dir)).toEqual([]);
  });
});
