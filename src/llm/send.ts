/**
 * Stage two of an LLM run: send the requests that the journal does not answer yet, `concurrency` at a time, journaling
 * each answer (or failure) the moment it arrives, reporting progress to the caller.
 */
import { RumedbenchError } from '../errors.js';
import { redactSecrets } from '../log.js';
import { LlmRequestError } from './client.js';
import { ceilingUsage, estimatedUsage } from './cost.js';
import type { Journal, JournalEntry } from './journal.js';
import type { Provider, SamplingParams, Usage } from './provider.js';
import type { LlmRequest } from './requests.js';

/** Where a run stands, for a progress display (the CLI draws it; the library writes nothing itself). */
export interface RunProgress {
  done: number;
  total: number;
  correct: number;
  graded: number;
  unparsed: number;
  tokens: number;
  startedAt: number;
}

export const newProgress = (total: number): RunProgress => ({
  done: 0,
  total,
  correct: 0,
  graded: 0,
  unparsed: 0,
  tokens: 0,
  startedAt: Date.now(),
});

/** Asks the provider one request: a chat completion, or the log-probabilities of the candidates. */
async function ask(
  provider: Provider,
  request: LlmRequest,
  params: SamplingParams,
): Promise<Partial<JournalEntry>> {
  if (request.kind === 'loglik') {
    if (!provider.loglik) throw new Error('this provider cannot score by log-likelihood');
    const r = await provider.loglik({
      context: request.item.context,
      continuations: request.item.candidates.map((c) => c.text),
    });
    return {
      logprobs: r.logprobs,
      tokens: r.tokens,
      ...(r.positions !== undefined ? { positions: r.positions } : {}),
      ...(r.usage ? { usage: r.usage } : {}),
    };
  }
  const reply = await provider.chat(
    request.messages,
    params,
    request.task.prompt.jsonSchema ? { jsonSchema: request.task.prompt.jsonSchema } : {},
  );
  return {
    reply: reply.text,
    ...(reply.reasoning !== undefined ? { reasoning: reply.reasoning } : {}),
    ...(reply.usage
      ? { usage: reply.usage }
      : reply.usageProblem
        ? { usage: estimatedUsage(request.messages, reply) }
        : {}),
    ...(reply.usageProblem ? { usageProblem: reply.usageProblem } : {}),
    ...(reply.finishReason ? { finishReason: reply.finishReason } : {}),
    ...(reply.model ? { model: reply.model } : {}),
  };
}

const STOPS_THE_RUN = new Set(['LLM_SERVER_REFUSED', 'LLM_ENDPOINT_DOWN', 'PRIVATE_ADDRESS']);

/** How a reply cut off past the reply cap is counted (journal's `usageProblem`). */
export const CUT_OFF_USAGE =
  "the reply was cut off past --max-reply-bytes: counted at its request's ceiling, an estimate (the server may bill more)";

/**
 * A chat request's successful reply cut off past the reply cap: proof that the server ignores max_tokens (no reply
 * within it comes near the cap), and bills for what it wrote, which no estimate bounds. The reply counts as spent at its
 * request's ceiling (flagged an estimate), and the run stops, so that what passes the budget is what was in flight.
 */
function maxTokensIgnored(
  e: unknown,
  request: LlmRequest,
  params: SamplingParams,
): { stop: RumedbenchError; usage: Usage } | undefined {
  if (!(e instanceof LlmRequestError) || !e.overCap || request.kind !== 'chat') return undefined;
  const { url, cap, bytes } = e.overCap;
  const size = bytes === undefined ? `more than ${cap} bytes` : `${bytes} bytes`;
  return {
    stop: new RumedbenchError(
      'LLM_MAX_TOKENS_IGNORED',
      `${url} answered HTTP ${e.status} with a reply of ${size}, past the ${cap} bytes of --max-reply-bytes, to a request for at most ${params.maxTokens} tokens (max_tokens): the server does not honour max_tokens, so what it bills cannot be bounded; nothing more is sent to it`,
      { cause: e },
    ),
    usage: ceilingUsage(request.messages, params.maxTokens),
  };
}

export async function sendAll(options: {
  pending: readonly LlmRequest[];
  provider: Provider;
  params: SamplingParams;
  /** Where each answer goes the moment it arrives: the run's journal file, or a worker's database. */
  journal: Pick<Journal, 'append'> | { append(entry: JournalEntry): Promise<void> };
  concurrency: number;
  /** Once aborted, nothing more is sent; the requests in flight finish and are kept. */
  signal?: AbortSignal;
  progress: RunProgress;
  /** Told after each answer, and once more at the end (`final`). */
  onProgress?: (p: RunProgress, final: boolean) => void;
  /** Called with each answer as it arrives (the progress bar's running accuracy). */
  onAnswer?: (request: LlmRequest, entry: JournalEntry) => void;
  /**
   * Asked before each request is sent (`--max-cost` reserves its ceiling): false sends nothing more. `settle` is told
   * when its entry is journaled, answered or failed.
   */
  admit?: (request: LlmRequest) => boolean | Promise<boolean>;
  settle?: (request: LlmRequest, entry: JournalEntry) => void | Promise<void>;
}): Promise<number> {
  const started = Date.now();
  let next = 0;
  // An error no retry can fix (a refused key, a wrong model or URL) or an endpoint found down stops the run: nothing
  // more is sent, the requests in flight finish, and the error is thrown once they have.
  let stopped: RumedbenchError | undefined;
  const worker = async (): Promise<void> => {
    for (;;) {
      if (stopped || options.signal?.aborted) return;
      const request = options.pending[next];
      if (!request) return;
      // Taken before the budget is asked (which may wait on a database): no two of these loops take one request.
      next++;
      if (options.admit && !(await options.admit(request))) return;
      const t0 = performance.now();
      const base = { key: request.key, task: request.task.name, split: request.split, id: request.record.id };
      let entry: JournalEntry;
      try {
        const answer = await ask(options.provider, request, request.params ?? options.params);
        entry = {
          ...base,
          status: 'ok',
          ...answer,
          latencyMs: performance.now() - t0,
          at: new Date().toISOString(),
        };
      } catch (e) {
        if (e instanceof RumedbenchError && STOPS_THE_RUN.has(e.code)) stopped ??= e;
        const ignored = maxTokensIgnored(e, request, request.params ?? options.params);
        if (ignored) stopped ??= ignored.stop;
        entry = {
          ...base,
          status: 'error',
          ...(ignored ? { usage: ignored.usage, usageProblem: CUT_OFF_USAGE } : {}),
          error: redactSecrets(e instanceof Error ? e.message : String(e)),
          latencyMs: performance.now() - t0,
          at: new Date().toISOString(),
        };
      }
      await options.journal.append(entry);
      await options.settle?.(request, entry);
      options.progress.done++;
      if (entry.status === 'ok') options.onAnswer?.(request, entry);
      options.onProgress?.(options.progress, false);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, () => worker()));
  options.onProgress?.(options.progress, true);
  if (stopped) throw stopped;
  return (Date.now() - started) / 1000;
}
