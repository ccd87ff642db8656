/**
 * `plan check`'s look at a cell before anything is sent: its requests, prompt tokens (≈ characters / 4), cost bounds
 * at its prices, the tasks its settings leave out, and per task the difference two systems must differ by to be told
 * apart on its items.
 */
import { planLlmSpec } from '../engine/llm.js';
import { batchSettingsOf } from '../engine/spec.js';
import { RumedbenchError } from '../errors.js';
import { plannedMde } from '../metrics/ranking.js';
import type { Cell } from './cells.js';

export interface CellCheck {
  cell: string;
  provider: string;
  axes: Record<string, unknown>;
  requests: number | null;
  prompt_tokens_estimate: number | null;
  cost_estimate: { min: number; max: number } | null;
  /** Tasks a cell's settings leave out, with why (a missing train file for shots, no such formulation, …). */
  skipped?: Record<string, string>;
  /** Per task: its items, and the difference two systems need to be told apart (see `DISCORDANCE`). */
  mde?: Record<string, { n: number; clusters: boolean; at_20: number; at_40: number }>;
  note?: string;
}

/** Shares of items two systems answer differently, for the planned detectable differences: a close pair, a far one. */
const DISCORDANCE = [0.2, 0.4] as const;

/** What a cell will ask: its requests and, for LLM cells, prompt tokens (≈ characters / 4) and the cost bounds. */
export async function checkCell(cell: Cell): Promise<CellCheck> {
  const row: CellCheck = {
    cell: cell.id,
    provider: cell.provider,
    axes: cell.axes,
    requests: null,
    prompt_tokens_estimate: null,
    cost_estimate: null,
  };
  if (cell.provider === 'encoder') return { ...row, note: 'encoder: no requests' };
  if (cell.spec.kind !== 'llm') return { ...row, note: 'not an LLM cell: no requests' };
  const f = cell.spec;
  try {
    const plan = await planLlmSpec(f);
    const chars = plan.requests.reduce(
      (sum, j) =>
        sum +
        (j.kind === 'chat'
          ? j.messages.reduce((a, m) => a + m.content.length, 0)
          : j.item.context.length + j.item.candidates.reduce((a, c) => a + c.text.length, 0)),
      0,
    );
    const prompt = Math.round(chars / 4);
    const items = new Map<string, { ids: Set<string>; clusters: boolean }>();
    for (const j of plan.requests) {
      const t = items.get(j.task.name) ?? { ids: new Set<string>(), clusters: j.task.cluster !== undefined };
      t.ids.add(j.record.id);
      items.set(j.task.name, t);
    }
    const mde = Object.fromEntries(
      [...items].map(([task, t]) => [
        task,
        {
          n: t.ids.size,
          clusters: t.clusters,
          at_20: plannedMde(t.ids.size, DISCORDANCE[0]),
          at_40: plannedMde(t.ids.size, DISCORDANCE[1]),
        },
      ]),
    );
    const generated = plan.requests.filter((j) => j.kind === 'chat').length * f.max_tokens;
    const keep = 1 - (batchSettingsOf(f)?.discount ?? 0);
    const skipped = Object.entries(plan.skipped);
    return {
      ...row,
      requests: plan.requests.length,
      mde,
      ...(skipped.length > 0
        ? {
            skipped: plan.skipped,
            note: skipped.map(([task, why]) => `${task} left out: ${why}`).join('; '),
          }
        : {}),
      prompt_tokens_estimate: prompt,
      ...(f.prices
        ? {
            // A batch cell pays the batch price: the discount off both bounds. The prompts at the cheapest of their
            // prices (all read from a cache) for the least, at the dearest (all written to one) for the most.
            cost_estimate: {
              min: (keep * prompt * Math.min(f.prices.prompt, f.prices.cached, f.prices.cache_write)) / 1e6,
              max:
                (keep *
                  (prompt * Math.max(f.prices.prompt, f.prices.cached, f.prices.cache_write) +
                    generated * f.prices.completion)) /
                1e6,
            },
          }
        : {}),
    };
  } catch (e) {
    if (e instanceof RumedbenchError) return { ...row, note: e.message };
    throw e;
  }
}

/** The cells' cost bounds summed, over the cells that have prices; null where none has. */
export function totalCost(checks: readonly CellCheck[]): { min: number; max: number; cells: number } | null {
  const priced = checks.filter((c) => c.cost_estimate !== null);
  if (priced.length === 0) return null;
  return {
    min: priced.reduce((s, c) => s + (c.cost_estimate?.min ?? 0), 0),
    max: priced.reduce((s, c) => s + (c.cost_estimate?.max ?? 0), 0),
    cells: priced.length,
  };
}
