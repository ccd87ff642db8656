/**
 * Anthropic's Message Batches, as `llm --batch` uses them (./batch.ts): the requests posted as one batch
 * (`POST /v1/messages/batches`, each with its `custom_id` and the online request's `params`), its
 * `processing_status` read until `ended`, and its results read as JSONL (`/v1/messages/batches/{id}/results`),
 * where `errored`, `canceled` and `expired` results are failed requests. The results are read from the documented
 * address under the base URL, never from the `results_url` a reply names: the key would go wherever that points.
 */

import { openAsBlob, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SavedBody } from '../data/read-capped.js';
import { RumedbenchError } from '../errors.js';
import type { AnthropicProvider, MessagesBody } from './anthropic.js';
import {
  type BatchApi,
  type BatchResult,
  type BatchState,
  CLOCK_MARGIN_S,
  checkedResults,
  doneByCounts,
  downloadDeadlineMs,
  MAX_LIST_PAGES,
  resultLines,
  resultsCap,
} from './batch.js';
import { DEFAULT_MAX_REPLY_BYTES, LlmRequestError } from './client.js';

/** The API's limits on one batch: 100,000 requests, 256 MB. */
const LIMITS = { requests: 100_000, bytes: 256 * 1_000_000 };

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

interface BatchList {
  data?: (BatchObject & { created_at?: unknown; cancel_initiated_at?: unknown })[];
  has_more?: unknown;
  last_id?: unknown;
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

    // One JSON body around the lines (JSON already): written around them, not parsed and written again.
    frame: { head: '{"requests":[', sep: ',', tail: ']}' },

    async submit(input) {
      // One call, never retried here: a batch created twice is paid twice (./batch.ts looks it up instead).
      const { json, status } = await p.callOnce<BatchObject>(url, undefined, {
        rawBody: await openAsBlob(input, { type: 'application/json' }),
      });
      if (typeof json?.id !== 'string')
        throw new LlmRequestError(`${url}: the answer names no batch id`, status, false);
      return { id: json.id };
    },

    tagged: false,
    settleMs: 2 * p.timeoutMs,

    async cancel(id) {
      await p.call(`${url}/${encodeURIComponent(id)}/cancel`, {});
    },

    async find(intent, known) {
      // No tag is kept: the candidates are the batches created since the intent (with a margin for the two clocks)
      // that hold as many requests as it did, are not cancelled, and are not already this run's.
      const since = Date.parse(intent.at) - CLOCK_MARGIN_S * 1000;
      const found: string[] = [];
      let after: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const { json } = await p.call<BatchList>(
          `${url}?limit=100${after ? `&after_id=${encodeURIComponent(after)}` : ''}`,
          undefined,
          { method: 'GET' },
        );
        const data = Array.isArray(json?.data) ? json.data : [];
        let older = false;
        for (const b of data) {
          const created = typeof b.created_at === 'string' ? Date.parse(b.created_at) : Number.NaN;
          if (!(created >= since)) {
            older = true;
            continue;
          }
          const c = b.request_counts;
          const total =
            whole(c?.processing) +
            whole(c?.succeeded) +
            whole(c?.errored) +
            whole(c?.canceled) +
            whole(c?.expired);
          if (
            typeof b.id === 'string' &&
            !known.has(b.id) &&
            !b.cancel_initiated_at &&
            total === intent.keys.length
          )
            found.push(b.id);
        }
        if (older || !json?.has_more || typeof json.last_id !== 'string') break;
        after = json.last_id;
      }
      if (found.length > 1)
        throw new RumedbenchError(
          'BATCH_AMBIGUOUS',
          `${found.length} batches of ${intent.keys.length} requests were created at ${url} since this run began creating one (${found.slice(0, 5).join(', ')}), and Anthropic keeps no tag to tell which is this run's: none is collected. Cancel the ones that are not this run's at the provider (a cancelled batch is passed over), then continue with --resume`,
        );
      return found;
    },

    async state(id): Promise<BatchState> {
      const { json } = await p.call<BatchObject>(`${url}/${encodeURIComponent(id)}`, undefined, {
        method: 'GET',
        // A batch the provider no longer knows is that batch's end, not a wrong URL (see runBatches).
        notFoundIsFatal: false,
      });
      const status =
        typeof json?.processing_status === 'string' ? json.processing_status.slice(0, 40) : 'unknown';
      const c = json?.request_counts;
      const failed = whole(c?.errored) + whole(c?.canceled) + whole(c?.expired);
      const completed = whole(c?.succeeded);
      const counts = c ? { total: completed + failed + whole(c.processing), completed, failed } : undefined;
      // Anthropic's words: in_progress, canceling, ended. Its results are found by the batch id (no file named).
      const unknown = !['in_progress', 'canceling', 'ended'].includes(status);
      return {
        id,
        status,
        ended: status === 'ended' || (unknown && doneByCounts(counts)),
        ...(counts ? { counts } : {}),
        ...(unknown ? { unknownWord: true as const } : {}),
      };
    },

    results(state, dir, keys, maxTokens) {
      // Saved to a file as it arrives, checked whole, then read line by line (see ./openai-batch.ts).
      const cap = resultsCap(p.replyCap, keys.length, {
        maxTokens,
        capRaised: p.replyCap > DEFAULT_MAX_REPLY_BYTES,
      });
      const saved = join(dir, `batch-results-${state.id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}.jsonl`);
      return checkedResults({
        state,
        keys,
        maxLine: p.replyCap,
        download: async () => {
          try {
            await p.call<never>(`${url}/${encodeURIComponent(state.id)}/results`, undefined, {
              method: 'GET',
              saveTo: new SavedBody(saved),
              maxReplyBytes: cap.bytes,
              timeoutMs: downloadDeadlineMs(p.timeoutMs, keys.length),
              capIs: cap.says,
            });
          } catch (e) {
            rmSync(saved, { force: true });
            throw e;
          }
          return [saved];
        },
        read: (file) => readAnthropicResults(p, file),
      });
    },
  };
}

/** The lines of a Message Batches results file, read. */
async function* readAnthropicResults(p: AnthropicProvider, file: string): AsyncGenerator<BatchResult> {
  for await (const { key, line } of resultLines<ResultLine>(file, p.replyCap)) {
    const type = line.result?.type;
    if (type === 'succeeded') {
      const message = line.result?.message;
      try {
        yield { key, reply: p.readMessage(message as MessagesBody, JSON.stringify(message ?? null), 200) };
      } catch (e) {
        yield { key, error: (e as Error).message };
      }
      continue;
    }
    const err = line.result?.error?.error;
    const said = typeof err?.message === 'string' ? `: ${err.message.slice(0, 500)}` : '';
    yield { key, error: `${typeof type === 'string' ? type.slice(0, 40) : 'no result'}${said}` };
  }
}
