/**
 * The paper's feature-based RuMedNER baseline (upstream `code/linear_models/token_classifier.py`): a linear-chain
 * CRF over upstream's token features, trained with L-BFGS (OWL-QN) and elastic net, c1 = 0.1, c2 = 0.01, 200
 * iterations, all label transitions; Viterbi decoding.
 */
import type { Prediction } from '../metrics/item-stats.js';
import { type CrfModel, predictCrf, type TokenAttributes, trainCrf } from '../ml/crf.js';
import type { TaggingTask, TaskDefinition, TaskRecord } from '../tasks/types.js';
import type { BaselineModel, SerializedModel, TrainOptions } from './types.js';

export const CRF_OPTIONS = { c1: 0.1, c2: 0.01, maxIterations: 200 } as const;

// Python's str predicates, which upstream's features call.
const CASED = /[\p{Lu}\p{Ll}\p{Lt}]/u;
const UPPER = /[\p{Lu}\p{Lt}]/u;
const LOWER = /\p{Ll}/u;
const DIGITS = /^\p{Nd}+$/u;

/** str.isupper(): at least one cased character, and no lower-case one. */
function isUpper(s: string): boolean {
  return CASED.test(s) && !LOWER.test(s);
}

/** str.istitle(): upper-case letters only after uncased characters, lower-case ones only after cased ones. */
function isTitle(s: string): boolean {
  let cased = false;
  let previousCased = false;
  for (const ch of s) {
    if (UPPER.test(ch)) {
      if (previousCased) return false;
      previousCased = true;
      cased = true;
    } else if (LOWER.test(ch)) {
      if (!previousCased) return false;
      previousCased = true;
      cased = true;
    } else previousCased = false;
  }
  return cased;
}

function isDigit(s: string): boolean {
  return DIGITS.test(s);
}

/** The last n code points (Python's s[-n:]). */
function suffix(s: string, n: number): string {
  const cps = Array.from(s);
  return cps.slice(Math.max(0, cps.length - n)).join('');
}

/** Upstream's word2features for token i of a sentence. */
export function tokenFeatures(tokens: readonly string[], i: number): TokenAttributes {
  const word = tokens[i] as string;
  const f: TokenAttributes = {
    bias: 1,
    'word.lower()': word.toLowerCase(),
    'word[-3:]': suffix(word, 3),
    'word[-2:]': suffix(word, 2),
    'word.isupper()': isUpper(word),
    'word.istitle()': isTitle(word),
    'word.isdigit()': isDigit(word),
  };
  if (i > 0) {
    const prev = tokens[i - 1] as string;
    f['-1:word.lower()'] = prev.toLowerCase();
    f['-1:word.istitle()'] = isTitle(prev);
    f['-1:word.isupper()'] = isUpper(prev);
  } else f.BOS = true;
  if (i < tokens.length - 1) {
    const next = tokens[i + 1] as string;
    f['+1:word.lower()'] = next.toLowerCase();
    f['+1:word.istitle()'] = isTitle(next);
    f['+1:word.isupper()'] = isUpper(next);
  } else f.EOS = true;
  return f;
}

export function sentenceFeatures(tokens: readonly string[]): TokenAttributes[] {
  return tokens.map((_, i) => tokenFeatures(tokens, i));
}

class CrfTagger implements BaselineModel {
  readonly method = 'tfidf';
  readonly scoreKind = 'probability';
  constructor(
    readonly task: TaggingTask,
    private readonly model: CrfModel,
  ) {}

  predict(records: readonly TaskRecord[]): Prediction[] {
    return predictCrf(
      this.model,
      records.map((r) => sentenceFeatures(r.raw[this.task.tokensField] as string[])),
    );
  }

  serialize(): SerializedModel {
    return {
      meta: { kind: 'crf', crf: CRF_OPTIONS, labels: this.model.labels },
      arrays: { featOff: this.model.featOff, featLabel: this.model.featLabel, weights: this.model.weights },
      strings: { attributes: this.model.attributes },
    };
  }
}

export function trainCrfTagger(
  task: TaskDefinition,
  train: readonly TaskRecord[],
  options: TrainOptions,
): BaselineModel {
  if (task.kind !== 'tagging') throw new Error(`${task.name}: the CRF baseline is for tagging tasks`);
  const log = options.progress ?? (() => {});
  const t0 = performance.now();
  const model = trainCrf(
    train.map((r) => sentenceFeatures(r.raw[task.tokensField] as string[])),
    train.map((r) => r.gold as string[]),
    {
      ...CRF_OPTIONS,
      onIteration: (iter, objective, active) => {
        if (iter % 10 === 0 || iter === 1) {
          log(
            `${task.name}: CRF iteration ${iter}, objective ${objective.toFixed(2)}, ${active} non-zero weights (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
          );
        }
      },
    },
  );
  return new CrfTagger(task, model);
}

export function loadCrfTagger(task: TaskDefinition, saved: SerializedModel): BaselineModel {
  if (task.kind !== 'tagging') throw new Error(`${task.name}: a CRF model was saved for another task`);
  const meta = saved.meta as { labels: string[] };
  return new CrfTagger(task, {
    labels: meta.labels,
    attributes: saved.strings.attributes ?? [],
    featOff: saved.arrays.featOff as Int32Array,
    featLabel: saved.arrays.featLabel as Int32Array,
    weights: saved.arrays.weights as Float64Array,
  });
}
