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
import { oneSidedTTest } from '../metrics/student-t.js';
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';
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
  const shards = orderShards(texts, o.shards ?? ORDER_DEFAULTS.shards);
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
  const context = `${o.task.name} ${o.split}:${ITEM_SEPARATOR}`;
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
    mean_difference: test.mean,
    statistic: test.t,
    df: test.df,
    p_value: test.p,
    alpha,
    verdict: test.p < alpha ? 'contaminated' : 'no evidence',
  };
}
