/**
 * Honest errors on storage (#60): an --out that cannot be made (a pseudo file system where Node's recursive mkdir
 * loops for good, a folder the file system refuses) is refused by every command that writes, in one line naming the
 * folder and the fix, at once; a plan.json an older release left empty (its disk full) is said in one line with the
 * way on, and --resume works once it is removed; the plan run's state files are written whole or not at all.
 */
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

describe('plan run state files', () => {
  it('a 0-byte plan.json (an older release, its disk full): one line with the way on; removed, --resume finishes the plan', async () => {
    const s = await startFakeOpenAI({ reply: () => 'Ответ: да', behaviour: () => ({ kind: 'ok' }) });
    try {
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-state-'));
      const plan = join(dir, 'plan.yaml');
      writeFileSync(
        plan,
        [
          'name: state',
          'split: test',
          'tasks: [RuMedDaNet]',
          `data: ${DATA}`,
          'defaults: {temperature: 0, max_tokens: 16, bootstrap: 0}',
          'models:',
          `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`,
          '',
        ].join('\n'),
      );
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
