/**
 * Has a model seen a RuMedBench split? The **order** probe: the sharded likelihood comparison test of Oren et al.,
 * "Proving Test Set Contamination in Black Box Language Models" (2023). A model that trained on a file has learnt
 * which item follows which, so it finds the items likelier in the file's published order than in any other; a model
 * that never saw the file has no reason to prefer that order. The split's items (as the prompts show them, one after
 * another) are cut into shards of consecutive items; in each shard the log-likelihood of the published order is
 * compared with the mean over random permutations of the same items; a one-sided t-test over the shards' differences
 * gives the p-value (small: the published order is likelier than chance explains). It needs log-probabilities of a
 * text: vLLM's /v1/completions with echo, or a GGUF model in process.
 */
import pLimit from 'p-limit';
import { RumedbenchError } from '../errors.js';
import { createRng } from '../metrics/rng.js';
import { rougeL } from '../metrics/rouge.js';
import { oneSidedTTest } from '../metrics/student-t.js';
import { isChoiceTask } from '../tasks/registry.js';
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';
import { buildMessages } from './prompt.js';
import type { Provider } from './provider.js';

/** Between items in a shard's text. */
export const ITEM_SEPARATOR = '\n\n';

/** Defaults: shards of at least this many items, at most this many shards, permutations per shard. */
export const ORDER_DEFAULTS = { shards: 20, minShardSize: 4, permutations: 25 } as const;

export interface OrderProbeOptions {
  provider: Provider;
  task: TaskDefinition;
  /** The split's records in the file's order. */
  records: readonly TaskRecord[];
  split: string;
  shards?: number;
  permutations?: number;
  seed?: number;
  /** Shards asked at once. */
  concurrency?: number;
  alpha?: number;
}

export interface OrderProbeResult {
  probe: 'order';
  n: number;
  shards: number;
  shard_size: number;
  permutations: number;
  /** The model's context in tokens, where the engine said: shards were made small enough to fit it. */
  context_window: number | null;
  /** Mean over shards of log p(published order) − mean log p(permuted), in nats. */
  mean_difference: number;
  statistic: number;
  df: number;
  p_value: number;
  alpha: number;
  verdict: 'contaminated' | 'no evidence';
}

/** An item as the probe writes it: its fields as the task's prompt shows them, without the instruction. */
export const probeText = (task: TaskDefinition, record: TaskRecord): string => task.prompt.render(record.raw);

/** The shards: consecutive runs of items, each as its items' texts; a remainder too short for a shard is left out. */
export function orderShards(texts: readonly string[], shards: number): string[][] {
  const count = Math.max(1, Math.min(shards, Math.floor(texts.length / ORDER_DEFAULTS.minShardSize)));
  const size = Math.floor(texts.length / count);
  return Array.from({ length: count }, (_, k) => texts.slice(k * size, (k + 1) * size));
}

/** Room left in a sequence for the token the completion adds after an echoed prompt, and a BOS. */
const WINDOW_MARGIN = 8;

/**
 * The shards, cut finer until the longest (with its context) fits the model's context window, where the engine says
 * what that is: a shard that does not fit would be cut short by the engine, or refused.
 */
async function fitShards(
  provider: Provider,
  context: string,
  texts: readonly string[],
  wanted: number,
  task: string,
): Promise<{ shards: string[][]; window?: number }> {
  let shards = orderShards(texts, wanted);
  const window = await provider.contextTokens?.();
  if (!window || !provider.countTokens) return { shards };
  const count = provider.countTokens.bind(provider);
  // Before cutting shards finer and finer (each round asks the tokenizer of every shard): the smallest shard the probe
  // takes, made of the longest items, must fit at all. A window too small for it is refused after a few calls.
  const longestItems = [...texts].sort((a, b) => b.length - a.length).slice(0, ORDER_DEFAULTS.minShardSize);
  const smallest = await count(context + longestItems.join(ITEM_SEPARATOR));
  if (smallest + WINDOW_MARGIN > window)
    throw new RumedbenchError(
      'LOGLIK_UNSUPPORTED',
      `${task}: the order probe's smallest shard (${ORDER_DEFAULTS.minShardSize} items) takes up to ${smallest} tokens, over the model's context of ${window}: this model's context is too small for the probe`,
    );
  for (;;) {
    const lengths = await Promise.all(shards.map((s) => count(context + s.join(ITEM_SEPARATOR))));
    const longest = Math.max(...lengths);
    if (longest + WINDOW_MARGIN <= window) return { shards, window };
    const more = Math.max(shards.length + 1, Math.ceil((shards.length * longest) / (window - WINDOW_MARGIN)));
    const next = orderShards(texts, more);
    if (next.length === shards.length)
      throw new RumedbenchError(
        'LOGLIK_UNSUPPORTED',
        `${task}: shards of ${shards[0]?.length ?? 0} items (the fewest the order probe takes) make ${longest} tokens, over the model's context of ${window}`,
      );
    shards = next;
  }
}

function shuffled<T>(items: readonly T[], rng: ReturnType<typeof createRng>): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

export async function orderProbe(o: OrderProbeOptions): Promise<OrderProbeResult> {
  if (!o.provider.loglik)
    throw new RumedbenchError(
      'LOGLIK_UNSUPPORTED',
      'the order probe needs log-probabilities of a text: a GGUF model, or vLLM',
    );
  const texts = o.records.map((r) => probeText(o.task, r));
  const context = `${o.task.name} ${o.split}:${ITEM_SEPARATOR}`;
  const fitted = await fitShards(o.provider, context, texts, o.shards ?? ORDER_DEFAULTS.shards, o.task.name);
  const shards = fitted.shards;
  if (shards.length < 2 || (shards[0]?.length ?? 0) < 2)
    throw new RumedbenchError(
      'NOTHING_SCORED',
      `${o.task.name} ${o.split}: ${texts.length} item(s) make fewer than two shards of two; the order probe needs more`,
    );
  const permutations = o.permutations ?? ORDER_DEFAULTS.permutations;
  const rng = createRng(o.seed ?? 0);
  // The permutations are drawn up front, in shard order, so that the seed alone fixes them.
  const asked = shards.map((items) => [
    items.join(ITEM_SEPARATOR),
    ...Array.from({ length: permutations }, () => shuffled(items, rng).join(ITEM_SEPARATOR)),
  ]);
  const limit = pLimit(o.concurrency ?? 4);
  const loglik = o.provider.loglik.bind(o.provider);
  const differences = await Promise.all(
    asked.map((continuations, k) =>
      limit(async () => {
        const r = await loglik({ context, continuations });
        if (r.logprobs.some((x) => x === null || !Number.isFinite(x)))
          throw new RumedbenchError(
            'NOTHING_SCORED',
            `${o.task.name} shard ${k + 1}: the engine could not score every ordering`,
          );
        const [published, ...others] = r.logprobs as number[];
        return (published as number) - others.reduce((a, b) => a + b, 0) / others.length;
      }),
    ),
  );
  const test = oneSidedTTest(differences);
  const alpha = o.alpha ?? 0.01;
  return {
    probe: 'order',
    n: texts.length,
    shards: shards.length,
    shard_size: shards[0]?.length ?? 0,
    permutations,
    context_window: fitted.window ?? null,
    mean_difference: test.mean,
    statistic: test.t,
    df: test.df,
    p_value: test.p,
    alpha,
    verdict: test.p < alpha ? 'contaminated' : 'no evidence',
  };
}

/**
 * The **guided** probe: guided against general instruction, after Golchin & Surdeanu, "Time Travel in LLMs: Tracing
 * Data Contamination in Large Language Models" (2023). The first half of an item (its words) is given twice: once
 * naming the benchmark, the task and the split and asking for the rest of the item as it appears there (guided),
 * once asking only to continue the text (general). A model that has seen the split reproduces the rest under the
 * guided instruction far better than under the general one. Overlap with the true rest is ROUGE-L; near-verbatim is
 * ROUGE-L ≥ 0.75; the p-value is a one-sided paired bootstrap of guided − general over the items.
 */
export interface GuidedProbeOptions {
  provider: Provider;
  task: TaskDefinition;
  records: readonly TaskRecord[];
  split: string;
  /** Items probed (the first ones of the split; default 100). */
  items?: number;
  seed?: number;
  resamples?: number;
  concurrency?: number;
  alpha?: number;
  maxTokens?: number;
}

export interface GuidedProbeResult {
  probe: 'guided';
  n: number;
  rouge_guided: number;
  rouge_general: number;
  /** Mean over items of ROUGE-L guided − general, with its 95% bootstrap interval. */
  difference: number;
  ci: [number, number];
  near_verbatim_guided: number;
  near_verbatim_general: number;
  p_value: number;
  alpha: number;
  verdict: 'contaminated' | 'no evidence';
  /** The items most nearly reproduced under the guided instruction (public splits only). */
  most_verbatim: { id: string; rouge: number }[];
}

export const NEAR_VERBATIM = 0.75;

/** An item's text cut in two at the middle word: what the model is given, and what it should write. */
export function splitItem(text: string): { first: string; rest: string } {
  const words = text.split(/(\s+)/);
  const cut = Math.ceil(words.length / 4) * 2;
  return { first: words.slice(0, cut).join('').trimEnd(), rest: words.slice(cut).join('').trim() };
}

export const guidedInstruction = (task: TaskDefinition, split: string): string =>
  `Ниже начало примера из набора данных RuMedBench, задача ${task.name}, раздел ${split}. ` +
  'Продолжи пример точно так, как он записан в наборе данных, без пояснений.';
export const GENERAL_INSTRUCTION = 'Продолжи текст, без пояснений.';

export async function guidedProbe(o: GuidedProbeOptions): Promise<GuidedProbeResult> {
  const records = o.records.slice(0, o.items ?? 100);
  const parts = records
    .map((r) => ({ id: r.id, ...splitItem(probeText(o.task, r)) }))
    .filter((x) => x.rest !== '');
  if (parts.length < 2)
    throw new RumedbenchError('NOTHING_SCORED', `${o.task.name} ${o.split}: fewer than two items to probe`);
  const limit = pLimit(o.concurrency ?? 4);
  const params = { temperature: 0, maxTokens: o.maxTokens ?? 256, seed: o.seed ?? 0 };
  const ask = (instruction: string, first: string) =>
    limit(
      async () =>
        (await o.provider.chat([{ role: 'user', content: `${instruction}\n\n${first}` }], params)).text,
    );
  const guided = guidedInstruction(o.task, o.split);
  const scores = await Promise.all(
    parts.map(async (p) => {
      const [g, n] = await Promise.all([ask(guided, p.first), ask(GENERAL_INSTRUCTION, p.first)]);
      return { id: p.id, guided: rougeL(g, p.rest), general: rougeL(n, p.rest) };
    }),
  );
  const d = scores.map((s) => s.guided - s.general);
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rng = createRng(o.seed ?? 0);
  const resamples = o.resamples ?? 2000;
  const means: number[] = [];
  for (let b = 0; b < resamples; b++) {
    let s = 0;
    for (let i = 0; i < d.length; i++) s += d[rng.int(d.length)] as number;
    means.push(s / d.length);
  }
  means.sort((a, b) => a - b);
  const p = (means.filter((m) => m <= 0).length + 1) / (resamples + 1);
  const alpha = o.alpha ?? 0.01;
  return {
    probe: 'guided',
    n: scores.length,
    rouge_guided: mean(scores.map((s) => s.guided)),
    rouge_general: mean(scores.map((s) => s.general)),
    difference: mean(d),
    ci: [
      means[Math.floor(0.025 * resamples)] as number,
      means[Math.min(resamples - 1, Math.ceil(0.975 * resamples) - 1)] as number,
    ],
    near_verbatim_guided: scores.filter((s) => s.guided >= NEAR_VERBATIM).length / scores.length,
    near_verbatim_general: scores.filter((s) => s.general >= NEAR_VERBATIM).length / scores.length,
    p_value: p,
    alpha,
    verdict: p < alpha ? 'contaminated' : 'no evidence',
    most_verbatim:
      o.split === 'private_test'
        ? []
        : [...scores]
            .sort((a, b) => b.guided - a.guided)
            .slice(0, 5)
            .map((s) => ({ id: s.id, rouge: s.guided })),
  };
}

/**
 * The **options** probe: TS-Guessing of Deng et al., "Investigating Data Contamination in Modern Benchmarks for Large
 * Language Models" (2023). One wrong option of a multiple-choice item is hidden, and the model, told which
 * benchmark the item comes from, is asked to write it. A wrong option cannot be derived from medical knowledge,
 * only remembered, so exact matches are evidence of having seen the item. Chance is what the same guesses match when
 * paired with other items' hidden options (a permutation of the items); the p-value is the share of such
 * permutations whose exact-match count is at least the observed one (one-sided, with the +1 of a permutation test).
 * Where a split has no answers (RuMedTest's private_test), the option hidden is one the model itself does not
 * choose when asked the question first: it cannot derive that option from what it knows as the answer.
 */
export interface OptionsProbeOptions {
  provider: Provider;
  task: TaskDefinition;
  records: readonly TaskRecord[];
  split: string;
  /** Items probed (the first ones of the split with a gold answer; default 100). */
  items?: number;
  seed?: number;
  permutations?: number;
  concurrency?: number;
  alpha?: number;
}

export interface OptionsProbeResult {
  probe: 'options';
  n: number;
  /** Share of items whose hidden option the model wrote exactly (after normalising case, ё and punctuation). */
  exact_match: number;
  /** The mean exact-match share of the guesses against other items' hidden options: chance wording. */
  chance: number;
  /** Mean ROUGE-L of the guess with the hidden option. */
  rouge: number;
  permutations: number;
  p_value: number;
  alpha: number;
  verdict: 'contaminated' | 'no evidence';
  most_verbatim: { id: string; option: string }[];
  /** Which option counts as the answer, never hidden: the gold's, or (without gold) the model's own choice. */
  answer_from: 'gold' | 'model';
  /** Items left out: without gold, those whose own answer the model did not give readably. */
  unanswered: number;
}

/** Two option texts are the same when they differ only in case, ё/е, spaces and punctuation. */
export const normaliseOption = (s: string): string =>
  s
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(/[\s\p{P}]+/gu, ' ')
    .trim();

export const MASK = '[MASK]';

/** The question with one option hidden, and the instruction naming the benchmark, as Deng et al. word theirs. */
export function optionsPrompt(
  task: TaskDefinition,
  record: TaskRecord,
  hidden: string,
  split: string,
): string {
  const raw = { ...record.raw };
  if (!isChoiceTask(task)) throw new Error(`${task.name}: not a multiple-choice task`);
  raw[task.choices.optionFields[hidden] as string] = MASK;
  return (
    `Ниже вопрос из набора данных RuMedBench, задача ${task.name}, раздел ${split}. Один неверный вариант ответа скрыт ` +
    `и заменён на ${MASK} (вариант ${hidden}). Напиши только текст скрытого варианта, точно как в наборе данных, ` +
    `без номера и пояснений.\n\n${task.prompt.render(raw)}`
  );
}

/** Exact matches of guesses with truths, against the same guesses paired with permuted truths. */
export function exactMatchTest(
  guesses: readonly string[],
  truths: readonly string[],
  permutations: number,
  seed: number,
): { exact_match: number; chance: number; p_value: number } {
  const g = guesses.map(normaliseOption);
  const t = truths.map(normaliseOption);
  const matches = (order: readonly string[]) =>
    g.reduce((n, x, i) => n + (x !== '' && x === order[i] ? 1 : 0), 0);
  const observed = matches(t);
  const rng = createRng(seed);
  let atLeast = 0;
  let total = 0;
  for (let k = 0; k < permutations; k++) {
    const m = matches(shuffled(t, rng));
    total += m;
    if (m >= observed) atLeast++;
  }
  return {
    exact_match: observed / g.length,
    chance: total / permutations / g.length,
    p_value: (atLeast + 1) / (permutations + 1),
  };
}

export async function optionsProbe(o: OptionsProbeOptions): Promise<OptionsProbeResult> {
  const task = o.task;
  if (!isChoiceTask(task))
    throw new RumedbenchError('USAGE', `${task.name}: the options probe needs multiple-choice items`);
  const labels = Object.keys(task.choices.optionFields);
  const rng = createRng(o.seed ?? 0);
  const limit = pLimit(o.concurrency ?? 4);
  const params = { temperature: 0, maxTokens: 64, seed: o.seed ?? 0 };
  const records = o.records.slice(0, o.items ?? 100);
  const withGold = records.every((r) => r.gold !== undefined);
  // The answer, never hidden: the gold's, or the model's own when the split has none.
  const answers = withGold
    ? records.map((r) => String(r.gold))
    : await Promise.all(
        records.map((r) =>
          limit(async () => {
            const messages = buildMessages(task, r, [], { shots: 0, seed: o.seed ?? 0, context: {} });
            const reply = await o.provider.chat(messages, { ...params, maxTokens: 256 });
            const read = task.prompt.parse(reply.text, r.raw, {});
            return read.status === 'parsed' ? String(read.answer) : undefined;
          }),
        ),
      );
  // A wrong option (or one the model does not choose) is hidden, chosen at random (seeded).
  const items = records
    .map((r, i) => ({ r, answer: answers[i] }))
    .filter((x): x is { r: TaskRecord; answer: string } => x.answer !== undefined)
    .map(({ r, answer }) => {
      const wrong = labels.filter((l) => l !== answer);
      const hidden = wrong[rng.int(wrong.length)] as string;
      return { record: r, hidden, truth: String(r.raw[task.choices.optionFields[hidden] as string] ?? '') };
    })
    .filter((x) => x.truth.trim() !== '');
  if (items.length < 2)
    throw new RumedbenchError(
      'NOTHING_SCORED',
      `${task.name} ${o.split}: fewer than two items to probe (each needs its answer known, from the gold or the model)`,
    );
  const guesses = await Promise.all(
    items.map((x) =>
      limit(async () => {
        const text = (
          await o.provider.chat(
            [{ role: 'user', content: optionsPrompt(task, x.record, x.hidden, o.split) }],
            params,
          )
        ).text;
        // The first line, without a leading option number or quotes: what a model writes as "the option".
        return (text.trim().split('\n')[0] ?? '').replace(/^\s*(\d+[.)]\s*)?["«]?|["»]?\s*$/g, '');
      }),
    ),
  );
  const truths = items.map((x) => x.truth);
  const permutations = o.permutations ?? 1000;
  const test = exactMatchTest(guesses, truths, permutations, (o.seed ?? 0) + 1);
  const alpha = o.alpha ?? 0.01;
  const rouge = guesses.reduce((s, g, i) => s + rougeL(g, truths[i] as string), 0) / guesses.length;
  return {
    probe: 'options',
    n: items.length,
    ...test,
    rouge,
    permutations,
    alpha,
    verdict: test.p_value < alpha ? 'contaminated' : 'no evidence',
    answer_from: withGold ? 'gold' : 'model',
    unanswered: answers.filter((a) => a === undefined).length,
    most_verbatim:
      o.split === 'private_test'
        ? []
        : items
            .filter((x, i) => normaliseOption(guesses[i] as string) === normaliseOption(x.truth))
            .slice(0, 5)
            .map((x) => ({ id: x.record.id, option: x.hidden })),
  };
}
