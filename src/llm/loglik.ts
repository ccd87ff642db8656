/**
 * Scoring by log-likelihood, as lm-evaluation-harness does it: each candidate answer is a continuation of the
 * task's prompt, scored by the sum of its tokens' log-probabilities given the prompt. Pure parts live here: building
 * the prompt and candidates from the task's definition, splitting tokens between context and continuation, the
 * token trie that lets candidates with a shared prefix share their evaluation, and choosing the answer.
 */
import type { Prediction } from '../metrics/item-stats.js';
import { loglikContext } from '../tasks/loglik-prompt.js';
import type { PromptContext, TaskDefinition, TaskRecord } from '../tasks/types.js';
import type { Usage } from './usage.js';

export interface LoglikRequest {
  context: string;
  continuations: string[];
}

export interface LoglikResult {
  /** Per continuation: the sum of its tokens' log-probabilities, or null where the engine could not score it. */
  logprobs: (number | null)[];
  /** Per continuation: how many tokens it has. */
  tokens: number[];
  /** Positions the engine evaluated for this request (the prompt's and the candidates'). */
  positions?: number;
  /** The tokens the server says it processed (what it bills), where it says. */
  usage?: Usage;
}

export interface LoglikItem {
  context: string;
  candidates: { label: string; text: string }[];
}

/** lm-eval's rule: whitespace at the end of the context belongs to the continuation (" да", not "да" after "Ответ: "). */
export function moveTrailingWhitespace(context: string, continuation: string): [string, string] {
  const m = /\s+$/u.exec(context);
  if (!m) return [context, continuation];
  return [context.slice(0, m.index), m[0] + continuation];
}

/**
 * Splits tokens by count, never by text: the continuation's tokens are those of `tokenize(context + continuation)`
 * past the length of `tokenize(context)`. (Byte-level tokens can split a Cyrillic letter, and a tokenizer can merge
 * across the boundary, so a split by characters would be wrong.)
 */
export function splitByCount(
  whole: readonly number[],
  contextLength: number,
): { context: number[]; continuation: number[] } {
  return { context: whole.slice(0, contextLength), continuation: whole.slice(contextLength) };
}

/** The prompt of an item for scoring, with worked examples before it (`shots`), and its candidates. */
export function loglikItem(
  task: TaskDefinition,
  record: TaskRecord,
  examples: readonly TaskRecord[],
  ctx: PromptContext,
  options: { labelWords?: boolean } = {},
): LoglikItem {
  const spec = task.prompt.loglik;
  if (!spec) throw new Error(`${task.name} is not scored by log-likelihood`);
  const candidates = spec.candidates(record.raw, ctx, options);
  const shot = (r: TaskRecord): string => {
    const gold = candidates.find((c) => c.label === r.gold)?.text ?? ` ${String(r.gold)}`;
    return `${task.prompt.render(r.raw)}\nОтвет:${gold}\n\n`;
  };
  return {
    context: loglikContext(task, task.prompt.render(record.raw), examples.map(shot).join('')),
    candidates,
  };
}

/** A trie of token sequences: candidates that share a prefix share its nodes. */
export interface TrieNode {
  token: number;
  children: TrieNode[];
  /** The candidates that end here. */
  ends: number[];
}

export function buildTrie(sequences: readonly (readonly number[])[]): TrieNode[] {
  const roots: TrieNode[] = [];
  sequences.forEach((seq, i) => {
    let level = roots;
    let node: TrieNode | undefined;
    for (const token of seq) {
      node = level.find((n) => n.token === token);
      if (!node) {
        node = { token, children: [], ends: [] };
        level.push(node);
      }
      level = node.children;
    }
    node?.ends.push(i);
  });
  return roots;
}

/** Positions a trie walk evaluates past the context: every node that has children (leaves are read off their parent). */
export function trieInnerNodes(roots: readonly TrieNode[]): number {
  let n = 0;
  const walk = (nodes: readonly TrieNode[]) => {
    for (const x of nodes) {
      if (x.children.length > 0) {
        n++;
        walk(x.children);
      }
    }
  };
  walk(roots);
  return n;
}

export type Normalization = 'sum' | 'char' | 'byte';

/** A candidate's score under a normalization: the sum, or the sum per character or per UTF-8 byte of its text. */
export function normalized(logprob: number, text: string, by: Normalization): number {
  if (by === 'sum') return logprob;
  const length = by === 'char' ? [...text].length : Buffer.byteLength(text, 'utf8');
  return logprob / Math.max(1, length);
}

/**
 * The answer from the scores: the best candidate (classification), or the best three (ranking). Unscored candidates
 * take no part; with none scored there is no answer.
 */
export function chooseAnswer(
  task: TaskDefinition,
  candidates: readonly { label: string; text: string }[],
  logprobs: readonly (number | null)[],
  by: Normalization,
): Prediction | null {
  const scored = candidates
    .map((c, i) => ({
      label: c.label,
      score:
        logprobs[i] === null || logprobs[i] === undefined
          ? null
          : normalized(logprobs[i] as number, c.text, by),
      i,
    }))
    .filter(
      (c): c is { label: string; score: number; i: number } => c.score !== null && Number.isFinite(c.score),
    )
    .sort((a, b) => b.score - a.score || a.i - b.i);
  if (scored.length === 0) return null;
  if (task.kind === 'ranking') return scored.slice(0, 3).map((c) => c.label);
  return (scored[0] as { label: string }).label;
}
