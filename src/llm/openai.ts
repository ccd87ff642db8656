/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio), and, for
 * scoring by log-likelihood, servers that return prompt log-probabilities: `/v1/completions` with `echo` and
 * `logprobs` over token ids from the server's `/tokenize` (vLLM). Retries with
 * exponential backoff and full jitter on 429, 5xx, timeouts and dropped connections; a 429's `Retry-After` pauses
 * every request of the run (the server asked the client, not one request, to slow down). Other 4xx answers fail
 * at once with the server's message.
 */
import { RumedbenchError } from '../errors.js';
import { type LoglikRequest, type LoglikResult, moveTrailingWhitespace, splitByCount } from './loglik.js';
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

interface CompletionsLogprobs {
  choices?: {
    index?: number;
    logprobs?: { token_logprobs?: (number | null)[]; top_logprobs?: (Record<string, number> | null)[] };
  }[];
}

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
    return {
      provider: 'openai',
      endpoint: this.url,
      model: this.options.model,
      ...(this.method ? { loglik_method: this.method } : {}),
    };
  }

  async chat(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    return this.retrying(() => this.once(messages, params));
  }

  private async retrying<T>(f: () => Promise<T>): Promise<T> {
    const maxRetries = this.options.maxRetries ?? 6;
    const base = this.options.backoffMs ?? 1000;
    const cap = this.options.maxBackoffMs ?? 60_000;
    for (let attempt = 0; ; attempt++) {
      const wait = this.pausedUntil - Date.now();
      if (wait > 0) await sleep(wait);
      try {
        return await f();
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
    const { json, text, status } = await this.post<CompletionBody>(this.url, body);
    const choice = json?.choices?.[0];
    if (!json || !choice)
      throw new LlmRequestError(
        `${this.url}: the reply is not a chat completion: ${text.slice(0, 200)}`,
        status,
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

  /** One POST of JSON; HTTP errors become LlmRequestErrors (429 with its Retry-After), retryable where they may pass. */
  private async post<T>(
    url: string,
    body: unknown,
  ): Promise<{ json: T | undefined; text: string; status: number }> {
    let res: Response;
    try {
      res = await fetch(url, {
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
        `${url}: ${timeout ? 'timed out' : `request failed: ${(e as Error).message}`}`,
        undefined,
        true,
        {
          cause: e,
        },
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new LlmRequestError(`${url}: connection broke off: ${(e as Error).message}`, res.status, true, {
        cause: e,
      });
    }
    let json: T | undefined;
    try {
      json = JSON.parse(text) as T;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const detail = (json as { error?: { message?: string } } | undefined)?.error?.message;
      const message = `${url}: HTTP ${res.status}${detail ? `: ${detail}` : ''}`;
      const retryable = res.status === 429 || res.status >= 500 || res.status === 408;
      const err = new LlmRequestError(message, res.status, retryable);
      if (res.status === 429) {
        const after = retryAfterMs(res.headers.get('retry-after'));
        if (after !== undefined) Object.assign(err, { retryAfter: after });
      }
      throw err;
    }
    return { json, text, status: res.status };
  }

  /** vLLM serves /tokenize beside /v1, at the server's root. */
  private get tokenizeUrl(): string {
    return new URL('/tokenize', this.options.baseUrl).toString();
  }

  private get completionsUrl(): string {
    return `${this.options.baseUrl.replace(/\/+$/, '')}/completions`;
  }

  /** Token ids of a text as the server's tokenizer makes them; `special` adds the model's BOS where it wants one. */
  async tokenize(text: string, special = false): Promise<number[]> {
    return this.retrying(async () => {
      const {
        json,
        text: raw,
        status,
      } = await this.post<{ tokens?: unknown }>(this.tokenizeUrl, {
        model: this.options.model,
        prompt: text,
        add_special_tokens: special,
      });
      if (!json || !Array.isArray(json.tokens) || !json.tokens.every((t) => Number.isInteger(t))) {
        throw new LlmRequestError(
          `${this.tokenizeUrl}: not a tokenizer's answer: ${raw.slice(0, 200)}`,
          status,
          false,
        );
      }
      return json.tokens as number[];
    });
  }

  /** The log-probability of every prompt token after the first, for each prompt (one batched request). */
  private async promptLogprobs(prompts: number[][]): Promise<(number | null)[][]> {
    return this.retrying(async () => {
      const { json, text, status } = await this.post<CompletionsLogprobs>(this.completionsUrl, {
        model: this.options.model,
        prompt: prompts,
        max_tokens: 1,
        temperature: 0,
        echo: true,
        logprobs: 1,
      });
      const choices = json?.choices ?? [];
      const out: (number | null)[][] = prompts.map(() => []);
      for (const c of choices) {
        const lp = c.logprobs?.token_logprobs;
        if (typeof c.index === 'number' && Array.isArray(lp)) out[c.index] = lp;
      }
      if (out.some((lp, i) => lp.length < (prompts[i] as number[]).length)) {
        throw new LlmRequestError(
          `${this.completionsUrl}: no log-probabilities for the prompt tokens in the answer: ${text.slice(0, 200)}`,
          status,
          false,
        );
      }
      return out;
    });
  }

  private bos: number[] | undefined;
  private method: 'prompt-logprobs' | 'top-k' | undefined;

  /**
   * Before a log-likelihood run: a three-token prompt must come back with three log-probabilities (vLLM does this;
   * llama.cpp server, Ollama and LM Studio return no prompt log-probabilities today, chat endpoints never). Where
   * the prompt's are missing but the top-k of a generated token are given, single-token candidates can be scored
   * from those; the run records which method it used.
   */
  async checkLoglik(): Promise<void> {
    const refuse = (why: string) =>
      new RumedbenchError(
        'LLM_REQUEST_FAILED',
        `${this.options.baseUrl}: cannot score by log-likelihood: ${why}. The server must return prompt log-probabilities ` +
          '(/v1/completions with echo and logprobs, and /tokenize, as vLLM does; llama.cpp server, Ollama and LM Studio ' +
          'do not today, and chat endpoints never do). Use --mode generate, or such a server.',
      );
    let probe: number[];
    try {
      this.bos = await this.tokenize('', true);
      probe = (await this.tokenize('Да нет да нет')).slice(0, 3);
    } catch (e) {
      throw refuse(`no usable /tokenize endpoint (${(e as Error).message})`);
    }
    if (probe.length < 3) throw refuse('its tokenizer gave fewer than three tokens for a probe text');
    try {
      const [lp] = await this.promptLogprobs([probe]);
      if (lp && lp.length >= 3 && lp.slice(1, 3).every((x) => typeof x === 'number')) {
        this.method = 'prompt-logprobs';
        return;
      }
    } catch {
      // Try the top-k fallback below.
    }
    try {
      const top = await this.topLogprobs('Да нет да');
      if (top.size > 0) {
        this.method = 'top-k';
        return;
      }
    } catch {
      // Refused below.
    }
    throw refuse(
      'a three-token prompt came back without three log-probabilities, and without top-k log-probabilities',
    );
  }

  /** The top-k log-probabilities of the first token generated after a text. */
  private async topLogprobs(prompt: string): Promise<Map<string, number>> {
    return this.retrying(async () => {
      const { json } = await this.post<CompletionsLogprobs>(this.completionsUrl, {
        model: this.options.model,
        prompt,
        max_tokens: 1,
        temperature: 0,
        logprobs: 20,
      });
      const top = json?.choices?.[0]?.logprobs?.top_logprobs?.[0];
      return new Map(
        Object.entries(top ?? {}).filter((e): e is [string, number] => typeof e[1] === 'number'),
      );
    });
  }

  async loglik(request: LoglikRequest): Promise<LoglikResult> {
    if (!this.method) await this.checkLoglik();
    if (this.method === 'top-k') {
      // A candidate is scored only if the server listed it among the top k; the others are unscored, never wrong.
      const top = await this.topLogprobs(request.context);
      return {
        logprobs: request.continuations.map((c) => top.get(c) ?? top.get(c.trimStart()) ?? null),
        tokens: request.continuations.map(() => 1),
      };
    }
    const bos = this.bos ?? [];
    // Candidates nearly always share one context string: one /tokenize call for it, not one per candidate.
    const contexts = new Map<string, Promise<number[]>>();
    const split = await Promise.all(
      request.continuations.map(async (c) => {
        const [context, continuation] = moveTrailingWhitespace(request.context, c);
        const ctx = contexts.get(context) ?? this.tokenize(context);
        contexts.set(context, ctx);
        const [whole, ctxTokens] = await Promise.all([this.tokenize(context + continuation), ctx]);
        return splitByCount([...bos, ...whole], bos.length + ctxTokens.length);
      }),
    );
    const prompts = split.map((x) => [...x.context, ...x.continuation]);
    const lps = await this.promptLogprobs(prompts);
    return {
      logprobs: split.map((x, i) => {
        const lp = (lps[i] as (number | null)[]).slice(
          x.context.length,
          x.context.length + x.continuation.length,
        );
        return lp.some((v) => typeof v !== 'number') ? null : (lp as number[]).reduce((a, b) => a + b, 0);
      }),
      tokens: split.map((x) => x.continuation.length),
      positions: prompts.reduce((n, p) => n + p.length, 0),
    };
  }
}
