/**
 * `rumedbench rank` on constructed systems (the fixture data the tests write): one right everywhere, one right on
 * every second item, its exact copy, and one right on every third. The copy ties with its original (one group,
 * the same rank interval, p = 1), the perfect system stands alone, the McNemar p-values equal a direct
 * computation, RuMedNLI is clustered by premise, and every task has a minimum detectable effect.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exactMcNemar } from '../../src/metrics/ranking.js';
import type { ComparisonResult } from '../../src/scoring/compare.js';
import type { RankResult } from '../../src/scoring/rank.js';
import { rumedbench } from '../helpers/cli.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();

describe('rumedbench rank (on fixture data the test writes)', () => {
  const root = mkdtempSync(join(tmpdir(), 'rumedbench-rank-'));
  const perfect = writeFixturePredictions(DATA, join(root, 'perfect'), 1);
  const half = writeFixturePredictions(DATA, join(root, 'half'), 2);
  const copy = join(root, 'copy');
  cpSync(half, copy, { recursive: true });
  const third = writeFixturePredictions(DATA, join(root, 'third'), 3);
  const args = [perfect, half, copy, third, '--names', 'perfect,half,copy,third', '--data', DATA];

  it('ties a copy with its original, sets the best apart, and tests as the papers say', async () => {
    const r = await rumedbench('rank', ...args, '--bootstrap', '500', '--json');
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as RankResult;
    expect(Object.keys(result.tasks).sort()).toEqual([
      'RuMedDaNet',
      'RuMedNER',
      'RuMedNLI',
      'RuMedSymptomRec',
      'RuMedTop3',
    ]);
    for (const [task, t] of Object.entries(result.tasks)) {
      const by = Object.fromEntries(t.systems.map((s) => [s.name, s]));
      expect(by.half?.group, task).toBe(by.copy?.group);
      expect(by.half?.rank_ci, task).toEqual(by.copy?.rank_ci);
      expect(by.perfect?.rank, task).toBe(1);
      expect(by.perfect?.group, task).toBe('a');
      expect(by.half?.group, task).not.toContain('a');
      expect(t.mde, task).toBeGreaterThan(0);
      const tie = t.pairs.find((p) => p.a === 'half' && p.b === 'copy');
      expect([tie?.diff, tie?.p_value], task).toEqual([
        0,
        tie?.test === 'exact McNemar' ? 1 : expect.any(Number),
      ]);
    }
    // RuMedDaNet: accuracy on independent items, so the exact McNemar test; 60 items, the perfect system right on
    // all, "half" on every second: 30 discordant pairs, all one way.
    const danet = result.tasks.RuMedDaNet;
    const pair = danet?.pairs.find((p) => p.a === 'perfect' && p.b === 'half');
    expect(pair?.test).toBe('exact McNemar');
    expect(pair?.p_value).toBeCloseTo(exactMcNemar(30, 0), 15);
    expect(danet?.clusters).toBeNull();
    // RuMedNLI: clustered by premise; a z-test on the paired differences with their clustered standard error.
    const nli = result.tasks.RuMedNLI;
    expect(nli?.clusters).toBeGreaterThan(0);
    expect(nli?.pairs[0]?.test).toBe('z-test, clustered');
    expect(result.overall?.systems.map((s) => [s.name, s.rank])).toEqual([
      ['perfect', 1],
      ['half', 2],
      ['copy', 2],
      ['third', 4],
    ]);
  });

  it('prints a table per task and overall, and refuses what cannot be ranked', async () => {
    const r = await rumedbench('rank', ...args, '--bootstrap', '200', '--tasks', 'RuMedDaNet');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/RuMedDaNet · n 60 · detectable difference ≈ \d+\.\d\d points/);
    expect(r.stdout).toMatch(/perfect +100\.00 ± 0\.00 +1 \(1\) +a/);
    expect(r.stdout).toContain('Systems sharing a letter are not distinguishable');
    const one = await rumedbench('rank', perfect, '--data', DATA);
    expect([one.code, one.stderr]).toEqual([2, expect.stringContaining('at least two submissions')]);
    const names = await rumedbench('rank', perfect, half, '--names', 'a', '--data', DATA);
    expect([names.code, names.stderr]).toEqual([2, expect.stringContaining('--names: 1 name(s) for 2')]);
  });

  it('compare uses the same tests: McNemar on RuMedDaNet, premises resampled and swapped together on RuMedNLI', async () => {
    const r = await rumedbench('compare', perfect, half, '--data', DATA, '--bootstrap', '400', '--json');
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as ComparisonResult;
    const danet = c.tasks.RuMedDaNet?.metrics.accuracy;
    expect(danet?.test).toBe('exact McNemar');
    // 60 items: "half" is wrong on every second one, all of which "perfect" gets right.
    expect(danet?.p).toBeCloseTo(exactMcNemar(30, 0), 15);
    expect(c.tasks.RuMedNLI?.metrics.accuracy?.test).toBe('approximate randomization by cluster');
    expect(c.tasks.RuMedTop3?.metrics.accuracy?.test).toBe('approximate randomization');
    expect(c.method.p_value).toContain('McNemar');
    // The table names each row's test.
    const table = await rumedbench('compare', perfect, half, '--data', DATA, '--bootstrap', '100');
    expect(table.stdout).toMatch(/RuMedDaNet +accuracy .* McNemar\n/);
    expect(table.stdout).toMatch(/RuMedNLI +accuracy .* randomization by cluster\n/);
  });

  it('a clustered comparison is wider where errors come in clusters, and the difference itself is the same', async () => {
    const { compareValidated } = await import('../../src/scoring/compare.js');
    const { validateSubmission } = await import('../../src/scoring/score.js');
    const { ReferenceLoader } = await import('../../src/scoring/reference.js');
    const references = new ReferenceLoader(DATA);
    const [a, b] = [
      await validateSubmission(perfect, { references }),
      await validateSubmission(third, { references }),
    ];
    // The fixture's premises are all different; here, clusters of three items that "third" gets all right or all
    // wrong (it is right on every third item): the errors of a cluster go together.
    const items = a.tasks.find((t) => t.task.name === 'RuMedNLI')?.items ?? [];
    const clusters = {
      RuMedNLI: new Map(items.map((item, i) => [item.id, `${i % 3 === 0}:${Math.floor(i / 9)}`])),
    };
    const width = (x: ComparisonResult) => {
      const [lo, hi] = x.tasks.RuMedNLI?.metrics.accuracy?.ci ?? [0, 0];
      return hi - lo;
    };
    const plain = compareValidated(a, b, { bootstrap: 2000, seed: 1 });
    const clustered = compareValidated(a, b, { bootstrap: 2000, seed: 1, clusters });
    expect(items).toHaveLength(60);
    expect(width(clustered)).toBeGreaterThan(width(plain) * 1.3);
    expect(clustered.tasks.RuMedNLI?.metrics.accuracy?.delta).toBe(
      plain.tasks.RuMedNLI?.metrics.accuracy?.delta,
    );
  });

  describe('a task some files answer on other items is named, file by file, not dropped in silence', () => {
    // "old" answers RuMedDaNet as a file of another release would: two of its ids are not in the test split.
    const old = join(root, 'old');
    cpSync(half, old, { recursive: true });
    const danet = join(old, 'RuMedDaNet.jsonl');
    const lines = readFileSync(danet, 'utf8').trim().split('\n');
    const renamed = lines.map((l, i) =>
      i < 2 ? JSON.stringify({ ...JSON.parse(l), pairID: `another-release-${i}` }) : l,
    );
    writeFileSync(danet, `${renamed.join('\n')}\n`);
    // "partial" has no RuMedNER file at all.
    const partial = join(root, 'partial');
    cpSync(third, partial, { recursive: true });
    rmSync(join(partial, 'RuMedNER.jsonl'));
    const ranked = async (...extra: string[]) => {
      const r = await rumedbench(
        'rank',
        perfect,
        old,
        partial,
        '--names',
        'perfect,old,partial',
        '--data',
        DATA,
        '--bootstrap',
        '100',
        ...extra,
      );
      return { r, result: JSON.parse(r.stdout) as RankResult };
    };

    it('names each file that keeps its task out, and why, whichever system comes first', async () => {
      const { r, result } = await ranked('--json');
      expect(r.code).toBe(1); // old's RuMedDaNet has errors
      expect(Object.keys(result.tasks)).toEqual(['RuMedTop3', 'RuMedSymptomRec', 'RuMedNLI']);
      expect(result.overall).toBeNull();
      expect(result.unranked).toEqual([
        {
          task: 'RuMedDaNet',
          differ: [{ system: 'old', file: danet, reason: 'unscored', errors: 4 }],
        },
        { task: 'RuMedNER', differ: [{ system: 'partial', file: partial, reason: 'missing' }] },
      ]);
      // First among the warnings, so that a capped listing never cuts them.
      expect(result.warnings.slice(0, 2)).toEqual([
        {
          severity: 'warning',
          code: 'TASK_NOT_RANKED',
          task: 'RuMedDaNet',
          file: danet,
          message:
            'RuMedDaNet is not ranked: this file is not scored (4 error(s), listed among the errors); a task is ranked only where every submission answers the same items',
        },
        {
          severity: 'warning',
          code: 'TASK_NOT_RANKED',
          task: 'RuMedNER',
          file: partial,
          message:
            'RuMedNER is not ranked: this submission has no RuMedNER file; a task is ranked only where every submission answers the same items',
        },
      ]);
      // The terminal says it too, and why there is no overall.
      const text = await rumedbench('rank', old, perfect, '--data', DATA, '--bootstrap', '100');
      expect(text.stdout).toContain(
        'Overall: not ranked, as RuMedDaNet is not (the files that differ are named below)',
      );
      expect(text.stderr).toContain(`warning: ${danet}: RuMedDaNet is not ranked: this file is not scored`);
      expect(text.stderr).not.toContain(`${join(perfect, 'RuMedDaNet.jsonl')}: RuMedDaNet is not ranked`);
    });

    it('with --file-gold, a file scored on other items is named with how many of them differ', async () => {
      const { result } = await ranked('--json', '--file-gold');
      expect(result.unranked[0]).toEqual({
        task: 'RuMedDaNet',
        differ: [
          {
            system: 'old',
            file: danet,
            reason: 'other_items',
            items: 60,
            foreign: 2,
            like: join(perfect, 'RuMedDaNet.jsonl'),
          },
        ],
      });
    });

    it('rank --tasks checks only the tasks asked for', async () => {
      const r = await rumedbench(
        'rank',
        old,
        perfect,
        '--tasks',
        'RuMedNLI',
        '--data',
        DATA,
        '--bootstrap',
        '100',
        '--json',
      );
      const result = JSON.parse(r.stdout) as RankResult;
      expect([r.code, Object.keys(result.tasks), result.errors, result.warnings, result.unranked]).toEqual([
        0,
        ['RuMedNLI'],
        [],
        [],
        [],
      ]);
    });

    it('the report says which files keep a task out of "Which systems differ"', async () => {
      const { runReport } = await import('../../src/report/run.js');
      const { text } = await runReport([perfect, old], {
        names: ['perfect', 'old'],
        dataDir: DATA,
        bootstrap: 100,
        format: 'markdown',
      });
      expect(text).toContain(
        `RuMedDaNet is not ranked, and so neither is the overall: a task is ranked only where every system answers the same items, and these files differ: old’s ${danet.replace(/_/g, '\\_')} is not scored (4 error(s), under “Validation problems”).`,
      );
    });
  });
});
