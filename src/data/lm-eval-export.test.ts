/**
 * The lm-eval export without lm-eval (test/e2e/lm-eval.test.ts runs the real harness where it can be installed):
 * each exported task's pieces, joined as its helper joins them, give our log-likelihood prompt of every fixture
 * record byte for byte; its YAML names the user's data file and our candidates with their spaces; RuMedNER is left
 * out, saying why.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureDataDir } from '../../test/helpers/fixture-data.js';
import { loglikContext } from '../tasks/loglik-prompt.js';
import { getTask, TASKS } from '../tasks/registry.js';
import { exportLmEval, LMEVAL_HELPER, type TextPiece } from './lm-eval-export.js';

const data = fixtureDataDir();

describe('tasks export --format lm-eval', () => {
  it("writes every log-likelihood task with our prompts, candidates and the user's data file", async () => {
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-lmeval-export-'));
    const result = await exportLmEval(TASKS, { out, dataDir: data });
    const loglik = result.tasks.filter((t) => t.mode === 'loglik');
    expect(loglik.map((t) => t.task)).toEqual([
      'RuMedTop3',
      'RuMedSymptomRec',
      'RuMedDaNet',
      'RuMedNLI',
      'RuMedTest',
    ]);
    expect(result.skipped.RuMedNER).toMatch(/IOB2 tags, which lm-eval cannot score/);
    const specs = JSON.parse(readFileSync(join(out, `${LMEVAL_HELPER}.json`), 'utf8')) as Record<
      string,
      { task: string; pieces: TextPiece[]; labels: string[] }
    >;
    for (const t of loglik) {
      const task = getTask(t.task);
      const yaml = readFileSync(join(out, `${t.lmEvalTask}.yaml`), 'utf8');
      const file = join(data, t.task, `${t.split}_v1.jsonl`);
      expect(yaml).toContain(`dataset_kwargs: {data_files: {${t.split}: ${JSON.stringify(file)}}}`);
      const spec = specs[t.lmEvalTask];
      expect(spec?.task).toBe(t.task);
      const candidates = task.prompt.loglik?.candidates({}, { labels: spec?.labels ?? [] }, {}) ?? [];
      expect(yaml).toContain(`doc_to_choice: [${candidates.map((c) => JSON.stringify(c.text)).join(', ')}]`);
      for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
        const raw = JSON.parse(line) as Record<string, unknown>;
        const joined = (spec?.pieces ?? [])
          .map((p) => (typeof p === 'string' ? p : String(raw[p.field] ?? '')))
          .join('');
        expect(joined).toBe(loglikContext(task, task.prompt.render(raw)));
      }
    }
    expect(readFileSync(join(out, 'rumedbench.yaml'), 'utf8')).toContain('# RuMedNER: not exported:');
  });

  it('writes every generation prompt (system, instruction, item) as llm sends it zero-shot, and says why not RuMedNER', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-lmeval-export-'));
    const result = await exportLmEval(TASKS, { out, dataDir: data });
    const gen = result.tasks.filter((t) => t.mode === 'generate');
    expect(gen.map((t) => t.lmEvalTask)).toEqual([
      'rumedbench_rumedtop3_gen',
      'rumedbench_rumedsymptomrec_gen',
      'rumedbench_rumeddanet_gen',
      'rumedbench_rumednli_gen',
      'rumedbench_rumedtest_gen',
    ]);
    const specs = JSON.parse(readFileSync(join(out, `${LMEVAL_HELPER}.json`), 'utf8')) as Record<
      string,
      { pieces: TextPiece[] }
    >;
    for (const t of gen) {
      const task = getTask(t.task);
      const yaml = readFileSync(join(out, `${t.lmEvalTask}.yaml`), 'utf8');
      expect(yaml).toContain('output_type: generate_until');
      expect(yaml).toContain(`description: ${JSON.stringify(task.prompt.system)}`);
      expect(yaml).toContain(`filter_fn: !function ${LMEVAL_HELPER}.answer_filter`);
      // A ranking task's instruction lists the train inventory, sorted, as llm's does.
      const labels =
        task.kind === 'ranking'
          ? [
              ...new Set(
                readFileSync(join(data, t.task, 'train_v1.jsonl'), 'utf8')
                  .trim()
                  .split('\n')
                  .map((l) => String(JSON.parse(l)[task.goldField])),
              ),
            ].sort()
          : undefined;
      const instruction = task.prompt.instruction(labels ? { labels } : {});
      const file = join(data, t.task, `${t.split}_v1.jsonl`);
      for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
        const raw = JSON.parse(line) as Record<string, unknown>;
        const joined = (specs[t.lmEvalTask]?.pieces ?? [])
          .map((p) => (typeof p === 'string' ? p : String(raw[p.field] ?? '')))
          .join('');
        expect(joined).toBe(`${instruction}\n\n${task.prompt.render(raw)}`);
      }
    }
    expect(readFileSync(join(out, 'rumedbench_gen.yaml'), 'utf8')).toContain(
      '# RuMedNER: not exported: its answer is a JSON list of entities',
    );
  });
});
