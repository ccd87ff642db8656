/**
 * OpenAI's Batch API, as `llm --batch` uses it (./batch.ts): the requests uploaded as one JSONL file
 * (`POST /v1/files`, purpose `batch`), a batch created on `/v1/chat/completions` with a 24-hour window
 * (`POST /v1/batches`), its state read (`GET /v1/batches/{id}`), and its output and error files read
 * (`GET /v1/files/{id}/content`), each line matched to its request by `custom_id`. Every call goes through the
 * OpenAI client: the same retries, breaker, caps and key handling as an online run.
 */

import { openAsBlob, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SavedBody } from '../data/read-capped.js';
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
import { DEFAULT_MAX_REPLY_BYTES, LlmRequestError, serverMessage } from './client.js';
import type { CompletionBody, OpenAIProvider } from './openai.js';

/** The API's limits on one batch: 50,000 requests, an input file of 200 MB. */
const LIMITS = { requests: 50_000, bytes: 200 * 1_000_000 };
/**
 * The statuses after which no more results come, read case-insensitively: OpenAI's, and the words other providers'
 * OpenAI-compatible batch APIs use for done (`COMPLETED`, `succeeded`, `ended`, `canceled`).
 */
const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled', 'canceled', 'succeeded', 'ended']);
/** The statuses of a batch still at work: OpenAI's, and the words of OpenAI-compatible batch APIs for the same. */
const WAITING = new Set([
  'validating',
  'in_progress',
  'finalizing',
  'cancelling',
  'canceling',
  'queued',
  'pending',
  'running',
  'processing',
  'submitted',
]);

interface BatchObject {
  id?: unknown;
  status?: unknown;
  request_counts?: { total?: unknown; completed?: unknown; failed?: unknown };
  output_file_id?: unknown;
  error_file_id?: unknown;
  errors?: { data?: { message?: unknown; line?: unknown }[] } | null;
}

interface ResultLine {
  custom_id?: unknown;
  response?: { status_code?: unknown; body?: unknown } | null;
  error?: { code?: unknown; message?: unknown } | null;
}

const whole = (v: unknown): number => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);

/** The metadata key of the tag each batch carries (see ./batch.ts: at most one batch per set of requests). */
const TAG_KEY = 'rumedbench_request_set';

interface BatchList {
  data?: (BatchObject & {
    metadata?: Record<string, unknown> | null;
    created_at?: unknown;
    input_file_id?: unknown;
  })[];
  has_more?: unknown;
}

export function openAIBatches(p: OpenAIProvider): BatchApi {
  const base = p.base;
  const uploaded = new Map<string, string>();
  return {
    name: 'openai',
    limits: LIMITS,
    line: (key, messages, params) =>
      JSON.stringify({
        custom_id: key,
        method: 'POST',
        url: '/v1/chat/completions',
        body: p.chatBody(messages, params),
      }),

    frame: { head: '', sep: '\n', tail: '\n' },

    async submit(input, tag) {
      // An upload retried costs nothing but storage; a batch created twice is paid twice: the file is uploaded once
      // per intent (kept for its next creating call), the batch created by one call, never retried here.
      let fileId = uploaded.get(tag);
      if (fileId === undefined) {
        const form = new FormData();
        form.append('purpose', 'batch');
        // The file as a Blob backed by the file: sent from disk as the upload streams.
        form.append('file', await openAsBlob(input, { type: 'application/jsonl' }), 'rumedbench-batch.jsonl');
        const file = await p.call<{ id?: unknown }>(`${base}/files`, undefined, { form });
        if (typeof file.json?.id !== 'string')
          throw new LlmRequestError(
            `${base}/files: the upload's answer names no file id`,
            file.status,
            false,
          );
        fileId = file.json.id;
        uploaded.set(tag, fileId);
      }
      const batch = await p.callOnce<BatchObject>(`${base}/batches`, {
        input_file_id: fileId,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        metadata: { [TAG_KEY]: tag },
      });
      const id = batch.json?.id;
      if (typeof id !== 'string')
        throw new LlmRequestError(`${base}/batches: the answer names no batch id`, batch.status, false);
      return { id, inputFileId: fileId };
    },

    tagged: true,
    settleMs: 2 * p.timeoutMs,

    async find(intent) {
      // Newest first; pages are read back to a little before the intent (the provider's clock may differ from ours).
      // A batch is the intent's by its tag, or by the input file uploaded for it here (a list without metadata).
      const since = Date.parse(intent.at) / 1000 - CLOCK_MARGIN_S;
      const file = uploaded.get(intent.tag);
      const found: string[] = [];
      let after: string | undefined;
      for (let page = 0; ; page++) {
        if (page >= MAX_LIST_PAGES)
          throw new LlmRequestError(
            `${base}/batches: more than ${MAX_LIST_PAGES * 100} batches listed since this run began creating one; the lookup stopped there, and no batch is created blindly. Continue with --resume`,
            undefined,
            false,
          );
        const { json } = await p.call<BatchList>(
          `${base}/batches?limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`,
          undefined,
          // A server without the list answers 404: the caller decides what that means (./batch.ts).
          { method: 'GET', notFoundIsFatal: false },
        );
        const data = Array.isArray(json?.data) ? json.data : [];
        for (const b of data)
          if (
            typeof b.id === 'string' &&
            (b.metadata?.[TAG_KEY] === intent.tag || (file !== undefined && b.input_file_id === file))
          )
            found.push(b.id);
        const last = data.at(-1);
        if (!json?.has_more || typeof last?.id !== 'string') break;
        if (typeof last.created_at === 'number' && last.created_at < since) break;
        if (last.id === after)
          throw new LlmRequestError(
            `${base}/batches: the list answers the same page again (its "after" cursor is not followed); no batch is created blindly. Continue with --resume`,
            undefined,
            false,
          );
        after = last.id;
      }
      return found.reverse();
    },

    async cancel(id) {
      await p.call(`${base}/batches/${encodeURIComponent(id)}/cancel`, {});
    },

    async state(id): Promise<BatchState> {
      const { json } = await p.call<BatchObject>(`${base}/batches/${encodeURIComponent(id)}`, undefined, {
        method: 'GET',
        // A batch the provider no longer knows is that batch's end, not a wrong URL (see runBatches).
        notFoundIsFatal: false,
      });
      const status = typeof json?.status === 'string' ? json.status.slice(0, 40) : 'unknown';
      const files = [json?.output_file_id, json?.error_file_id].filter(
        (f): f is string => typeof f === 'string',
      );
      const problems = (json?.errors?.data ?? [])
        .map((e) => (typeof e.message === 'string' ? e.message.slice(0, 300) : ''))
        .filter((m) => m !== '');
      const c = json?.request_counts;
      const counts = c
        ? { total: whole(c.total), completed: whole(c.completed), failed: whole(c.failed) }
        : undefined;
      const word = status.toLowerCase();
      const unknown = !ENDED.has(word) && !WAITING.has(word);
      return {
        id,
        status,
        ended: ENDED.has(word) || (unknown && doneByCounts(counts, files)),
        ...(counts ? { counts } : {}),
        ...(unknown ? { unknownWord: true as const } : {}),
        files,
        ...(status.toLowerCase() === 'failed' && problems.length > 0
          ? { failure: problems.slice(0, 3).join('; ') }
          : {}),
      };
    },

    results(state, dir, keys, maxTokens) {
      // Saved to a file as it arrives and read line by line: the results are as large as the replies asked for, capped
      // at the reply cap per request we recorded, not one reply's, and never at the provider's own count. Every file is
      // downloaded and checked whole (./batch.ts, checkedResults) before any of its lines is taken as an answer.
      const cap = resultsCap(p.replyCap, keys.length, {
        maxTokens,
        capRaised: p.replyCap > DEFAULT_MAX_REPLY_BYTES,
      });
      return checkedResults({
        state,
        keys,
        maxLine: p.replyCap,
        download: async () => {
          const saved: string[] = [];
          try {
            for (const file of state.files ?? []) {
              const to = join(
                dir,
                `batch-results-${file.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}.jsonl`,
              );
              saved.push(to);
              await p.call<never>(`${base}/files/${encodeURIComponent(file)}/content`, undefined, {
                method: 'GET',
                // One body across the call's tries: a download that broke off continues where the server offers ranges.
                saveTo: new SavedBody(to),
                maxReplyBytes: cap.bytes,
                timeoutMs: downloadDeadlineMs(p.timeoutMs, keys.length),
                capIs: cap.says,
              });
            }
          } catch (e) {
            for (const f of saved) rmSync(f, { force: true });
            throw e;
          }
          return saved;
        },
        read: (file) => readOpenAIResults(p, file),
      });
    },
  };
}

/**
 * The lines of an OpenAI batch output or error file, read: the Batch API's, and `vllm run-batch`'s, which writes
 * the same format (`--batch-results`).
 */
export async function* readOpenAIResults(p: OpenAIProvider, file: string): AsyncGenerator<BatchResult> {
  for await (const { key, line } of resultLines<ResultLine>(file, p.replyCap)) {
    const status = line.response?.status_code;
    const body = line.response?.body;
    if (status === 200) {
      try {
        yield { key, reply: p.readChat(body as CompletionBody, JSON.stringify(body ?? null), 200) };
      } catch (e) {
        yield { key, error: (e as Error).message };
      }
      continue;
    }
    const said =
      typeof line.error?.message === 'string'
        ? line.error.message.slice(0, 500)
        : serverMessage(body, typeof body === 'string' ? body : '');
    yield {
      key,
      error: `${typeof status === 'number' ? `HTTP ${status}` : 'failed'}${said ? `: ${said}` : ''}`,
    };
  }
}
