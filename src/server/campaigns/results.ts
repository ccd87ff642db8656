/**
 * What a campaign's answers add up to, as pure functions: one answer per item by a stated rule, agreement between
 * annotators on the items they share (by task kind), and each annotator's accuracy where the gold is known.
 */
import {
  cohenKappa,
  fleissKappa,
  jaccard,
  krippendorffAlpha,
  observedAgreement,
} from '../../metrics/agreement.js';
import { countEntities, prf } from '../../metrics/seqeval.js';
import type { TaskDefinition } from '../../tasks/types.js';

export type AnswerValue = string | string[];

/** The answers one item received, by annotator (their place in the campaign's list), in that order. */
export interface ItemAnswers {
  id: string;
  answers: { annotator: number; value: AnswerValue }[];
}

export type Rule = 'first' | 'majority';

/**
 * The rule of a campaign: with an odd overlap above one, a label task takes the majority label (the first
 * annotator's where no label has more than half); otherwise the first annotator's answer, in the campaign's order.
 */
export const ruleOf = (task: TaskDefinition, overlap: number): Rule =>
  task.kind === 'classification' && overlap > 1 && overlap % 2 === 1 ? 'majority' : 'first';

export function combine(item: ItemAnswers, rule: Rule): AnswerValue | undefined {
  const [first] = item.answers;
  if (!first) return undefined;
  if (rule === 'first') return first.value;
  const counts = new Map<string, number>();
  for (const a of item.answers) counts.set(String(a.value), (counts.get(String(a.value)) ?? 0) + 1);
  const [label, n] = [...counts].sort((x, y) => y[1] - x[1])[0] as [string, number];
  return n * 2 > item.answers.length ? label : first.value;
}

export interface PairAgreement {
  a: number;
  b: number;
  /** Items both answered. */
  n: number;
  observed: number;
  /** Cohen's kappa (labels; first choices for ranked answers); null where it is not defined. */
  kappa: number | null;
  /** Ranked answers: mean Jaccard overlap of the two sets. */
  set_overlap?: number;
  /** Tagging: entity-level F1 of one annotator against the other (symmetric). */
  entity_f1?: number;
}

export interface Agreement {
  /** Items answered by at least two annotators. */
  items: number;
  observed: number | null;
  /** Fleiss' kappa over the items answered by the campaign's full overlap; null where too few. */
  fleiss_kappa: number | null;
  /** Krippendorff's alpha (nominal) over every item with two answers or more. */
  krippendorff_alpha: number | null;
  /** Ranked answers: mean Jaccard overlap of the answer sets over all pairs. */
  set_overlap?: number | null;
  /** Tagging: entity-level F1 between annotators, micro-averaged over all pairs. */
  entity_f1?: number | null;
  pairs: PairAgreement[];
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
const firstChoice = (v: AnswerValue | undefined): string | null =>
  v === undefined ? null : Array.isArray(v) ? (v[0] ?? null) : v;

/** Agreement on the items that more than one annotator answered. */
export function agreement(
  task: TaskDefinition,
  items: readonly ItemAnswers[],
  annotators: number,
  overlap: number,
): Agreement {
  const shared = items.filter((i) => i.answers.length >= 2);
  const pairs: PairAgreement[] = [];
  for (let a = 0; a < annotators; a++) {
    for (let b = a + 1; b < annotators; b++) {
      const both = shared.flatMap((i) => {
        const x = i.answers.find((v) => v.annotator === a)?.value;
        const y = i.answers.find((v) => v.annotator === b)?.value;
        return x !== undefined && y !== undefined ? [[x, y] as const] : [];
      });
      if (both.length === 0) continue;
      if (task.kind === 'tagging') {
        const c = { tp: 0, predicted: 0, gold: 0 };
        let same = 0;
        for (const [x, y] of both) {
          const e = countEntities(x as string[], y as string[]).total;
          c.tp += e.tp;
          c.predicted += e.predicted;
          c.gold += e.gold;
          if (JSON.stringify(x) === JSON.stringify(y)) same++;
        }
        pairs.push({ a, b, n: both.length, observed: same / both.length, kappa: null, entity_f1: prf(c).f1 });
        continue;
      }
      const k = cohenKappa(
        both.map(([x]) => firstChoice(x)),
        both.map(([, y]) => firstChoice(y)),
      );
      pairs.push({
        a,
        b,
        n: both.length,
        observed: k.observed,
        kappa: finite(k.kappa),
        ...(task.kind === 'ranking'
          ? {
              set_overlap:
                both.reduce((s, [x, y]) => s + jaccard(x as string[], y as string[]), 0) / both.length,
            }
          : {}),
      });
    }
  }
  if (task.kind === 'tagging') {
    const totals = pairs.reduce(
      (s, p) => ({ n: s.n + p.n, same: s.same + p.observed * p.n, f1n: s.f1n + (p.entity_f1 ?? 0) * p.n }),
      { n: 0, same: 0, f1n: 0 },
    );
    return {
      items: shared.length,
      observed: totals.n ? totals.same / totals.n : null,
      fleiss_kappa: null,
      krippendorff_alpha: null,
      entity_f1: totals.n ? totals.f1n / totals.n : null,
      pairs,
    };
  }
  const units = shared.map((i) => i.answers.map((a) => firstChoice(a.value)));
  const full = shared.filter((i) => i.answers.length === overlap);
  let fleiss: number | null = null;
  if (overlap >= 2 && full.length > 0) {
    const labels = [
      ...new Set(full.flatMap((i) => i.answers.map((a) => firstChoice(a.value) as string))),
    ].sort();
    fleiss = finite(
      fleissKappa(
        full.map((i) => labels.map((l) => i.answers.filter((a) => firstChoice(a.value) === l).length)),
      ),
    );
  }
  const setPairs = pairs.filter((p) => p.set_overlap !== undefined);
  return {
    items: shared.length,
    observed: finite(observedAgreement(units).agreement),
    fleiss_kappa: fleiss,
    krippendorff_alpha: finite(krippendorffAlpha(units)),
    ...(task.kind === 'ranking'
      ? {
          set_overlap: setPairs.length
            ? setPairs.reduce((s, p) => s + (p.set_overlap as number) * p.n, 0) /
              setPairs.reduce((s, p) => s + p.n, 0)
            : null,
        }
      : {}),
    pairs,
  };
}

export interface AnnotatorScore {
  annotator: number;
  answered: number;
  /** Percent: the (first) answer right; token accuracy for tagging. */
  accuracy: number | null;
  /** Ranking: gold among the answers; tagging: entity-level F1. */
  hit_at_3?: number | null;
  entity_f1?: number | null;
}

/** Each annotator against the gold (public test sets only: closed tests publish no per-annotator figures). */
export function annotatorScores(
  task: TaskDefinition,
  items: readonly ItemAnswers[],
  gold: ReadonlyMap<string, string | readonly string[]>,
  annotators: number,
): AnnotatorScore[] {
  return Array.from({ length: annotators }, (_, a) => {
    const mine = items.flatMap((i) => {
      const v = i.answers.find((x) => x.annotator === a)?.value;
      const g = gold.get(i.id);
      return v !== undefined && g !== undefined ? [[v, g] as const] : [];
    });
    if (mine.length === 0) return { annotator: a, answered: 0, accuracy: null };
    if (task.kind === 'tagging') {
      let tokens = 0;
      let right = 0;
      const c = { tp: 0, predicted: 0, gold: 0 };
      for (const [v, g] of mine) {
        (g as string[]).forEach((t, k) => {
          tokens++;
          if ((v as string[])[k] === t) right++;
        });
        const e = countEntities(g as string[], v as string[]).total;
        c.tp += e.tp;
        c.predicted += e.predicted;
        c.gold += e.gold;
      }
      return {
        annotator: a,
        answered: mine.length,
        accuracy: (100 * right) / tokens,
        entity_f1: 100 * prf(c).f1,
      };
    }
    const acc = (100 * mine.filter(([v, g]) => firstChoice(v) === g).length) / mine.length;
    if (task.kind === 'ranking') {
      const hits = mine.filter(([v, g]) => (v as string[]).includes(g as string)).length;
      return { annotator: a, answered: mine.length, accuracy: acc, hit_at_3: (100 * hits) / mine.length };
    }
    return { annotator: a, answered: mine.length, accuracy: acc };
  });
}
