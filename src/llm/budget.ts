/**
 * `max_cost` (`--max-cost`), the one rule every door of an LLM run spends by: before anything is sent, the spending
 * so far and the estimate of what is left must fit the budget; then each request's ceiling (./cost.ts) is reserved
 * before it is sent and released when its answer lands, its reported cost recorded as spent, and nothing more is sent
 * once a reservation would pass the budget or the spending reaches it. So the reported spending passes the budget by
 * at most what the requests in flight at that moment report beyond their ceilings.
 *
 * Where the money is kept is a port (`MoneyStore`): a run folder keeps it in memory (its lock makes one process the
 * only spender, the journal says what was spent before), the queue in its database (../workers/queue-store.ts), where
 * every worker of a cell reserves from one row, so that N workers together hold the same budget as one process.
 */
import { RumedbenchError, UsageError } from '../errors.js';
import type { Logger } from '../log.js';
import { costOf, formatUsd, type Prices } from './cost.js';
import type { JournalEntry } from './journal.js';
import type { Usage } from './provider.js';
import type { LlmRequest } from './requests.js';

/** Where a run's money is kept, in USD: spent (by the server's token counts) and reserved by requests in flight. */
export interface MoneyStore {
  /** What the run has spent so far. */
  spent(): Promise<number>;
  /**
   * Reserves `usd` if what is spent, what is reserved and `usd` stay within `max`; false (nothing reserved) otherwise.
   * Atomic against every other spender of the same run.
   */
  reserve(usd: number, max: number): Promise<boolean>;
  /** Releases a reservation of `reserved` and records `spent`; resolves with the run's spending after it. */
  settle(reserved: number, spent: number): Promise<number>;
}

/** The money of a run one process spends alone (a locked run folder): `spent` what its journal has spent before. */
export function memoryMoney(spent = 0): MoneyStore {
  let reserved = 0;
  return {
    spent: async () => spent,
    async reserve(usd, max) {
      if (spent + reserved + usd > max * (1 + 1e-12)) return false;
      reserved += usd;
      return true;
    },
    async settle(r, s) {
      reserved = Math.max(0, reserved - r);
      spent += s;
      return spent;
    },
  };
}

/** A run's budget while it sends: asked before each request, told of each answer. */
export interface Budget {
  /** Aborted once nothing more may be sent. */
  stop: AbortController;
  admit(request: LlmRequest): Promise<boolean>;
  /**
   * `cutOff`: a paid reply that was not read (past the reply cap), counted at no less than its request's ceiling,
   * whatever its estimated counts say.
   */
  settle(request: LlmRequest, u: Usage | undefined, cutOff?: boolean): Promise<void>;
  /** A batch's (or a results file's) answers, priced once they are read. */
  settleAll(entries: readonly (JournalEntry | undefined)[]): Promise<void>;
  /** The run's spending as last seen (every spender's, for the queue). */
  spent(): number;
  /** Replies that reported more than their request's ceiling. */
  unexplained(): number;
  /** This process's reported tokens, in words. */
  tokens(): string;
  /** What this process's replies cost (a part of `spent`, which counts every spender's and earlier runs'). */
  mine(): number;
}

export interface BudgetOptions {
  max: number;
  prices: Prices | undefined;
  /** What is left to send, at most: the whole of it checked before anything is sent, `said` in words. */
  left: { usd: number; said: string };
  /** Each request's ceiling, by key: what is reserved before it is sent. */
  ceilings: ReadonlyMap<string, number>;
  money: MoneyStore;
  /** What the refusal calls the budget and the run: `--max-cost` and "the run", or `max_cost` and a cell's name. */
  flag: string;
  what: string;
  /** Who says what was spent before, in the refusal's words ("its journal has spent"). */
  spentBy: string;
  /** How to go on, in the refusal's words. */
  advice: string;
  log: Logger;
}

/**
 * Refuses a run whose spending so far and estimate for what is left pass the budget, before anything is sent
 * (COST_LIMIT); otherwise returns the watch that reserves each request's ceiling before it is sent.
 */
export async function openBudget(o: BudgetOptions): Promise<Budget> {
  const { max, prices } = o;
  if (!prices) throw new UsageError(`${o.flag} needs the prices: --price-prompt and --price-completion`);
  let spent = await o.money.spent();
  const said = o.left.said;
  if (spent + o.left.usd > max)
    throw new RumedbenchError(
      'COST_LIMIT',
      `${o.what} would cost ${said}${spent > 0 ? `, after the ${formatUsd(spent)} ${o.spentBy}` : ''}: more than ${o.flag} ${formatUsd(max)}, so nothing was sent. ${o.advice}`,
    );
  o.log.info(
    `cost: ${said}${spent > 0 ? ` after ${formatUsd(spent)} spent` : ''}; ${o.flag} ${formatUsd(max)}`,
  );
  const stop = new AbortController();
  const ceiling = o.ceilings;
  let unexplained = 0;
  let prompt = 0;
  let completion = 0;
  let mine = 0;
  const priced = (key: string, u: Usage | undefined): number => {
    if (!u) return 0;
    const usd = costOf(prices, u);
    prompt += u.promptTokens;
    completion += u.completionTokens;
    if (usd > (ceiling.get(key) ?? Number.POSITIVE_INFINITY) * (1 + 1e-9)) unexplained++;
    return usd;
  };
  return {
    stop,
    async admit(request) {
      if (stop.signal.aborted) return false;
      if (await o.money.reserve(ceiling.get(request.key) ?? 0, max)) return true;
      spent = await o.money.spent();
      stop.abort();
      return false;
    },
    async settle(request, u, cutOff = false) {
      const reserved = ceiling.get(request.key) ?? 0;
      const usd = priced(request.key, u);
      const counted = cutOff && u ? Math.max(usd, reserved) : usd;
      mine += counted;
      spent = await o.money.settle(reserved, counted);
      if (spent >= max) stop.abort();
    },
    async settleAll(entries) {
      let usd = 0;
      for (const e of entries) if (e?.status === 'ok' && ceiling.has(e.key)) usd += priced(e.key, e.usage);
      mine += usd;
      spent = await o.money.settle(0, usd);
      if (spent > max) stop.abort();
    },
    spent: () => spent,
    unexplained: () => unexplained,
    tokens: () => `${prompt} prompt + ${completion} completion tokens`,
    mine: () => mine,
  };
}
