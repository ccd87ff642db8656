/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio), and, for
 * scoring by log-likelihood, servers that return prompt log-probabilities: `/v1/completions` with `echo` and
 * `logprobs` over token ids from the server's `/tokenize` (vLLM). What is sent and how the answer is read; every
 * request goes through the resilient client (./client.ts: retries, pauses, caps, the circuit breaker).
 */

import { RumedbenchError } from '../errors.js';
import type { ProviderInfo } from '../scoring/run-log.js';
import { type ClientOptions, DEFAULT_MAX_REPLY_BYTES, LlmRequestError, snippet } from './client.js';
import { type LoglikRequest, type LoglikResult, moveTrailingWhitespace, splitByCount } from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { ChatReply, Provider, SamplingParams, Usage } from './provider.js';
import { ServerProvider } from './server-provider.js';
import { NO_USAGE, tokenCount } from './usage.js';

export interface OpenAIOptions extends ClientOptions {
  model: string;
}

/**
 * The most an echoed prompt token may add to a /v1/completions reply with `echo` and `logprobs: 1`: vLLM writes, per
 * token, its text (JSON-escaped, `\uXXXX` for each Cyrillic letter, or `bytes:\xNN…` for a partial character), its
 * log-probability, a top-1 map that may hold a second token, and an offset: about 150-250 bytes; 1 KiB leaves room.
 */
const ECHO_BYTES_PER_TOKEN = 1024;
/** How many next tokens the top-k fallback asks for (OpenAI's and vLLM's usual ceiling). */
const TOP_K = 20;
/**
 * The lowest log-probability of one token that a model can give: a softmax over logits in 16- or 32-bit floats
 * does not go below about −100 per token; −10,000 leaves room and still refuses −1e300 or −1e999.
 */
const MIN_TOKEN_LOGPROB = -1e4;
/** The capability check's probe text. */
const PROBE_TEXT = 'Да нет да нет';

interface CompletionsLogprobs {
  choices?: {
    index?: number;
    logprobs?: {
      tokens?: unknown[];
      token_logprobs?: (number | null)[];
      top_logprobs?: (Record<string, number> | null)[];
    };
  }[];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

/** The token counts a /v1/completions reply reports, where it reports them as whole numbers. */
function completionsUsage(json: CompletionsLogprobs | undefined): Usage | undefined {
  const p = json?.usage?.prompt_tokens;
  const c = json?.usage?.completion_tokens;
  return Number.isInteger(p) && (p as number) >= 0
    ? {
        promptTokens: p as number,
        completionTokens: Number.isInteger(c) && (c as number) >= 0 ? (c as number) : 0,
      }
    : undefined;
}

export interface CompletionBody {
  model?: unknown;
  choices?: {
    message?: { content?: unknown; tool_calls?: unknown; reasoning_content?: unknown; reasoning?: unknown };
    finish_reason?: unknown;
  }[];
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    completion_tokens_details?: { reasoning_tokens?: unknown } | null;
    prompt_tokens_details?: { cached_tokens?: unknown } | null;
  };
}

export class OpenAIProvider extends ServerProvider implements Provider {
  constructor(protected readonly options: OpenAIOptions) {
    // How the key travels: OpenAI's bearer token.
    super(`${options.baseUrl.replace(/\/+$/, '')}/chat/completions`, options, () =>
      options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    );
  }

  describe(): ProviderInfo {
    return {
      provider: 'openai',
      endpoint: this.url,
      model: this.options.model,
      ...(this.method ? { loglik_method: this.method } : {}),
    };
  }

  async chat(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    return this.client.retrying(() => this.once(messages, params));
  }

  private async once(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    const { json, text, status } = await this.client.post<CompletionBody>(
      this.url,
      this.chatBody(messages, params),
    );
    return this.readChat(json, text, status);
  }

  /** The body of a chat request: the same online and in a batch, so that both ask the same. */
  chatBody(messages: readonly ChatMessage[], params: SamplingParams): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: this.options.model,
      messages,
      temperature: params.temperature,
      max_tokens: params.maxTokens,
    };
    if (params.seed !== undefined) body.seed = params.seed;
    if (params.stop && params.stop.length > 0) body.stop = params.stop;
    if (params.reasoningEffort !== undefined) body.reasoning_effort = params.reasoningEffort;
    // No field of the OpenAI protocol bounds reasoning; chat templates that read `thinking_budget` (Qwen3's, under
    // vLLM and SGLang, which pass chat_template_kwargs on) do. A server that ignores it still answers.
    if (params.thinkingBudget !== undefined)
      body.chat_template_kwargs = { thinking_budget: params.thinkingBudget };
    return body;
  }

  /** A chat completion's reply read, or why it cannot be (an online reply, or a line of a batch's results). */
  readChat(json: CompletionBody | undefined, text: string, status: number): ChatReply {
    const choice = Array.isArray(json?.choices) ? json.choices[0] : undefined;
    if (!json || typeof json !== 'object' || !choice) {
      throw new LlmRequestError(
        `${this.url}: the reply is not a chat completion (no choices): ${snippet(text)}`,
        status,
        true,
        { malformed: true },
      );
    }
    const content = choice.message?.content;
    if (typeof content !== 'string') {
      const tool = Array.isArray(choice.message?.tool_calls) && choice.message.tool_calls.length > 0;
      throw new LlmRequestError(
        `${this.url}: the reply has no text (${tool ? 'the model called a tool instead of answering' : `content is ${content === null ? 'null' : typeof content}`})`,
        status,
        false,
      );
    }
    const prompt = tokenCount(json.usage?.prompt_tokens);
    const completion = tokenCount(json.usage?.completion_tokens);
    const usageGiven = json.usage !== undefined && json.usage !== null;
    const usageOk = usageGiven && prompt !== undefined && completion !== undefined;
    // Parts of the counts, taken only where they fit inside them: a part larger than its whole is not a count.
    const reasoningTokens = tokenCount(json.usage?.completion_tokens_details?.reasoning_tokens);
    const cached = tokenCount(json.usage?.prompt_tokens_details?.cached_tokens);
    const reasoning = choice.message?.reasoning_content ?? choice.message?.reasoning;
    return {
      text: content,
      ...(typeof reasoning === 'string' && reasoning !== '' ? { reasoning } : {}),
      ...(usageOk
        ? {
            usage: {
              promptTokens: prompt,
              completionTokens: completion,
              ...(reasoningTokens !== undefined && reasoningTokens <= completion ? { reasoningTokens } : {}),
              ...(cached !== undefined && cached <= prompt ? { cachedPromptTokens: cached } : {}),
            },
          }
        : {}),
      // No counts at all (a proxy that strips them) is not "nothing spent": estimated and flagged as unreadable ones are.
      ...(usageOk
        ? {}
        : {
            usageProblem: usageGiven
              ? `token counts that are not whole numbers ≥ 0: ${JSON.stringify(json.usage).slice(0, 200)}`
              : NO_USAGE,
          }),
      ...(typeof choice.finish_reason === 'string'
        ? { finishReason: choice.finish_reason.slice(0, 100) }
        : {}),
      ...(typeof json.model === 'string' ? { model: json.model.slice(0, 200) } : {}),
    };
  }

  /** vLLM serves /tokenize beside /v1, at the server's root. */
  private get tokenizeUrl(): string {
    return new URL('/tokenize', this.options.baseUrl).toString();
  }

  private get completionsUrl(): string {
    return `${this.options.baseUrl.replace(/\/+$/, '')}/completions`;
  }

  /** vLLM's /tokenize says how long a sequence may be (`max_model_len`); kept from its first answer. */
  private maxModelLen: number | undefined;

  async contextTokens(): Promise<number | undefined> {
    if (this.maxModelLen === undefined) await this.tokenize('');
    return this.maxModelLen;
  }

  async countTokens(text: string): Promise<number> {
    return (await this.tokenize(text)).length;
  }

  /** Whether the server counts chat prompts (vLLM's /tokenize takes messages); learnt from its first answer. */
  private countsChats: boolean | undefined;

  async countChatTokens(messages: readonly ChatMessage[]): Promise<number | undefined> {
    if (this.countsChats === false) return undefined;
    return this.client.retrying(async () => {
      const { json, status } = await this.client
        .post<{ count?: unknown; tokens?: unknown }>(
          this.tokenizeUrl,
          { model: this.options.model, messages, add_generation_prompt: true },
          { notFoundIsFatal: false },
        )
        .catch((e: unknown) => {
          // No /tokenize (OpenAI's own API, most servers): the server cannot say, which is no error.
          if (e instanceof LlmRequestError && (e.status === 404 || e.status === 405))
            return { json: undefined, status: e.status };
          throw e;
        });
      const n = Array.isArray(json?.tokens) ? json.tokens.length : json?.count;
      if (json === undefined || !Number.isSafeInteger(n) || (n as number) < 0) {
        this.countsChats = false;
        if (json !== undefined)
          throw new LlmRequestError(`${this.tokenizeUrl}: not a token count (HTTP ${status})`, status, false);
        return undefined;
      }
      this.countsChats = true;
      return n as number;
    });
  }

  /** Token ids of a text as the server's tokenizer makes them; `special` adds the model's BOS where it wants one. */
  async tokenize(text: string, special = false): Promise<number[]> {
    return this.client.retrying(async () => {
      const {
        json,
        text: raw,
        status,
      } = await this.client.post<{ tokens?: unknown; max_model_len?: unknown }>(
        this.tokenizeUrl,
        { model: this.options.model, prompt: text, add_special_tokens: special },
        { notFoundIsFatal: false },
      );
      if (!json || !Array.isArray(json.tokens) || !json.tokens.every((t) => Number.isInteger(t))) {
        throw new LlmRequestError(
          `${this.tokenizeUrl}: not a tokenizer's answer: ${snippet(raw)}`,
          status,
          false,
        );
      }
      // A length that is not a whole positive number is no length: the shards are then not fitted to it.
      if (Number.isInteger(json.max_model_len) && (json.max_model_len as number) > 0)
        this.maxModelLen = json.max_model_len as number;
      return json.tokens as number[];
    });
  }

  /**
   * The log-probability of every prompt token after the first, for each prompt (one batched request). The reply
   * echoes every token with its log-probability, so it is as large as the prompts: its cap grows with them (a
   * bound per token), while a reply past that bound is still cut off.
   */
  private async promptLogprobs(
    prompts: number[][] | string[],
    /** The text each prompt stands for (a text prompt's own by default): the echoed tokens must re-join to it. */
    texts: readonly (string | undefined)[] = prompts.map((p) => (typeof p === 'string' ? p : undefined)),
  ): Promise<(number | null)[][] & { usage?: Usage }> {
    // A text prompt has at most one token per UTF-8 byte (byte-level tokens never hold less), and the model's BOS.
    const tokens = prompts.reduce(
      (n: number, p: number[] | string) =>
        n + (typeof p === 'string' ? Buffer.byteLength(p, 'utf8') + (this.bos?.length ?? 0) : p.length),
      0,
    );
    const base = this.options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    const cap = base + tokens * ECHO_BYTES_PER_TOKEN;
    return this.client.retrying(async () => {
      const { json, text, status } = await this.client.post<CompletionsLogprobs>(
        this.completionsUrl,
        {
          model: this.options.model,
          prompt: prompts,
          max_tokens: 1,
          temperature: 0,
          echo: true,
          logprobs: 1,
        },
        { notFoundIsFatal: false, maxReplyBytes: cap },
      );
      const choices = Array.isArray(json?.choices) ? json.choices : [];
      const out: (number | null)[][] & { usage?: Usage } = prompts.map(() => []);
      const echoed: (unknown[] | undefined)[] = prompts.map(() => undefined);
      const usage = completionsUsage(json);
      if (usage) out.usage = usage;
      const fail = (why: string, impossible = false) =>
        new LlmRequestError(`${this.completionsUrl}: ${why}: ${snippet(text)}`, status, false, {
          impossible,
        });
      for (const c of choices) {
        const lp = c.logprobs?.token_logprobs;
        if (typeof c.index === 'number' && Array.isArray(lp)) {
          // A number past the prompts sent answers none of them: its values belong to no prompt.
          if (!Number.isInteger(c.index) || c.index < 0 || c.index >= prompts.length)
            throw fail(
              `a choice numbered ${String(c.index)} where ${prompts.length} prompt${prompts.length === 1 ? ' was' : 's were'} sent`,
            );
          out[c.index] = lp;
          echoed[c.index] = Array.isArray(c.logprobs?.tokens) ? c.logprobs.tokens : undefined;
        }
      }
      for (const [i, lp] of out.entries()) {
        const prompt = prompts[i] as number[] | string;
        // A text prompt's token count is what the server read: its values less the generated one, whose presence
        // the capability check saw (`generated`, 0 or 1, on this server's replies).
        const n = typeof prompt === 'string' ? lp.length - (this.generated ?? 1) : prompt.length;
        // One per prompt token (the first may be null: nothing precedes it), then the one generated token
        // (max_tokens 1). More would be read from the wrong positions; fewer leave tokens unscored.
        if (lp.length === 0) throw fail('no log-probabilities for the prompt tokens in the answer');
        if (n < 1) throw fail(`${lp.length} log-probabilities for a text prompt: none for its tokens`);
        if (lp.length !== n && lp.length !== n + 1)
          throw fail(
            `${lp.length} log-probabilities for a prompt of ${n} tokens and 1 generated (there must be one per token)`,
          );
        for (const [k, v] of lp.slice(0, n).entries()) {
          if (k === 0 && v === null) continue;
          if (typeof v !== 'number' || !Number.isFinite(v) || v > 0)
            throw fail(
              `log-probability ${typeof v === 'number' ? String(v) : JSON.stringify(v)} at token ${k} is not a finite number ≤ 0, which no model gives`,
              true,
            );
          if (v < MIN_TOKEN_LOGPROB)
            throw fail(
              `log-probability ${String(v)} at token ${k} is below ${MIN_TOKEN_LOGPROB} for one token, which no model gives`,
              true,
            );
        }
      }
      // The values are read for the tokens sent only: each reply's echoed tokens, one per value, re-join to the text of
      // the prompt it is numbered for. A server that numbers its choices by the order they ended (each prompt given
      // another's values), or drops or adds a token, is caught here, whatever the counts say.
      for (const [i, lp] of out.entries()) {
        const text = texts[i];
        if (text === undefined) continue;
        const tokens = echoed[i];
        const why =
          tokens === undefined
            ? 'echoes no tokens, so what its values are for cannot be checked'
            : tokens.length !== lp.length
              ? `echoes ${tokens.length} tokens with ${lp.length} log-probabilities (there must be one per token)`
              : !echoRejoins(tokens.slice(0, tokens.length - (this.generated ?? 1)), text)
                ? `echoes tokens that do not re-join to the prompt sent for it (${JSON.stringify(tokens.slice(0, 8).join('').slice(0, 60))}… for ${JSON.stringify(text.slice(0, 60))}…)`
                : undefined;
        if (why !== undefined)
          throw new LlmRequestError(
            `${this.completionsUrl}: the reply for prompt ${i + 1} of ${prompts.length} ${why}: its values are not scored`,
            status,
            false,
            { impossible: true, echoMismatch: true },
          );
      }
      if (typeof prompts[0] === 'string') {
        // A text's bound above counts a token per byte; once the counts are read, the reply must fit them as tightly
        // as an id prompt's does.
        const explained = base + out.reduce((n, lp) => n + lp.length, 0) * ECHO_BYTES_PER_TOKEN;
        if (Buffer.byteLength(text, 'utf8') > explained)
          throw new LlmRequestError(
            `${this.completionsUrl}: the reply is larger than the request can explain (--max-reply-bytes plus a bound per echoed token) (${explained} bytes); it was not used`,
            status,
            false,
          );
      }
      return out;
    });
  }

  private bos: number[] | undefined;
  private method: 'prompt-logprobs' | 'top-k' | undefined;
  /** Whether a reply holds the generated token's log-probability after the prompt's (1) or not (0): seen by the check. */
  private generated: 0 | 1 | undefined;
  /**
   * Whether the server reads a text prompt as the BOS and the token ids of its /tokenize: seen by the check, on a
   * probe sent both ways. Then an item is one request (its context and each context + candidate as texts), and each
   * candidate's tokens are, by count, those past the context's, as lm-eval splits them; else three /tokenize calls.
   */
  private textPrompts: Promise<boolean> | undefined;
  /** The probe text's /tokenize ids, kept by the capability check for the text check. */
  private probeTokens: number[] = [];

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
    let full: number[] = [];
    try {
      this.bos = await this.tokenize('', true);
      full = await this.tokenize(PROBE_TEXT);
      probe = full.slice(0, 3);
    } catch (e) {
      // A refused key or a wrong URL is that, not a missing capability.
      if (e instanceof LlmRequestError && e.fatal) throw e;
      throw refuse(`no usable /tokenize endpoint (${(e as Error).message})`);
    }
    if (probe.length < 3) throw refuse('its tokenizer gave fewer than three tokens for a probe text');
    let why = 'a three-token prompt came back without three log-probabilities';
    // Prompt log-probabilities that came back where no layout can be read: refused, with no fallback to the top-k.
    let layout: string | undefined;
    try {
      // The probe, and the probe with each of two different tokens after it: where each prompt token's
      // log-probability sits is read from how the replies differ, never guessed from their lengths.
      const [a, b] = [probe[0] as number, probe.find((t) => t !== probe[0]) ?? (probe[0] as number) + 1];
      const [lp, withA, withB] = await this.promptLogprobs([probe, [...probe, a], [...probe, b]]);
      if (lp && lp.length >= 3 && lp.slice(1, 3).every((x) => typeof x === 'number')) {
        layout = loglikLayoutProblem(lp, withA ?? [], withB ?? []);
        if (!layout) {
          this.method = 'prompt-logprobs';
          this.generated = lp.length === probe.length + 1 ? 1 : 0;
          this.probeTokens = full;
          return;
        }
      }
    } catch (e) {
      if (e instanceof LlmRequestError && e.fatal) throw e;
      // Log-probabilities that came back but cannot be right are that, not a missing capability: no fallback.
      if (e instanceof LlmRequestError && e.impossible)
        throw new RumedbenchError(
          'LLM_REQUEST_FAILED',
          `${this.options.baseUrl}: cannot score by log-likelihood: the server returns prompt log-probabilities that cannot be right (${e.message}). Check the server (its dtype, its logprobs mode), or use --mode generate.`,
        );
      why = `a three-token prompt came back without three log-probabilities (${(e as Error).message})`;
      // Try the top-k fallback below.
    }
    if (layout)
      throw new RumedbenchError(
        'LLM_REQUEST_FAILED',
        `${this.options.baseUrl}: cannot score by log-likelihood: ${layout}. Check the server (its echo and logprobs), or use --mode generate.`,
      );
    try {
      const top = await this.topLogprobs('Да нет да');
      if (top.size > 0) {
        this.method = 'top-k';
        return;
      }
    } catch (e) {
      if (e instanceof LlmRequestError && e.fatal) throw e;
      // Refused below.
    }
    throw refuse(`${why}, and without top-k log-probabilities`);
  }

  /**
   * Whether a text prompt gets the same log-probabilities as the BOS and its /tokenize ids: the same count, each value
   * the same. Any other answer (an error included) keeps the /tokenize path, which needs no such agreement.
   */
  private async readsTextsAsTokens(tokens: readonly number[]): Promise<boolean> {
    try {
      const [[ids], [text]] = await Promise.all([
        this.promptLogprobs([[...(this.bos ?? []), ...tokens]]),
        this.promptLogprobs([PROBE_TEXT]),
      ]);
      return (
        ids !== undefined &&
        text !== undefined &&
        ids.length === text.length &&
        ids.every((v, k) => v === text[k] || closeLogprob(v, text[k]))
      );
    } catch (e) {
      if (e instanceof LlmRequestError && e.fatal) throw e;
      return false;
    }
  }

  /** The top-k method scores a candidate only if it is one token and among the k listed: say why an item's cannot be. */
  async loglikLimitation(request: LoglikRequest): Promise<string | undefined> {
    if (!this.method) await this.checkLoglik();
    if (this.method !== 'top-k') return undefined;
    const problems: string[] = [];
    if (request.continuations.length > TOP_K) {
      problems.push(
        `${request.continuations.length} candidates, but the server lists only the ${TOP_K} most likely next tokens`,
      );
    }
    const multi: string[] = [];
    for (const c of request.continuations.slice(0, 50)) {
      const [, continuation] = moveTrailingWhitespace(request.context, c);
      if ((await this.tokenize(continuation)).length > 1) multi.push(JSON.stringify(continuation));
      if (multi.length >= 3) break;
    }
    if (multi.length > 0)
      problems.push(`candidates of several tokens (${multi.join(', ')}), which a top-k list cannot hold`);
    return problems.length > 0
      ? `the server gives no prompt log-probabilities, only the top ${TOP_K} of a generated token: ${problems.join('; ')}`
      : undefined;
  }

  /** The top-k log-probabilities of the first token generated after a text. */
  private async topLogprobs(prompt: string): Promise<Map<string, number>> {
    return this.client.retrying(async () => {
      const { json } = await this.client.post<CompletionsLogprobs>(
        this.completionsUrl,
        { model: this.options.model, prompt, max_tokens: 1, temperature: 0, logprobs: TOP_K },
        { notFoundIsFatal: false },
      );
      const top = json?.choices?.[0]?.logprobs?.top_logprobs?.[0];
      return new Map(
        Object.entries(top ?? {}).filter(
          (e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]) && e[1] <= 0,
        ),
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
    // Asked once, on the first item (the capability check alone serves the contamination probes, which send ids).
    this.textPrompts ??= this.readsTextsAsTokens(this.probeTokens);
    if (await this.textPrompts) return (await this.loglikByText(request)) ?? this.loglikByTokens(request);
    return this.loglikByTokens(request);
  }

  /** Three /tokenize calls per distinct context and candidate, then one request of token ids for the item. */
  private async loglikByTokens(request: LoglikRequest): Promise<LoglikResult> {
    const bos = this.bos ?? [];
    // Candidates nearly always share one context string: one /tokenize call for it, not one per candidate.
    const contexts = new Map<string, Promise<number[]>>();
    const split = await Promise.all(
      request.continuations.map(async (c) => {
        const [context, continuation] = moveTrailingWhitespace(request.context, c);
        const ctx = contexts.get(context) ?? this.tokenize(context);
        contexts.set(context, ctx);
        const [whole, ctxTokens] = await Promise.all([this.tokenize(context + continuation), ctx]);
        if (whole.length <= ctxTokens.length) {
          // The counts do not add up (a broken /tokenize): the candidate would get no tokens and a score of 0.
          throw new LlmRequestError(
            `${this.tokenizeUrl}: the prompt with the candidate ${JSON.stringify(continuation.slice(0, 40))} has ${whole.length} tokens, the prompt alone ${ctxTokens.length}: the candidate has no tokens of its own`,
            undefined,
            false,
          );
        }
        return splitByCount([...bos, ...whole], bos.length + ctxTokens.length);
      }),
    );
    const prompts = split.map((x) => [...x.context, ...x.continuation]);
    const lps = await this.promptLogprobs(
      prompts,
      request.continuations.map((c) => moveTrailingWhitespace(request.context, c).join('')),
    );
    const usage = lps.usage;
    const logprobs = split.map((x, i) => {
      const lp = (lps[i] as (number | null)[]).slice(
        x.context.length,
        x.context.length + x.continuation.length,
      );
      return lp.some((v) => typeof v !== 'number') ? null : (lp as number[]).reduce((a, b) => a + b, 0);
    });
    this.refuseEqualScores(logprobs);
    return {
      logprobs,
      tokens: split.map((x) => x.continuation.length),
      positions: prompts.reduce((n, p) => n + p.length, 0),
      ...(usage ? { usage } : {}),
    };
  }

  /**
   * One request for an item, where the server reads texts as its /tokenize ids (`textPrompts`): the context (once per
   * distinct context) and each context + candidate, as texts. A candidate's tokens are those of its prompt past the
   * context's count, as lm-eval splits them (never by text): the same tokens, and so the same score, as the three
   * /tokenize calls would give, with the same checks on every value. Each candidate's prompt must then agree with
   * its context's over the context's tokens (its last aside, which a tokenizer may merge with the candidate's first):
   * where they do not (values that do not sit one per token, a server that appends some, a tokenizer that splits the
   * context differently inside a longer text) the item is asked again by /tokenize ids (undefined here), whose
   * counts are checked against the tokenizer's.
   */
  private async loglikByText(request: LoglikRequest): Promise<LoglikResult | undefined> {
    const pairs = request.continuations.map((c) => moveTrailingWhitespace(request.context, c));
    const contexts = [...new Set(pairs.map(([context]) => context))];
    let lps: Awaited<ReturnType<typeof this.promptLogprobs>>;
    try {
      lps = await this.promptLogprobs([...contexts, ...pairs.map(([a, b]) => a + b)]);
    } catch (e) {
      // Values that are not for the texts sent: the item is asked again by /tokenize ids, checked the same way.
      if (e instanceof LlmRequestError && e.echoMismatch) return undefined;
      throw e;
    }
    const generated = this.generated ?? 1;
    const count = (i: number) => (lps[i] as (number | null)[]).length - generated;
    const split = pairs.map(([context, continuation], i) => {
      const from = count(contexts.indexOf(context));
      const to = count(contexts.length + i);
      if (to <= from) {
        // The counts do not add up: the candidate would get no tokens and a score of 0.
        throw new LlmRequestError(
          `${this.completionsUrl}: the prompt with the candidate ${JSON.stringify(continuation.slice(0, 40))} has ${to} tokens, the prompt alone ${from}: the candidate has no tokens of its own`,
          undefined,
          false,
        );
      }
      const whole = lps[contexts.length + i] as (number | null)[];
      const alone = lps[contexts.indexOf(context)] as (number | null)[];
      const agree = alone.slice(1, from - 1).every((v, k) => closeLogprob(v, whole[k + 1]));
      return agree ? { from, to, lp: whole.slice(from, to) } : undefined;
    });
    if (!split.every((x) => x !== undefined)) return undefined;
    const logprobs = split.map(({ lp }) =>
      lp.some((v) => typeof v !== 'number') ? null : (lp as number[]).reduce((a, b) => a + b, 0),
    );
    this.refuseEqualScores(logprobs);
    return {
      logprobs,
      tokens: split.map((x) => x.to - x.from),
      positions: lps.reduce((n, _, i) => n + count(i), 0),
      ...(lps.usage ? { usage: lps.usage } : {}),
    };
  }

  /**
   * Different texts never get exactly the same total from a model; a server that gives every candidate the same (all
   * zeros, a constant, a tokenizer that drops the candidate's own tokens) would make the first one the answer.
   */
  private refuseEqualScores(logprobs: readonly (number | null)[]): void {
    const scored = logprobs.filter((v): v is number => v !== null);
    if (scored.length >= 2 && scored.length === logprobs.length && scored.every((v) => v === scored[0]))
      throw new LlmRequestError(
        `${this.completionsUrl}: every one of the ${scored.length} candidates has the same log-probability (${scored[0]}): the server's log-probabilities do not depend on the text, which no model does`,
        200,
        false,
        { impossible: true },
      );
  }
}

/** One token's log-probability, read twice (two prompts, or one prompt sent two ways): the same up to float noise. */
/**
 * Whether tokens a server echoed re-join to the text that was sent. Tolerant of what tokenizers show differently and
 * strict about what was scored: whitespace is left out of the comparison (SentencePiece's `▁`, a prefix space), a
 * leading special token the text does not hold (BOS: `<s>`, `<|begin_of_text|>`) is passed over, and a run of U+FFFD
 * (a token that holds part of a character, as vLLM shows one) stands for one to eight characters. A token more, one
 * less, or another prompt's tokens do not re-join.
 */
export function echoRejoins(tokens: readonly unknown[], text: string): boolean {
  if (!tokens.every((t): t is string => typeof t === 'string')) return false;
  const bare = (x: string) => x.replace(/[\s\u2581]+/gu, '');
  const want = bare(text);
  const matches = (joined: string): boolean => {
    const got = bare(joined);
    if (!got.includes('\uFFFD')) return got === want;
    const pattern = got
      .split(/\uFFFD+/u)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]{1,8}');
    return new RegExp(`^${pattern}$`, 'u').test(want);
  };
  const joined = tokens.join('');
  return matches(joined) || (tokens.length > 0 && matches(joined.slice((tokens[0] as string).length)));
}

function closeLogprob(x: number | null | undefined, y: number | null | undefined): boolean {
  return typeof x === 'number' && typeof y === 'number' && Math.abs(x - y) <= 1e-4 * (1 + Math.abs(x));
}

/**
 * Why a server's prompt log-probabilities cannot be read by position, or undefined. `lp` answers a prompt of n tokens;
 * `withA` and `withB` the same prompt followed by two different tokens. With echo and max_tokens 1 a reply holds one
 * value per prompt token (the first null: nothing precedes it), then the generated token's: n + 1 values (n where the
 * server generates none). Appending a token must then leave the prompt's own n values as they were and put that
 * token's log-probability at position n, which differs for two different tokens (at most one of them is what the
 * model would have generated). A server whose values sit one place late (`[null, lp(tok 0), …, lp(tok n−1)]`, n + 1
 * values and no generated token) answers position n with the prompt's last token whatever is appended: every answer
 * would be read from the wrong positions, so the run is refused.
 */
export function loglikLayoutProblem(
  lp: readonly (number | null)[],
  withA: readonly (number | null)[],
  withB: readonly (number | null)[],
): string | undefined {
  const n = withA.length - 2;
  if (withB.length !== withA.length || (lp.length !== n + 1 && lp.length !== n))
    return `a prompt of n tokens and the same with one more came back with ${lp.length} and ${withA.length} log-probabilities, not n (+1 generated) and n + 1 (+1)`;
  for (let k = 1; k < n; k++)
    if (!closeLogprob(lp[k], withA[k]) || !closeLogprob(lp[k], withB[k]))
      return `appending a token changed the log-probability of prompt token ${k} (${lp[k]} → ${withA[k]}, ${withB[k]}): the values do not sit one per prompt token`;
  if (
    lp.length === n + 1 &&
    closeLogprob(withA[n], lp[n]) &&
    closeLogprob(withB[n], lp[n]) &&
    withA[n] === withB[n]
  )
    return `two different tokens appended to a prompt got the same log-probability (${withA[n]}), the one the prompt's last position had: the values sit one place late ([null, lp(token 0), …]), as no layout we can read`;
  return undefined;
}
