/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio). Retries with
 * exponential backoff and full jitter on 429, 5xx, timeouts and dropped connections; a 429's `Retry-After` pauses
 * every request of the run (the server asked the client, not one request, to slow down). Other 4xx answers fail
 * at once with the server's message.
 */
import { RumedbenchError } from '../errors.js';
import type { ChatMessage } from './prompt.js';
import type { ChatReply, Provider, SamplingParams } from './provider.js';

export class LlmRequestError extends RumedbenchError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  constructor(
    message: string,
    status: number | undefined,
    retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super('LLM_REQUEST_FAILED', message, options);
    this.name = 'LlmRequestError';
    this.status = status;
    this.retryable = retryable;
  }
}

export interface OpenAIOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Per request, in ms; 120 s by default. */
  timeoutMs?: number;
  /** Retries after the first attempt; 6 by default. */
  maxRetries?: number;
  /** First backoff in ms, doubled each retry, with full jitter; 1 s by default. */
  backoffMs?: number;
  /** Ceiling of one backoff, in ms; 60 s by default. */
  maxBackoffMs?: number;
}

/** Retry-After as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface CompletionBody {
  choices?: { message?: { content?: string | null }; finish_reason?: string }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  error?: { message?: string };
}

export class OpenAIProvider implements Provider {
  private readonly url: string;
  private pausedUntil = 0;

  constructor(private readonly options: OpenAIOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  describe(): Record<string, unknown> {
    return { provider: 'openai', endpoint: this.url, model: this.options.model };
  }

  async chat(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    const maxRetries = this.options.maxRetries ?? 6;
    const base = this.options.backoffMs ?? 1000;
    const cap = this.options.maxBackoffMs ?? 60_000;
    for (let attempt = 0; ; attempt++) {
      const wait = this.pausedUntil - Date.now();
      if (wait > 0) await sleep(wait);
      try {
        return await this.once(messages, params);
      } catch (e) {
        const err =
          e instanceof LlmRequestError ? e : new LlmRequestError(String(e), undefined, true, { cause: e });
        if (!err.retryable || attempt >= maxRetries) throw err;
        const hinted = (err as LlmRequestError & { retryAfter?: number }).retryAfter;
        const delay = hinted ?? Math.random() * Math.min(cap, base * 2 ** attempt);
        if (hinted !== undefined) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + hinted);
        await sleep(delay);
      }
    }
  }

  private async once(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    const body: Record<string, unknown> = {
      model: this.options.model,
      messages,
      temperature: params.temperature,
      max_tokens: params.maxTokens,
    };
    if (params.seed !== undefined) body.seed = params.seed;
    if (params.stop && params.stop.length > 0) body.stop = params.stop;
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          ...this.options.headers,
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 120_000),
      });
    } catch (e) {
      const timeout = (e as Error).name === 'TimeoutError';
      throw new LlmRequestError(
        `${this.url}: ${timeout ? 'timed out' : `request failed: ${(e as Error).message}`}`,
        undefined,
        true,
        { cause: e },
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new LlmRequestError(
        `${this.url}: connection broke off: ${(e as Error).message}`,
        res.status,
        true,
        { cause: e },
      );
    }
    let json: CompletionBody | undefined;
    try {
      json = JSON.parse(text) as CompletionBody;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const message = `${this.url}: HTTP ${res.status}${json?.error?.message ? `: ${json.error.message}` : ''}`;
      const retryable = res.status === 429 || res.status >= 500 || res.status === 408;
      const err = new LlmRequestError(message, res.status, retryable);
      if (res.status === 429) {
        const after = retryAfterMs(res.headers.get('retry-after'));
        if (after !== undefined) Object.assign(err, { retryAfter: after });
      }
      throw err;
    }
    const choice = json?.choices?.[0];
    if (!json || !choice)
      throw new LlmRequestError(
        `${this.url}: the reply is not a chat completion: ${text.slice(0, 200)}`,
        res.status,
        true,
      );
    return {
      text: choice.message?.content ?? '',
      ...(json.usage
        ? {
            usage: {
              promptTokens: json.usage.prompt_tokens ?? 0,
              completionTokens: json.usage.completion_tokens ?? 0,
            },
          }
        : {}),
      ...(choice.finish_reason ? { finishReason: choice.finish_reason } : {}),
    };
  }
}
