/**
 * Shards for clusters, on fixture data and a loopback server: `llm --shard I/N` runs a balanced, deterministic share
 * of the requests; `merge` joins shards 1/3, 2/3 and 3/3 into the unsharded run's folder, byte for byte; a missing,
 * doubled or differently configured shard is refused by name; `auto/N` reads Slurm's and Kubernetes' task index.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk, rumedbenchWith } from '../helpers/cli.js';
import { type ChatRequestBody, useFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-shard-'));
const reply = (body: ChatRequestBody) => {
  const last = body.messages.at(-1)?.content ?? '';
  const h = createHash('sha256').update(last).digest()[0] as number;
  return /«да» или «нет»/.test(last)
    ? `Ответ: ${h % 2 ? 'да' : 'нет'}`
    : `Ответ: ${['entailment', 'contradiction', 'neutral'][h % 3]}`;
};

describe('shards and merge (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({ reply });
  const llm = (out: string, ...more: string[]) => [
    ...[
      'llm',
      '--base-url',
      server().url,
      '--model',
      'fake',
      '--data',
      DATA,
      '--tasks',
      'RuMedDaNet,RuMedNLI',
    ],
    ...['--split', 'both', '--bootstrap', '100', '--out', out, ...more],
  ];
  const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  const summary = (dir: string) => JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));

  it('merges shards 1/3, 2/3, 3/3 into the unsharded run, byte for byte; refuses missing and doubled shards', async () => {
    const whole = tmp();
    await rumedbenchOk(...llm(whole));
    const total = summary(whole).llm.requests.total as number;
    expect(total).toBe(4 * 60);
    const shards = [1, 2, 3].map(() => tmp());
    let asked = 0;
    for (const [i, dir] of shards.entries()) {
      const before = server().requests.length;
      await rumedbenchOk(...llm(dir, '--shard', `${i + 1}/3`));
      const n = server().requests.length - before;
      asked += n;
      // Balanced by the hash: each shard near a third.
      expect(n).toBeGreaterThan(total / 3 - 25);
      expect(n).toBeLessThan(total / 3 + 25);
      expect(manifest(dir).shard).toEqual({ index: i + 1, count: 3 });
    }
    expect(asked).toBe(total);

    const merged = join(tmp(), 'merged');
    const r = await rumedbenchOk('merge', ...shards, '--out', merged, '--data', DATA, '--bootstrap', '100');
    expect(r.stdout).toContain('RuMedDaNet');
    const files = (d: string) => readdirSync(join(d, 'predictions')).sort();
    expect(files(merged)).toEqual(files(whole));
    for (const f of files(whole))
      expect(readFileSync(join(merged, 'predictions', f), 'utf8')).toBe(
        readFileSync(join(whole, 'predictions', f), 'utf8'),
      );
    expect(readFileSync(join(merged, 'submission.zip'))).toEqual(readFileSync(join(whole, 'submission.zip')));
    const [a, b] = [summary(merged), summary(whole)];
    // The same scores and intervals; only where each read its predictions from differs.
    const scores = (x: { tasks: Record<string, Record<string, unknown>> }) =>
      Object.fromEntries(Object.entries(x.tasks).map(([t, v]) => [t, { ...v, file: undefined }]));
    expect([a.overall, a.overall_ci, scores(a)]).toEqual([b.overall, b.overall_ci, scores(b)]);
    expect(Object.keys(scores(a))).toEqual(['RuMedDaNet', 'RuMedNLI']);
    expect(a.llm.tasks).toEqual(b.llm.tasks);
    expect(manifest(merged).merged_from.map((m: { shard: unknown }) => m.shard)).toEqual([
      { index: 1, count: 3 },
      { index: 2, count: 3 },
      { index: 3, count: 3 },
    ]);

    const missing = await rumedbench(
      'merge',
      shards[0] as string,
      shards[2] as string,
      '--out',
      tmp(),
      '--data',
      DATA,
    );
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('shard(s) 2/3 missing')]);
    const doubled = await rumedbench('merge', ...shards, shards[1] as string, '--out', tmp(), '--data', DATA);
    expect([doubled.code, doubled.stderr]).toEqual([2, expect.stringContaining('shard 2/3 given twice')]);
    // A shard of the run submitted alone is refused (exit 1, as every refusal of submit): it answers part of the run.
    const alone = await rumedbench('submit', shards[0] as string, '--server', server().url);
    expect([alone.code, alone.stderr]).toEqual([1, expect.stringContaining('rumedbench merge')]);
  });

  it('refuses shards run with other settings, naming them', async () => {
    const one = tmp();
    const two = tmp();
    await rumedbenchOk(...llm(one, '--shard', '1/2', '--tasks', 'RuMedDaNet'));
    await rumedbenchOk(...llm(two, '--shard', '2/2', '--tasks', 'RuMedDaNet', '--max-tokens', '99'));
    const r = await rumedbench('merge', one, two, '--out', tmp(), '--data', DATA);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('other settings than')]);
    expect(r.stderr).toContain('(params)');
  });

  it('takes the shard from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX with auto/N', async () => {
    const slurm = tmp();
    await rumedbenchWith(
      { SLURM_ARRAY_TASK_ID: '3' },
      ...llm(slurm, '--shard', 'auto/3', '--tasks', 'RuMedNLI'),
    );
    expect(manifest(slurm).shard).toEqual({ index: 1, count: 3 });
    const k8s = tmp();
    await rumedbenchWith(
      { JOB_COMPLETION_INDEX: '1' },
      ...llm(k8s, '--shard', 'auto/3', '--tasks', 'RuMedNLI'),
    );
    expect(manifest(k8s).shard).toEqual({ index: 2, count: 3 });
    const none = await rumedbenchWith(
      { SLURM_ARRAY_TASK_ID: undefined, JOB_COMPLETION_INDEX: undefined },
      ...llm(tmp(), '--shard', 'auto/3'),
    );
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('neither SLURM_ARRAY_TASK_ID')]);
    const bad = await rumedbench(...llm(tmp(), '--shard', '4/3'));
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--shard: I/N with 1 ≤ I ≤ N')]);
  });
});
