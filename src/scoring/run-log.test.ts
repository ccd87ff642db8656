/** The run log: one writer, one reader, every kind of run, and folders of the previous release. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  manifestSettings,
  providerInfoOf,
  readRunLog,
  sharedSettings,
  writeManifest,
  writeRunSummary,
} from './run-log.js';
import type { EvaluationResult } from './score.js';

const evaluation = {
  schema_version: 1,
  rumedbench_version: '0.1.0',
  source: 'p',
  split: 'test',
  overall: null,
  overall_ci: null,
  tasks: { RuMedDaNet: { n: 2, metrics: { accuracy: 50 }, score: 50, ci: {}, score_ci: null } },
  unscored: {},
  missing_tasks: [],
  bootstrap: { resamples: 0, seed: 0, level: 0.95 },
  errors: [],
  warnings: [],
} as unknown as EvaluationResult;
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-runfolder-'));

describe('run folders', () => {
  it('reads back what each writer wrote, typed by its kind', () => {
    const llm = tmp();
    writeRunSummary(llm, {
      kind: 'llm',
      ...evaluation,
      llm: {
        mode: 'generate',
        tasks: { RuMedDaNet: { samples: 2, unparsed: 0, unparsed_rate: 0, failed: 0 } },
      },
    });
    writeManifest(llm, {
      rumedbench_version: '0.1.0',
      created: 'now',
      model: 'm',
      mode: 'generate',
      limit: 2,
    });
    const r = readRunLog(llm);
    expect([r.summary.kind, r.summary.schema_version, r.manifest?.limit, r.manifest?.model]).toEqual([
      'llm',
      1,
      2,
      'm',
    ]);
    const enc = tmp();
    writeRunSummary(enc, {
      kind: 'encoder',
      runs: [{ task: 'RuMedDaNet', seconds: 1 }],
      encoder: { model: 'x', sha256: 'ab', dtype: 'fp32' },
      evaluation,
    });
    const e = readRunLog(enc).summary;
    expect(e.kind === 'encoder' && e.encoder.sha256).toBe('ab');
  });

  it('reads a folder written before the kind field by its fields, and refuses what it cannot read, naming why', () => {
    const old = tmp();
    writeFileSync(
      join(old, 'summary.json'),
      JSON.stringify({ runs: [{ task: 'RuMedNLI', seconds: 2 }], evaluation }),
    );
    expect(readRunLog(old).summary.kind).toBe('baseline');
    const future = tmp();
    writeFileSync(join(future, 'summary.json'), JSON.stringify({ schema_version: 2, kind: 'llm' }));
    expect(() => readRunLog(future)).toThrow('schema_version 2; this rumedbench reads version 1');
    const broken = tmp();
    writeFileSync(join(broken, 'summary.json'), JSON.stringify({ kind: 'baseline', runs: 'many' }));
    expect(() => readRunLog(broken)).toThrow(/not a baseline run summary: runs: /);
    expect(() => readRunLog(tmp())).toThrow('not a run folder (no summary.json)');
  });

  it('types the manifest and the spec it records, and refuses to write a field it does not know', () => {
    const dir = tmp();
    writeRunSummary(dir, { kind: 'baseline', runs: [{ task: 'RuMedDaNet', seconds: 1 }], evaluation });
    const spec = {
      schema: 'rumedbench.run/1',
      kind: 'baseline' as const,
      method: 'naive',
      tasks: ['RuMedDaNet'],
    };
    writeManifest(dir, {
      rumedbench_version: '0.2.0',
      created: 'now',
      spec,
      command: 'rumedbench baseline naive',
    });
    const log = readRunLog(dir);
    expect(log.spec).toEqual(spec);
    expect(log.manifest).toEqual({
      schema_version: 1,
      rumedbench_version: '0.2.0',
      created: 'now',
      spec,
      command: 'rumedbench baseline naive',
      limit: null,
    });
    expect(log.manifestExtra).toBeUndefined();
    expect(() =>
      writeManifest(dir, { rumedbench_version: '0.2.0', created: 'now', temperature: 0 } as never),
    ).toThrow(`manifest.json for ${dir}: (top): Unrecognized key: "temperature"`);
    expect(() =>
      writeManifest(dir, { rumedbench_version: '0.2.0', created: 'now', shard: { index: 0, count: 2 } }),
    ).toThrow(/shard\.index: Too small: expected number to be >=1/);
    // summary.json likewise: a field at its top, or in its `llm` part, that the schema does not know.
    expect(() =>
      writeRunSummary(dir, { kind: 'baseline', runs: [], evaluation, took_s: 3 } as never),
    ).toThrow(`summary.json for ${dir}: (top): Unrecognized key: "took_s"`);
    expect(() =>
      writeRunSummary(dir, { kind: 'llm', ...evaluation, llm: { tasks: {}, spent: 1 } } as never),
    ).toThrow(`summary.json for ${dir}: llm: Unrecognized key: "spent"`);
  });

  it('reads a folder of the previous release (0.1.0): no spec, no kind, a field it no longer writes kept aside', () => {
    const old = tmp();
    writeFileSync(
      join(old, 'summary.json'),
      JSON.stringify({
        ...evaluation,
        llm: {
          tasks: { RuMedDaNet: { samples: 2, unparsed: 0, unparsed_rate: 0, failed: 0 } },
          harness: 'rumedbench-llm/1',
        },
        harness: 'rumedbench-llm/1',
      }),
    );
    // manifest.json as release 0.1.0 wrote it (llm/run.ts at 0.1.0), with a field of its own (`harness`).
    const manifest = {
      schema_version: 1,
      rumedbench_version: '0.1.0',
      created: '2026-01-01T00:00:00.000Z',
      provider: 'openai',
      endpoint: 'http://127.0.0.1:8000/v1/chat/completions',
      model: 'm',
      mode: 'generate',
      params: { temperature: 0, maxTokens: 16, seed: 0 },
      seed: 0,
      shots: 0,
      splits: 'test',
      concurrency: 4,
      limit: null,
      system_override: null,
      templates: null,
      prompt_versions: { RuMedDaNet: 'ru-1' },
      data_sha256: { 'RuMedDaNet/test_v1.jsonl': 'ab' },
      shard: null,
      harness: 'rumedbench-llm/1',
    };
    writeFileSync(join(old, 'manifest.json'), JSON.stringify(manifest));
    const log = readRunLog(old);
    expect(
      log.summary.kind === 'llm' && [log.summary.llm.tasks.RuMedDaNet?.samples, log.summary.overall],
    ).toEqual([2, null]);
    expect(log.spec).toBeUndefined();
    expect(log.manifestExtra).toEqual({ harness: 'rumedbench-llm/1' });
    const { harness: _, ...known } = manifest;
    expect(log.manifest).toEqual(known);
    expect(manifestSettings(log.manifest as NonNullable<typeof log.manifest>)).toEqual([
      ['provider', 'openai'],
      ['model', 'm'],
      ['mode', 'generate'],
      ['seed', 0],
      ['shots', 0],
      ['splits', 'test'],
      ['concurrency', 4],
      ['rumedbench_version', '0.1.0'],
      ['created', '2026-01-01T00:00:00.000Z'],
      ['params.temperature', 0],
      ['params.maxTokens', 16],
      ['params.seed', 0],
      ['prompt RuMedDaNet', 'ru-1'],
    ]);
    expect(providerInfoOf(log.manifest as NonNullable<typeof log.manifest>)).toEqual({
      provider: 'openai',
      endpoint: 'http://127.0.0.1:8000/v1/chat/completions',
      model: 'm',
    });
    // A field of the wrong type is not read past: the folder is refused, the field named.
    writeFileSync(join(old, 'manifest.json'), JSON.stringify({ ...manifest, shots: 'zero' }));
    expect(() => readRunLog(old)).toThrow(
      /manifest\.json: not a run manifest: shots: Invalid input: expected number, received string$/,
    );
  });

  it('says what the shards of one run share: everything but when, which shard and how many in flight', () => {
    const base = {
      schema_version: 1 as const,
      rumedbench_version: '0.2.0',
      limit: null,
      model: 'm',
      spec: { schema: 'rumedbench.run/1', kind: 'llm' as const, seed: 0 },
    };
    // Shard i of 2, run at time i with 4·i requests in flight.
    const shard = (i: number) =>
      sharedSettings({
        ...base,
        created: String(i),
        concurrency: 4 * i,
        shard: { index: i, count: 2 },
        command: `rumedbench llm --shard ${i}/2`,
        spec: { ...base.spec, shard: { index: i, count: 2 }, concurrency: 4 * i },
      });
    const [a, b] = [shard(1), shard(2)];
    expect(a).toEqual(b);
    expect(a).toEqual({ ...base });
    expect(sharedSettings({ ...base, created: '1' }, { harness: 'x' })).toEqual({ ...base, harness: 'x' });
  });
});
