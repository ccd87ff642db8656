/**
 * Anthropic's Messages API (`POST /v1/messages`), through the resilient client every protocol uses (./client.ts: the
 * transport, retries, reply cap, circuit breaker and failure rules): only the request and the reply are its own. The key travels as `x-api-key` with the API
 * version in `anthropic-version`; the system prompt is a field apart from the messages; `max_tokens` is required;
 * thinking (`--thinking-budget`) is `thinking: { type: 'enabled', budget_tokens }` and comes back as thinking
 * blocks, kept apart from the answer. The API gives no log-probabilities: generation only.
 */

import { UsageError } from '../errors.js';
import type { ProviderInfo } from '../scoring/run-log.js';
import { type ClientOptions, LlmRequestError, snippet } from './client.js';
import type { CachePricing } from './cost.js';
import type { LoglikRequest, LoglikResult } from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { ChatReply, Provider, SamplingParams } from './provider.js';
import { ServerProvider } from './server-provider.js';
import { tokenCount } from './usage.js';

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com/v1';
/** The API version the requests are written for (Anthropic's header; the current one since 2023). */
export const ANTHROPIC_VERSION = '2023-06-01';
/** Anthropic's least thinking budget. */
export const MIN_THINKING_BUDGET = 1024;

/**
 * Cache reads at 0.1× and writes at 1.25× of the prompt price: Anthropic's documented multipliers for the 5-minute
 * cache (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing).
 */
export const ANTHROPIC_CACHE_PRICING: CachePricing = { cached: (p) => p / 10, cacheWrite: (p) => p * 1.25 };

const NO_LOGLIK =
  "Anthropic's Messages API returns no log-probabilities: score by generation (--mode generate), or use a server that returns them (vLLM)";

export interface MessagesBody {
  model?: unknown;
  content?: { type?: unknown; text?: unknown; thinking?: unknown }[];
  stop_reason?: unknown;
  usage?: {
    input_tokens?: unknown;
    output_tokens?: unknown;
    cache_read_input_tokens?: unknown;
    cache_creation_input_tokens?: unknown;
  };
}

/** Anthropic's stop reasons in the OpenAI words the rest of the harness reads (`length` is what a token cap says). */
const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  refusal: 'content_filter',
};

/** The system prompt apart from the messages, as the Messages API takes it. */
function splitSystem(messages: readonly ChatMessage[]): { system?: string; messages: ChatMessage[] } {
  const system = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  return {
    ...(system !== '' ? { system } : {}),
    messages: messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content })),
  };
}

export class AnthropicProvider extends ServerProvider implements Provider {
  constructor(private readonly options: ClientOptions & { model: string }) {
    // The key travels as `x-api-key`, with the API version the requests are written for.
    super(`${options.baseUrl.replace(/\/+$/, '')}/messages`, options, () => ({
      'anthropic-version': ANTHROPIC_VERSION,
      ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}),
    }));
  }

  describe(): ProviderInfo {
    return { provider: 'anthropic', endpoint: this.url, model: this.options.model };
  }

  async chat(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    return this.client.retrying(() => this.ask(messages, params));
  }

  async checkLoglik(): Promise<void> {
    throw new UsageError(NO_LOGLIK);
  }

  async loglik(_request: LoglikRequest): Promise<LoglikResult> {
    throw new UsageError(NO_LOGLIK);
  }

  async loglikLimitation(): Promise<string | undefined> {
    return NO_LOGLIK;
  }

  async contextTokens(): Promise<number | undefined> {
    return undefined;
  }

  /** Anthropic's own count of a request's prompt tokens (`/v1/messages/count_tokens`, free of charge). */
  async countChatTokens(messages: readonly ChatMessage[]): Promise<number | undefined> {
    const url = `${this.url}/count_tokens`;
    return this.client.retrying(async () => {
      const { json, status } = await this.client.post<{ input_tokens?: unknown }>(url, {
        model: this.options.model,
        ...splitSystem(messages),
      });
      const n = json?.input_tokens;
      if (!Number.isSafeInteger(n) || (n as number) < 0)
        throw new LlmRequestError(`${url}: not a token count (HTTP ${status})`, status, false);
      return n as number;
    });
  }

  private async ask(messages: readonly ChatMessage[], params: SamplingParams): Promise<ChatReply> {
    const { json, text, status } = await this.client.post<MessagesBody>(
      this.url,
      this.messageBody(messages, params),
    );
    return this.readMessage(json, text, status);
  }

  /** A request's body: the same online and in a Message Batch. */
  messageBody(messages: readonly ChatMessage[], params: SamplingParams): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: this.options.model,
      max_tokens: params.maxTokens,
      ...splitSystem(messages),
    };
    if (params.stop && params.stop.length > 0) body.stop_sequences = params.stop;
    // Thinking takes the API's own sampling: a temperature beside it is refused by the API.
    if (params.thinkingBudget !== undefined)
      body.thinking = { type: 'enabled', budget_tokens: params.thinkingBudget };
    else body.temperature = params.temperature;
    return body;
  }

  /** A message read, or why it cannot be (an online reply, or a succeeded result of a batch). */
  readMessage(json: MessagesBody | undefined, text: string, status: number): ChatReply {
    if (!json || typeof json !== 'object' || !Array.isArray(json.content)) {
      throw new LlmRequestError(
        `${this.url}: the reply is not a message (no content blocks): ${snippet(text)}`,
        status,
        true,
        { malformed: true },
      );
    }
    const blocks = json.content.filter(
      (b): b is NonNullable<typeof b> => typeof b === 'object' && b !== null,
    );
    const texts = blocks.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text);
    const thinking = blocks
      .filter((b) => b.type === 'thinking' && typeof b.thinking === 'string')
      .map((b) => b.thinking as string);
    const stop = typeof json.stop_reason === 'string' ? json.stop_reason.slice(0, 100) : undefined;
    if (texts.length === 0 && thinking.length === 0 && stop !== 'max_tokens' && stop !== 'refusal') {
      throw new LlmRequestError(
        `${this.url}: the reply has no text (${blocks.some((b) => b.type === 'tool_use') ? 'the model called a tool instead of answering' : `stop_reason ${stop ?? 'missing'}`})`,
        status,
        false,
      );
    }
    const input = tokenCount(json.usage?.input_tokens);
    const output = tokenCount(json.usage?.output_tokens);
    const cacheRead = tokenCount(json.usage?.cache_read_input_tokens) ?? 0;
    const cacheWrite = tokenCount(json.usage?.cache_creation_input_tokens) ?? 0;
    const usageGiven = json.usage !== undefined && json.usage !== null;
    const usageOk = usageGiven && input !== undefined && output !== undefined;
    return {
      text: texts.join(''),
      ...(thinking.length > 0 ? { reasoning: thinking.join('\n\n') } : {}),
      // Anthropic counts cached prompt tokens apart from `input_tokens`; the ledger's prompt tokens are all of them,
      // cache reads and writes kept apart as parts of them (they are billed at their own prices: ./cost.ts).
      // Its thinking tokens are inside `output_tokens`, not counted apart: left absent, not guessed.
      ...(usageOk
        ? {
            usage: {
              promptTokens: input + cacheRead + cacheWrite,
              completionTokens: output,
              ...(json.usage?.cache_read_input_tokens !== undefined ? { cachedPromptTokens: cacheRead } : {}),
              ...(json.usage?.cache_creation_input_tokens !== undefined
                ? { cacheWriteTokens: cacheWrite }
                : {}),
            },
          }
        : {}),
      ...(usageGiven && !usageOk
        ? {
            usageProblem: `token counts that are not whole numbers ≥ 0: ${JSON.stringify(json.usage).slice(0, 200)}`,
          }
        : {}),
      ...(stop !== undefined ? { finishReason: FINISH[stop] ?? stop } : {}),
      ...(typeof json.model === 'string' ? { model: json.model.slice(0, 200) } : {}),
    };
  }
}
