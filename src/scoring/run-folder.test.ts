/** The run-folder contract: one writer, one reader, every kind of run, and folders written before `kind`. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRunFolder, writeManifest, writeRunSummary } from './run-folder.js';
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
    const r = readRunFolder(llm);
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
    const e = readRunFolder(enc).summary;
    expect(e.kind === 'encoder' && e.encoder.sha256).toBe('ab');
  });

  it('reads a folder written before the kind field by its fields, and refuses what it cannot read, naming why', () => {
    const old = tmp();
    writeFileSync(
      join(old, 'summary.json'),
      JSON.stringify({ runs: [{ task: 'RuMedNLI', seconds: 2 }], evaluation }),
    );
    expect(readRunFolder(old).summary.kind).toBe('baseline');
    const future = tmp();
    writeFileSync(join(future, 'summary.json'), JSON.stringify({ schema_version: 2, kind: 'llm' }));
    expect(() => readRunFolder(future)).toThrow('schema_version 2; this rumedbench reads version 1');
    const broken = tmp();
    writeFileSync(join(broken, 'summary.json'), JSON.stringify({ kind: 'baseline', runs: 'many' }));
    expect(() => readRunFolder(broken)).toThrow(/not a baseline run summary: runs: /);
    expect(() => readRunFolder(tmp())).toThrow('not a run folder (no summary.json)');
  });
});
