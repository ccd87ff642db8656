/**
 * `rumedbench run`: a run folder's manifest.json holds the run's spec, and running that spec again writes the same
 * predictions, byte for byte, for an LLM run (generation and log-likelihood) and a baseline.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { useFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-spec-'));
const manifestOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
    spec: Record<string, unknown>;
    command: string;
  };
/** Every predictions file of a run folder, by name. */
const predictions = (dir: string) =>
  Object.fromEntries(
    readdirSync(join(dir, 'predictions'))
      .sort()
      .map((f) => [f, readFileSync(join(dir, 'predictions', f), 'utf8')]),
  );

describe('rumedbench run (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({
    // A deterministic model: its answer depends on the question alone.
    reply: (body) => ((body.messages.at(-1)?.content.length ?? 0) % 2 === 0 ? 'Ответ: да' : 'Ответ: 2'),
  });

  it.each([
    ['generate', []],
    ['loglik', ['--mode', 'loglik']],
  ])('repeats an LLM run (%s) from its manifest, byte for byte', async (_, extra) => {
    const first = tmp();
    await rumedbenchOk(
      'llm',
      ...['--model', 'fake-1', '--base-url', server().url, '--data', DATA, '--no-progress'],
      ...['--tasks', 'RuMedDaNet,RuMedNLI,RuMedTest', '--split', 'both', '--bootstrap', '0', '--out', first],
      ...extra,
    );
    const m = manifestOf(first);
    expect(m.spec).toMatchObject({
      schema: 'rumedbench.run/1',
      kind: 'llm',
      provider: { name: 'openai', model: 'fake-1', base_url: server().url, max_reply_bytes: 4 << 20 },
      tasks: ['RuMedDaNet', 'RuMedNLI', 'RuMedTest'],
      split: 'both',
      data: DATA,
      mode: extra.length > 0 ? 'loglik' : 'generate',
      max_tokens: 1024,
      concurrency: 8,
      bootstrap: 0,
    });
    expect(m.command).toContain(`rumedbench llm --provider openai --model fake-1 --base-url ${server().url}`);
    const again = tmp();
    const sent = () => server().requests.length + server().completions.length;
    const asked = sent();
    const r = await rumedbenchOk('run', join(first, 'manifest.json'), '--out', again, '--no-progress');
    expect(sent()).toBeGreaterThan(asked);
    expect(r.stdout).toContain('run folder:');
    expect(predictions(again)).toEqual(predictions(first));
    expect(Object.keys(predictions(first)).length).toBeGreaterThan(0);
    expect(manifestOf(again).spec).toEqual(m.spec);
  });

  it('repeats a baseline from its manifest, and runs a spec file written by hand', async () => {
    const first = tmp();
    await rumedbenchOk('baseline', 'naive', '--data', DATA, '--out', first, '--tasks', 'RuMedDaNet,RuMedNLI');
    const m = manifestOf(first);
    expect(m.spec).toEqual({
      schema: 'rumedbench.run/1',
      kind: 'baseline',
      method: 'naive',
      tasks: ['RuMedDaNet', 'RuMedNLI'],
      data: DATA,
      train_split: 'train',
      seed: 0,
      bootstrap: 1000,
    });
    const again = tmp();
    await rumedbenchOk('run', join(first, 'manifest.json'), '--out', again);
    expect(predictions(again)).toEqual(predictions(first));

    const file = join(tmp(), 'spec.json');
    writeFileSync(
      file,
      JSON.stringify({
        schema: 'rumedbench.run/1',
        kind: 'baseline',
        method: 'naive',
        tasks: ['RuMedDaNet'],
      }),
    );
    const third = tmp();
    await rumedbenchOk('run', file, '--out', third, '--data', DATA);
    expect(predictions(third)['RuMedDaNet.jsonl']).toBe(predictions(first)['RuMedDaNet.jsonl']);
  });

  it('refuses a spec that does not fit, naming the file and each problem, and a manifest from before specs', async () => {
    const dir = tmp();
    const file = join(dir, 'spec.json');
    writeFileSync(
      file,
      JSON.stringify({
        schema: 'rumedbench.run/1',
        kind: 'llm',
        provider: { name: 'openai', model: 'm' },
        max_tokens: 'many',
      }),
    );
    const r = await rumedbench('run', file, '--out', join(dir, 'out'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: not a valid run spec`);
    expect(r.stderr).toContain('provider.base_url');
    expect(r.stderr).toContain('max_tokens');
    const old = join(dir, 'manifest.json');
    writeFileSync(old, JSON.stringify({ schema_version: 1, rumedbench_version: '0.1.0', model: 'm' }));
    const o = await rumedbench('run', old, '--out', join(dir, 'out'));
    expect([o.code, o.stderr]).toEqual([2, expect.stringContaining('a manifest written before run specs')]);
  });
});

describe('rumedbench run of a contamination probe (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({ reply: () => 'Ответ: да', maxModelLen: 160 });

  it('records the probe as a spec, and the same spec gives the same verdicts; --out fits shards to the context too', async () => {
    const first = tmp();
    const probe = [
      ...['contamination', '--model', 'fake-1', '--base-url', server().url, '--data', DATA],
      ...['--tasks', 'RuMedDaNet', '--probes', 'order', '--shards', '2', '--json'],
    ];
    // Without a folder: nothing written; with one: journal, contamination.json and the manifest.
    const bare = JSON.parse((await rumedbenchOk(...probe)).stdout) as { tasks: Record<string, unknown> };
    const kept = JSON.parse((await rumedbenchOk(...probe, '--out', first)).stdout) as typeof bare;
    expect(kept.tasks).toEqual(bare.tasks);
    // The fixture's 60 items in 2 shards would not fit a 160-token context: both runs cut them finer alike.
    const order = (r: typeof bare) => (r.tasks.RuMedDaNet as { order: { shards: number } }).order;
    expect(order(bare).shards).toBeGreaterThan(2);
    const m = manifestOf(first);
    expect(m.spec).toMatchObject({
      kind: 'contamination',
      probes: ['order'],
      shards: 2,
      split: 'test',
      provider: { name: 'openai', model: 'fake-1' },
    });
    expect(m.command).toContain('rumedbench contamination --provider openai --model fake-1');
    const again = tmp();
    const r = JSON.parse(
      (await rumedbenchOk('run', join(first, 'manifest.json'), '--out', again, '--json')).stdout,
    ) as typeof bare;
    expect(r.tasks).toEqual(bare.tasks);
    expect(readFileSync(join(again, 'contamination.json'), 'utf8')).toBe(
      readFileSync(join(first, 'contamination.json'), 'utf8'),
    );
  });
});
