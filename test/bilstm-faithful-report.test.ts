/**
 * The faithfulness matrix's report (bench/bilstm-faithful-report.js, issue #61 item 2), run as a user runs it on a
 * matrix folder laid out as bench/bilstm-faithful.sh leaves it, with prediction files whose scores are known: the
 * fixture data's test splits answered right on every `every`-th record.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';
import { writeFixtureData, writeFixturePredictions } from './helpers/fixture-data.js';

describe('bench/bilstm-faithful-report', () => {
  it('prints each side per seed, the PyTorch spread, ours within it or not, mean ± sd, and the overall with the missing tasks named', {
    timeout: 120_000,
  }, () => {
    const base = mkdtempSync(join(tmpdir(), 'rumedbench-faithful-report-'));
    const data = writeFixtureData(join(base, 'data'), { n: 4 });
    // All five tasks' test predictions, right on every `every`-th of the 4 records: every 1 → 100, 2 or 3 → 50, 4 → 25.
    const answers = (every: number) => writeFixturePredictions(data, join(base, `every-${every}`), every);
    const out = join(base, 'faithful');
    const side = (task: string, name: string, every: number | null, done: string | null, log: string) => {
      const dir = join(out, task);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.log`), log);
      if (done !== null) writeFileSync(join(dir, `${name}.done`), done);
      if (every === null) return;
      const preds = name.startsWith('ours') ? join(dir, name, 'predictions') : join(dir, name);
      mkdirSync(preds, { recursive: true });
      copyFileSync(join(answers(every), `${task}.jsonl`), join(preds, `${task}.jsonl`));
    };
    const oursLog = (task: string, epochs: number) =>
      Array.from(
        { length: epochs },
        (_, i) => `${task}: epoch ${i + 1}/50: train loss 0.5000, dev loss 0.6000, 9.0 s\n`,
      ).join('');
    const torchLog = (...cpu: number[]) =>
      cpu
        .map(
          (c, i) =>
            `${JSON.stringify({ epoch: i + 1, seconds: 2 * c, cpu_seconds: c, train_loss: 0.5, dev_loss: 0.6 })}\n`,
        )
        .join('');

    side('RuMedDaNet', 'ours-0', 1, '0 150', oursLog('RuMedDaNet', 4));
    side('RuMedDaNet', 'ours-1', 4, '0 90', oursLog('RuMedDaNet', 5));
    side('RuMedDaNet', 'torch-0', 2, '0 600', torchLog(10, 20));
    side('RuMedDaNet', 'torch-1', 3, '0 600', torchLog(30));
    side('RuMedDaNet', 'torch-2', 1, '0 600', torchLog(30));
    side('RuMedNER', 'ours-0', 1, '0 60', oursLog('RuMedNER', 20));
    side('RuMedNER', 'torch-0', null, '1 5', 'Traceback: no torch\n');
    side('RuMedNER', 'torch-1', null, null, torchLog(7));
    side('RuMedTop3', 'ours-0', 1, '0 60', oursLog('RuMedTop3', 6));
    side('RuMedTop3', 'torch-0', 2, '0 60', torchLog(12));
    side('RuMedSymptomRec', 'ours-0', 2, '0 60', oursLog('RuMedSymptomRec', 6));
    // The snapshot of dist/ that bilstm-faithful.sh keeps in a task's folder is no task.
    mkdirSync(join(out, 'RuMedDaNet', 'package'), { recursive: true });
    const reference = join(base, 'reference');
    mkdirSync(join(reference, 'bilstm'), { recursive: true });
    copyFileSync(join(answers(2), 'RuMedNLI.jsonl'), join(reference, 'bilstm', 'RuMedNLI.jsonl'));

    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bench', 'bilstm-faithful-report.js'), out], {
      encoding: 'utf8',
      env: { ...process.env, RUMEDBENCH_DATA: data, RUMEDBENCH_REFERENCE: reference },
    });
    expect(r.status, r.stderr).toBe(0);
    const section = (title: string) => {
      const lines = r.stdout.split('\n');
      const at = lines.findIndex((l) => l.startsWith(`## ${title}`));
      expect(at, `no section ${title} in:\n${r.stdout}`).toBeGreaterThanOrEqual(0);
      const end = lines.findIndex((l, i) => i > at && l === '');
      return lines
        .slice(at + 1, end < 0 ? undefined : end)
        .filter((l) => !l.startsWith('|---') && !l.startsWith('| side'));
    };
    expect(section('RuMedDaNet')).toEqual([
      '| ours | 0 | 4 | 2.5 | - | 100.00 | yes |',
      '| ours | 1 | 5 | 1.5 | - | 25.00 | no |',
      '| ours | 2 | 0 | - | - | not started |  |',
      '| torch | 0 | 2 | 10.0 | 15.0 | 50.00 |  |',
      '| torch | 1 | 1 | 10.0 | 30.0 | 50.00 |  |',
      '| torch | 2 | 1 | 10.0 | 30.0 | 100.00 |  |',
      // ours: 100 and 25 (sd √(2·37.5²) = 53.03); PyTorch: 50, 50, 100 (sd √(2500/3) = 28.87).
      "PyTorch's spread: 50.00-100.00 (3 seeds); mean ± sd: ours 62.50 ± 53.03 (2 seeds), PyTorch 66.67 ± 28.87 (3 seeds)",
    ]);
    expect(section('RuMedNER')).toEqual([
      '| ours | 0 | 20 | 1.0 | - | 100.00 | no spread yet |',
      '| ours | 1 | 0 | - | - | not started |  |',
      `| torch | 0 | 0 | 0.1 | - | failed (exit 1; see ${join(out, 'RuMedNER', 'torch-0.log')}) |  |`,
      '| torch | 1 | 1 | - | 7.0 | running (no result yet) |  |',
      "PyTorch's spread: none yet; mean ± sd: ours 100.00 ± - (1 seed), PyTorch no seed finished",
    ]);
    expect(section('RuMedTop3')).toEqual([
      '| ours | 0 | 6 | 1.0 | - | 100.00 | no spread yet |',
      '| torch | 0 | 1 | 1.0 | 12.0 | 50.00 |  |',
      "PyTorch's spread: 50.00-50.00 (1 seed); mean ± sd: ours 100.00 ± - (1 seed), PyTorch 50.00 ± - (1 seed)",
    ]);
    expect(section('RuMedSymptomRec')).toEqual([
      '| ours | 0 | 6 | 1.0 | - | 50.00 | no spread yet |',
      '| torch | 0 | 0 | - | - | not started |  |',
      "PyTorch's spread: none yet; mean ± sd: ours 50.00 ± - (1 seed), PyTorch no seed finished",
    ]);
    // Seed 0: (Top3 100 + SymptomRec 50 + DaNet 100 + NER 100 + upstream's RuMedNLI 50) / 5 = 80.
    expect(section('Overall')).toEqual([
      '| seed | overall | paper | difference | within 1.5 |',
      '| 0 | 80.00 | 53.87 | +26.13 | no |',
      '| 1 | missing: RuMedTop3, RuMedSymptomRec, RuMedNER | 53.87 | - | - |',
    ]);
    expect(r.stdout).not.toContain('## package');
  });
});
