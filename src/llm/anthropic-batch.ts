/**
 * Anthropic's Message Batches, as `llm --batch` uses them (./batch.ts): the requests posted as one batch
 * (`POST /v1/messages/batches`, each with its `custom_id` and the online request's `params`), its
 * `processing_status` read until `ended`, and its results read as JSONL (`/v1/messages/batches/{id}/results`),
 * where `errored`, `canceled` and `expired` results are failed requests. The results are read from the documented
 * address under the base URL, never from the `results_url` a reply names: the key would go wherever that points.
 */
import type { AnthropicProvider, MessagesBody } from './anthropic.js';
import { type BatchApi, type BatchResult, type BatchState, resultLines } from './batch.js';
import { LlmRequestError } from './openai.js';

/** The API's limits on one batch: 100,000 requests, 256 MB. */
const LIMITS = { requests: 100_000, bytes: 256 * 1_000_000 };
const MAX_RESULTS_BYTES = 400 << 20;

interface BatchObject {
  id?: unknown;
  processing_status?: unknown;
  request_counts?: {
    processing?: unknown;
    succeeded?: unknown;
    errored?: unknown;
    canceled?: unknown;
    expired?: unknown;
  };
}

interface ResultLine {
  custom_id?: unknown;
  result?: {
    type?: unknown;
    message?: unknown;
    error?: { error?: { type?: unknown; message?: unknown } };
  } | null;
}

const whole = (v: unknown): number => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);

export function anthropicBatches(p: AnthropicProvider): BatchApi {
  const url = `${p.base}/messages/batches`;
  return {
    name: 'anthropic',
    limits: LIMITS,
    line: (key, messages, params) =>
      JSON.stringify({ custom_id: key, params: p.messageBody(messages, params) }),

    async submit(lines) {
      // The lines are JSON already: the body is written around them rather than parsed and written again.
      const { json, status } = await p.call<BatchObject>(url, undefined, {
        rawBody: `{"requests":[${lines.join(',')}]}`,
      });
      if (typeof json?.id !== 'string')
        throw new LlmRequestError(`${url}: the answer names no batch id`, status, false);
      return { id: json.id };
    },

    async state(id): Promise<BatchState> {
      const { json } = await p.call<BatchObject>(`${url}/${encodeURIComponent(id)}`, undefined, {
        method: 'GET',
      });
      const status =
        typeof json?.processing_status === 'string' ? json.processing_status.slice(0, 40) : 'unknown';
      const c = json?.request_counts;
      const failed = whole(c?.errored) + whole(c?.canceled) + whole(c?.expired);
      const completed = whole(c?.succeeded);
      return {
        id,
        status,
        ended: status === 'ended',
        ...(c ? { counts: { total: completed + failed + whole(c.processing), completed, failed } } : {}),
      };
    },

    async results(state) {
      const cap = Math.min(MAX_RESULTS_BYTES, p.replyCap * Math.max(1, state.counts?.total ?? 1));
      const { text } = await p.call<never>(`${url}/${encodeURIComponent(state.id)}/results`, undefined, {
        method: 'GET',
        raw: true,
        maxReplyBytes: cap,
      });
      const out: BatchResult[] = [];
      for (const { key, line } of resultLines<ResultLine>(text)) {
        const type = line.result?.type;
        if (type === 'succeeded') {
          const message = line.result?.message;
          try {
            out.push({
              key,
              reply: p.readMessage(message as MessagesBody, JSON.stringify(message ?? null), 200),
            });
          } catch (e) {
            out.push({ key, error: (e as Error).message });
          }
          continue;
        }
        const err = line.result?.error?.error;
        const said = typeof err?.message === 'string' ? `: ${err.message.slice(0, 500)}` : '';
        out.push({ key, error: `${typeof type === 'string' ? type.slice(0, 40) : 'no result'}${said}` });
      }
      return out;
    },
  };
}
