/**
 * Honest errors on storage (#60): an --out that cannot be made (a pseudo file system where Node's recursive mkdir
 * loops for good, a folder the file system refuses) is refused by every command that writes, in one line naming the
 * folder and the fix, at once; a plan.json an older release left empty (its disk full) is said in one line with the
 * way on, and --resume works once it is removed; the plan run's state files are written whole or not at all.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/data/atomic-write.js';
import { rumedbenchProcessFor } from '../helpers/cli-process.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();

const commands = (out: string): [string, string[]][] => [
  ['plan run', ['plan', 'run', '/nonexistent/plan.yaml', '--out', out]],
  [
    'llm',
    [
      'llm',
      '--provider',
      'openai',
      '--base-url',
      'http://127.0.0.1:9/v1',
      '--model',
      'm',
      '--tasks',
      'RuMedNLI',
      '--out',
      out,
    ],
  ],
  ['plan export', ['plan', 'export', 'p-000000000000', '--db', 'postgres://127.0.0.1:9/none', '--out', out]],
];

describe('an --out that cannot be made: one line, exit 2, at once, for every command that writes', () => {
  for (const [root, why] of [
    ['/proc', 'this file system makes no folders \\(a /proc or /sys path\\?\\)'],
    ['/sys', 'operation not permitted'],
  ] as const)
    it(`under ${root}`, async () => {
      const out = `${root}/rumedbench-ops-test/run`;
      for (const [name, args] of commands(out)) {
        const t0 = Date.now();
        const r = await rumedbenchProcessFor(20_000, { RUMEDBENCH_DATA: DATA }, ...args);
        expect(Date.now() - t0, name).toBeLessThan(15_000);
        expect([r.code, r.stderr.trim().split('\n')], name).toEqual([
          2,
          [
            expect.stringMatching(
              new RegExp(
                `^error: ${name}: cannot write into ${out} \\(${why}: ${root}/rumedbench-ops-test\\); choose another --out, or make it writable$`,
              ),
            ),
          ],
        ]);
      }
    }, 90_000);
});

/** A plan of one cell on the fake model server at `url`. */
function writePlan(plan: string, url: string, tasks: string): void {
  writeFileSync(
    plan,
    [
      'name: state',
      'split: test',
      `tasks: [${tasks}]`,
      `data: ${DATA}`,
      'defaults: {temperature: 0, max_tokens: 16, bootstrap: 0}',
      'models:',
      `  - {name: m, provider: openai, base_url: "${url}", model: fake-m}`,
      '',
    ].join('\n'),
  );
}

describe('plan run state files', () => {
  it('a 0-byte plan.json (an older release, its disk full): one line with the way on; removed, --resume finishes the plan', async () => {
    const s = await startFakeOpenAI({ reply: () => 'Ответ: да', behaviour: () => ({ kind: 'ok' }) });
    try {
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-state-'));
      const plan = join(dir, 'plan.yaml');
      writePlan(plan, s.url, 'RuMedDaNet');
      const out = join(dir, 'out');
      const planRun = (...more: string[]) =>
        rumedbenchProcessFor(60_000, { RUMEDBENCH_DATA: DATA }, 'plan', 'run', plan, '--out', out, ...more);
      const first = await planRun();
      expect(first.code, first.stderr).toBe(0);
      const asked = s.requests.length;
      writeFileSync(join(out, 'plan.json'), '');
      const r = await planRun('--resume');
      expect([r.code, r.stderr.trim().split('\n')]).toEqual([
        1,
        [
          `error: ${join(out, 'plan.json')} is empty (a disk that filled up while an older rumedbench wrote it?): remove it and run the plan again with --out ${out} --resume; every cell's own folder keeps what it answered`,
        ],
      ]);
      rmSync(join(out, 'plan.json'));
      const again = await planRun('--resume');
      expect(again.code, again.stderr).toBe(0);
      // Nothing asked again: the cell was done.
      expect(s.requests.length).toBe(asked);
      expect(
        JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).cells.map((c: { id: string }) => c.id),
      ).toEqual(['m/default']);
    } finally {
      await s.close();
    }
  }, 120_000);

  it('writeFileAtomic: a write that fails (the folder gone) leaves no temporary file and no half file; a good one replaces the old whole', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-atomic-'));
    const file = join(dir, 'plan.json');
    writeFileAtomic(file, '{"old":true}\n');
    writeFileAtomic(file, '{"new":true}\n');
    expect([readFileSync(file, 'utf8'), readdirSync(dir)]).toEqual(['{"new":true}\n', ['plan.json']]);
    expect(() => writeFileAtomic(join(dir, 'gone', 'plan.json'), 'x')).toThrow(/ENOENT/);
    expect(existsSync(join(dir, 'gone'))).toBe(false);
    expect(readdirSync(dir)).toEqual(['plan.json']);
  });
});

/** Why a real small file system cannot be mounted here (not root, a container without CAP_SYS_ADMIN), or undefined. */
const NO_MOUNT_REASON = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
    execFileSync('umount', [dir], { stdio: 'pipe' });
    return undefined;
  } catch (e) {
    return `mount -t tmpfs is not permitted here (${String((e as Error).message).split('\n')[0]})`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

describe.skipIf(NO_MOUNT_REASON !== undefined)(
  `a real full disk and a read-only one (a tmpfs of 256 KiB)${NO_MOUNT_REASON ? ` [skipped: ${NO_MOUNT_REASON}]` : ''}`,
  () => {
    it('plan run and llm --out into a full folder: one line naming the folder and the fix, no stack, plan.json whole; space freed, --resume finishes; read-only: one line, and --resume after it is writable again', async () => {
      const s = await startFakeOpenAI({ reply: () => 'Ответ: да', behaviour: () => ({ kind: 'ok' }) });
      const disk = mkdtempSync(join(tmpdir(), 'rumedbench-full-'));
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', disk]);
      try {
        const plan = join(mkdtempSync(join(tmpdir(), 'rumedbench-full-plan-')), 'plan.yaml');
        writePlan(plan, s.url, 'RuMedDaNet, RuMedNLI');
        // All but 12 KiB taken: plan.json fits, the cell's journal does not.
        writeFileSync(join(disk, 'filler'), Buffer.alloc(244 * 1024));
        const out = join(disk, 'out');
        const planRun = (...more: string[]) =>
          rumedbenchProcessFor(60_000, { RUMEDBENCH_DATA: DATA }, 'plan', 'run', plan, '--out', out, ...more);
        const stackOf = (text: string) =>
          text.split('\n').filter((l) => /^\s+at |internal error|ENOSPC|EROFS/.test(l));
        const full = await planRun();
        expect(full.code, full.stderr).toBe(1);
        expect(stackOf(full.stderr), full.stderr).toEqual([]);
        expect(full.stderr).toContain(
          `: failed (exit 2): cannot write into ${join(out, 'm/default')} (no space left on the device); free some space there, then run again with --out ${out} --resume`,
        );
        // The state file: the old text or none, never a prefix.
        if (existsSync(join(out, 'plan.json')))
          expect(JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).cells).toHaveLength(1);
        const llm = await rumedbenchProcessFor(
          60_000,
          { RUMEDBENCH_DATA: DATA },
          ...[
            'llm',
            '--provider',
            'openai',
            '--base-url',
            s.url,
            '--model',
            'fake-m',
            '--tasks',
            'RuMedDaNet',
          ],
          ...['--out', join(disk, 'llm')],
        );
        expect(llm.code, llm.stderr).not.toBe(0);
        expect(stackOf(llm.stderr), llm.stderr).toEqual([]);
        expect(llm.stderr.trim().split('\n').at(-1)).toBe(
          `error: cannot write into ${join(disk, 'llm')}: no space left on the device; free some space, or choose another --out`,
        );
        // Space freed: the filler removed and the disk made bigger (the finished cell's run folder outgrows 256 KiB).
        rmSync(join(disk, 'filler'));
        execFileSync('mount', ['-o', 'remount,size=16m', disk]);
        const resumed = await planRun('--resume');
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'))).toBeTruthy();
        // Read-only: one line naming the folder; writable again, --resume works.
        execFileSync('mount', ['-o', 'remount,ro', disk]);
        const ro = await planRun('--resume');
        expect([ro.code, stackOf(ro.stderr)], ro.stderr).toEqual([2, []]);
        expect(ro.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(
            new RegExp(
              `^error: cannot write ${out}/\\S+: a read-only file system; choose another --out, or make it writable$`,
            ),
          ),
        ]);
        execFileSync('mount', ['-o', 'remount,rw', disk]);
        const again = await planRun('--resume');
        expect(again.code, again.stderr).toBe(0);
      } finally {
        await s.close();
        execFileSync('umount', [disk]);
        rmSync(disk, { recursive: true, force: true });
      }
    }, 180_000);
  },
);
