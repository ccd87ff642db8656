/**
 * Perturbations of what a model reads, to see how much a score rests on surface form (HELM's robustness
 * perturbations, for Russian): seeded keyboard-neighbour typos in Cyrillic at a rate, ё written as е, everything in
 * lower case, and the options of a multiple-choice item in another order (the answer mapped back to the original
 * numbering before it is scored). Only the fields a model reads change; ids and gold stay as they are.
 */
import { createHash } from 'node:crypto';
import { UsageError } from '../errors.js';
import { createRng, type Rng } from '../metrics/rng.js';
import { isChoiceTask } from '../tasks/registry.js';
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';

export type PerturbationKind = 'typos' | 'yo' | 'case' | 'shuffle-options';
export interface Perturbation {
  kind: PerturbationKind;
  /** typos: the share of Cyrillic letters replaced. */
  rate?: number;
}

export const perturbationName = (p: Perturbation): string =>
  p.kind === 'typos' ? `typos=${p.rate}` : p.kind;

/** `typos=0.03,yo,case,shuffle-options` → the perturbations, in order. */
export function parsePerturbations(spec: string): Perturbation[] {
  return spec.split(',').map((part) => {
    const [kind, value] = part.trim().split('=');
    if (kind === 'typos') {
      const rate = Number(value ?? '0.03');
      if (!(rate > 0 && rate <= 0.5))
        throw new UsageError(`--perturb typos=RATE: a share in (0, 0.5], got "${value}"`);
      return { kind, rate };
    }
    if ((kind === 'yo' || kind === 'case' || kind === 'shuffle-options') && value === undefined)
      return { kind };
    throw new UsageError(`--perturb: typos=RATE, yo, case or shuffle-options, got "${part.trim()}"`);
  });
}

// The ЙЦУКЕН rows: a typo is a key's neighbour on its row or the rows above and below.
const ROWS = ['йцукенгшщзхъ', 'фывапролджэ', 'ячсмитьбю'];
const NEIGHBOURS = new Map<string, string[]>();
ROWS.forEach((row, r) => {
  [...row].forEach((ch, c) => {
    const near: string[] = [];
    for (const [dr, dc] of [
      [0, -1],
      [0, 1],
      [-1, 0],
      [-1, 1],
      [1, -1],
      [1, 0],
    ] as const) {
      const other = ROWS[r + dr]?.[c + dc];
      if (other) near.push(other);
    }
    NEIGHBOURS.set(ch, near);
  });
});

function typos(text: string, rate: number, rng: Rng): string {
  return [...text]
    .map((ch) => {
      const lower = ch.toLowerCase();
      const near = NEIGHBOURS.get(lower === 'ё' ? 'е' : lower);
      if (!near || rng.next() >= rate) return ch;
      const typo = near[rng.int(near.length)] as string;
      return ch === lower ? typo : typo.toUpperCase();
    })
    .join('');
}

function change(text: string, p: Perturbation, rng: Rng): string {
  if (p.kind === 'typos') return typos(text, p.rate ?? 0.03, rng);
  if (p.kind === 'yo') return text.replace(/ё/g, 'е').replace(/Ё/g, 'Е');
  return text.toLocaleLowerCase('ru');
}

/**
 * The record as the perturbed model reads it, and for shuffled options the map from the label shown to the
 * original one. Seeded by the run's seed and the item's id, so that a rerun, a shard and a resume agree.
 */
export function perturbRecord(
  task: TaskDefinition,
  record: TaskRecord,
  p: Perturbation,
  seed: number,
): { record: TaskRecord; answerMap?: Record<string, string> } {
  const h = createHash('sha256')
    .update(`${seed}\u0000${p.kind}\u0000${task.name}\u0000${record.id}`)
    .digest();
  const rng = createRng(h.readUInt32LE(0));
  const raw: Record<string, unknown> = { ...record.raw };
  if (p.kind === 'shuffle-options') {
    if (!isChoiceTask(task)) return { record };
    // The options are the fields the task's definition names per label (RuMedTest's "1"…"4").
    const fields = task.choices.optionFields;
    const labels = Object.keys(fields);
    const order = [...labels];
    for (let i = order.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [order[i], order[j]] = [order[j] as string, order[i] as string];
    }
    // Shown label k holds the option that was order[k]; an answer k means the original order[k].
    const answerMap: Record<string, string> = {};
    labels.forEach((shown, k) => {
      raw[fields[shown] as string] = record.raw[fields[order[k] as string] as string];
      answerMap[shown] = order[k] as string;
    });
    return { record: { ...record, raw }, answerMap };
  }
  for (const f of task.inputFields) {
    const v = record.raw[f];
    if (typeof v === 'string') raw[f] = change(v, p, rng);
    else if (Array.isArray(v)) raw[f] = v.map((w) => (typeof w === 'string' ? change(w, p, rng) : w));
  }
  return { record: { ...record, raw } };
}
