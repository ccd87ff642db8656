/**
 * `plan export --out` where it cannot write, found by a red-team session: an existing empty folder this user may not
 * write to, and an --out that is a file, ended in a stack trace and exit 70 (docs/plans.md promises one line, exit 2,
 * before the plan or the database is read; a plan id that does not exist shows the same).
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/data.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';

function run(
  args: string[],
  asNobody: boolean,
  home: string,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      ...(asNobody ? { uid: 65534, gid: 65534 } : {}),
      env: { ...process.env, HOME: home },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.once('exit', (code) => resolve({ code, stderr: err }));
    child.once('error', (e) =>
      resolve({ code: null, stderr: `cannot run ${process.execPath}: ${e.message}` }),
    );
  });
}

describe.skipIf(!PG_URL)('plan export into an --out it cannot write', () => {
  it('an existing, empty folder this user may not write to: one line, exit 2, no stack trace', async () => {
    const db = await freshDatabase('postgres');
    const parent = mkdtempSync(join(tmpdir(), 'rumedbench-red-'));
    chmodSync(parent, 0o755);
    const locked = join(parent, 'locked');
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const root = process.getuid?.() === 0;
    const r = await run(['plan', 'export', 'p-000000000000', '--db', db, '--out', locked], root, parent);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      expect.stringMatching(
        new RegExp(
          `^error: plan export: cannot write into ${locked} \\(permission denied.*\\); choose another --out, or make it writable$`,
        ),
      ),
    ]);
  });

  it('an --out that is an existing file: one line, exit 2, no stack trace', async () => {
    const db = await freshDatabase('postgres');
    const parent = mkdtempSync(join(tmpdir(), 'rumedbench-red-'));
    const file = join(parent, 'a-file');
    writeFileSync(file, 'x\n');
    const r = await run(['plan', 'export', 'p-000000000000', '--db', db, '--out', file], false, parent);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: plan export: cannot write into /);
  });
});

if (!PG_URL) describe('plan export into an --out it cannot write', () => it.skip(NO_PG_REASON, () => {}));
