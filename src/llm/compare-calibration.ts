/**
 * `compare` of two log-likelihood run folders: besides the scores, the paired difference in calibration (ECE) per
 * task, over the items both runs scored, from each run's recorded candidate log-probabilities (samples.jsonl).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type CalibrationItem, type EceDifference, eceDifference } from '../metrics/calibration.js';
import { forEachLine } from './journal.js';
import { calibrationItem, type SampleLog } from './outputs.js';

const MAX_LINE = 64 << 20;

/** Per task and item id: the candidates' log-probabilities and the gold's index, where every candidate was scored. */
async function calibrationItems(dir: string): Promise<Map<string, Map<string, CalibrationItem>>> {
  const out = new Map<string, Map<string, CalibrationItem>>();
  const file = join(dir, 'samples.jsonl');
  if (!existsSync(file)) return out;
  await forEachLine(file, MAX_LINE, (line) => {
    if (line.trim() === '') return;
    let s: SampleLog;
    try {
      s = JSON.parse(line) as SampleLog;
    } catch {
      return;
    }
    const item = s.mode === 'loglik' && s.gold !== undefined ? calibrationItem(s) : undefined;
    if (!item) return;
    const task = out.get(s.task) ?? new Map<string, CalibrationItem>();
    task.set(s.id, item);
    out.set(s.task, task);
  });
  return out;
}

/** ECE(B) − ECE(A) per task, or undefined when the two folders share no scored log-likelihood item. */
export async function compareCalibration(
  a: string,
  b: string,
  o: { bootstrap: number; seed: number },
): Promise<Record<string, EceDifference> | undefined> {
  const [ia, ib] = [await calibrationItems(a), await calibrationItems(b)];
  const out: Record<string, EceDifference> = {};
  for (const [task, items] of ia) {
    const other = ib.get(task);
    if (!other) continue;
    const pairs = [...items].flatMap(([id, x]) => {
      const y = other.get(id);
      return y ? [{ a: x, b: y }] : [];
    });
    if (pairs.length >= 2) out[task] = eceDifference(pairs, o.bootstrap, o.seed);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
