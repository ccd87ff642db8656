/**
 * The engine's one loop (`sendRun`) through its port: what a store says (its slot, its fence, its money, its words) is
 * what every door gets, a run folder's and the queue's alike (test/e2e/budget-doors.test.ts attacks both doors).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fixtureLlmSpec, noBatches } from '../../test/helpers/engine-stores.js';
import { memoryMoney } from '../llm/budget.js';
import type { JournalEntry } from '../llm/journal.js';
import type { Provider } from '../llm/provider.js';
import type { LlmRequest } from '../llm/requests.js';
import { planLlmSpec } from './llm.js';
import { type RunStore, sendRun } from './loop.js';

const PRICES = { prompt: 10, completion: 30 };

async function requests(): Promise<readonly LlmRequest[]> {
  return (await planLlmSpec(fixtureLlmSpec())).requests;
}

/** A server that answers "да" with `tokens` prompt tokens, and counts what it was asked. */
function provider(tokens: number) {
  const asked: string[] = [];
  const p: Provider = {
    describe: () => ({ provider: 'fake', model: 'fake-m' }),
    async chat(messages) {
      asked.push(String(messages.at(-1)?.content));
      return { text: 'да', usage: { promptTokens: tokens, completionTokens: 1 } };
    },
  };
  return { p, asked };
}

/** A store in memory, saying what it was asked in `said`. */
function store(said: string[], o: { ceiling?: number; spent?: number; fence?: () => Promise<void> } = {}) {
  const kept = new Map<string, JournalEntry>();
  const s: RunStore = {
    answers: { append: (e) => void kept.set(e.key, e) },
    batches: noBatches(),
    money: memoryMoney(o.spent ?? 0),
    kept: async (keys) => keys.map((k) => kept.get(k)),
    async left(pending) {
      const ceiling = o.ceiling ?? 1e-6;
      return {
        ceilings: new Map(pending.map((j) => [j.key, ceiling])),
        usd: ceiling * pending.length,
        said: `up to ${ceiling * pending.length} for ${pending.length} requests`,
      };
    },
    scratch: '/nonexistent',
    fence: async () => {
      said.push('fence');
      await o.fence?.();
    },
    slot: async (send) => {
      said.push('slot');
      return send();
    },
    words: {
      flag: 'max_cost',
      what: 'cell c',
      spentBy: 'its workers have spent',
      here: "this worker's",
      rest: 'by its other workers',
      advice: 'Raise it.',
      stopped: async (offline) => `Go on ${offline ? 'offline' : 'online'}.`,
    },
  };
  return { s, kept };
}

/** The loop asked to send every request of `all` online, through `s`, from `p`. */
const online = (
  s: RunStore,
  p: Provider,
  all: readonly LlmRequest[],
  budget: { maxCost: number; prices: typeof PRICES } | Record<string, never> = {},
) =>
  sendRun({
    store: s,
    provider: p,
    all,
    pending: all,
    params: { temperature: 0, maxTokens: 8 },
    concurrency: 1,
    ...budget,
    way: { kind: 'online' },
    log: { info() {}, warn() {}, error() {} } as never,
  });

describe('the one loop of an LLM run (sendRun) through its store', () => {
  it('sends every request in the store slot, past its fence, and hands each answer to the store', async () => {
    const all = await requests();
    const { p, asked } = provider(3);
    const said: string[] = [];
    const { s, kept } = store(said);
    await online(s, p, all);
    expect(asked).toHaveLength(all.length);
    expect(said).toEqual(all.flatMap(() => ['slot', 'fence']));
    expect([...kept.keys()]).toEqual(all.map((j) => j.key));
  });

  it('sends nothing once the fence refuses (a job no longer its worker own)', async () => {
    const all = await requests();
    const { p, asked } = provider(3);
    const said: string[] = [];
    let n = 0;
    const { s, kept } = store(said, {
      fence: async () => {
        if (++n > 2) throw new Error('job stopped before its request went out');
      },
    });
    await online(s, p, all);
    expect(asked).toHaveLength(2);
    expect([...kept.values()].filter((e) => e.status === 'ok')).toHaveLength(2);
  });

  it('refuses before sending, in the store words, what the spent money and what is left would pass', async () => {
    const all = await requests();
    const { p, asked } = provider(3);
    const { s } = store([], { spent: 0.5, ceiling: 0.1 });
    await expect(online(s, p, all, { maxCost: 0.6, prices: PRICES })).rejects.toThrow(
      `cell c would cost up to ${0.1 * all.length} for ${all.length} requests, after the $0.5 its workers have spent: more than max_cost $0.6, so nothing was sent. Raise it.`,
    );
    expect(asked).toHaveLength(0);
  });

  it('stops at the budget as the replies report it, naming what was spent in the store words', async () => {
    const all = await requests();
    // Each reply bills 1,000 prompt tokens at $10/M: $0.01, past the ceiling the store reserved.
    const { p, asked } = provider(1000);
    const { s } = store([], { ceiling: 1e-6 });
    const run = online(s, p, all, { maxCost: 0.02, prices: PRICES });
    await expect(run).rejects.toMatchObject({ code: 'COST_LIMIT' });
    await expect(run).rejects.toThrow(
      /^cell c has cost \$0\.0201 by the server's token counts, reaching max_cost \$0\.02: nothing more was sent \(2000 prompt \+ 2 completion tokens; 2 repl\(ies\) report more tokens than their request can explain .*\)\. Go on online\.$/,
    );
    expect(asked).toHaveLength(2);
  });

  it("stops naming one picture: the cell's spending, and the share of it this worker's tokens are", async () => {
    const all = await requests();
    const { p, asked } = provider(1000);
    // $0.5 spent by other workers before this one sent anything; each of its replies bills $0.0101.
    const { s } = store([], { spent: 0.5, ceiling: 1e-6 });
    const run = online(s, p, all, { maxCost: 0.52, prices: PRICES });
    await expect(run).rejects.toThrow(
      /^cell c has cost \$0\.52 by the server's token counts, reaching max_cost \$0\.52: nothing more was sent \(\$0\.0201 of it for this worker's 2000 prompt \+ 2 completion tokens, the other \$0\.5 by its other workers; /,
    );
    expect(asked).toHaveLength(2);
  });

  it('is the loop the queue worker sends through (./queued.ts): neither asks a request or opens a budget of its own', () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const queued = readFileSync(join(here, 'queued.ts'), 'utf8');
    expect(queued).toContain('sendRun(');
    for (const file of ['queued.ts', '../workers/worker.ts'])
      expect(readFileSync(join(here, file), 'utf8')).not.toMatch(
        /executeRequests|openBudget|estimateCost|runBatches|\.chat\(/,
      );
  });
});
