/** What the harness needs of a model: chat completions, and log-probabilities of continuations where it can. */
import type { ProviderInfo } from '../scoring/run-log.js';
import type { LoglikRequest, LoglikResult } from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { Usage } from './usage.js';

export type { Usage } from './usage.js';

export interface SamplingParams {
  /** 0 by default: the same prompt gives the same answer where the server honours it. */
  temperature: number;
  maxTokens: number;
  seed?: number;
  stop?: string[];
  /** Reasoning models: how hard to think (OpenAI's `reasoning_effort`). */
  reasoningEffort?: 'low' | 'medium' | 'high';
  /** Reasoning models: the most tokens to think with (Anthropic's `thinking.budget_tokens`; a chat template's). */
  thinkingBudget?: number;
}

export interface ChatReply {
  text: string;
  /** The model's reasoning, where the server gives it apart from the text (`reasoning_content`, thinking blocks). */
  reasoning?: string;
  usage?: Usage;
  /** Why the reply's token counts were not taken (negative, fractional, not numbers). */
  usageProblem?: string;
  finishReason?: string;
  /** The model the server says answered (a router may serve another than asked). */
  model?: string;
}

/** Per-request hints a provider may use: a JSON schema the answer must follow (constrained decoding). */
export interface ChatHints {
  jsonSchema?: object;
}

export interface Provider {
  /** For the manifest: provider, endpoint or file, model (its schema: scoring/run-log.ts). */
  describe(): ProviderInfo;
  chat(messages: readonly ChatMessage[], params: SamplingParams, hints?: ChatHints): Promise<ChatReply>;
  /** Scores continuations of a prompt by log-probability (`--mode loglik`); absent where the engine cannot. */
  loglik?(request: LoglikRequest): Promise<LoglikResult>;
  /** Checks, before a log-likelihood run, that the engine returns prompt log-probabilities; throws why not. */
  checkLoglik?(): Promise<void>;
  /**
   * Why the engine's log-likelihood method cannot score an item's candidates (too many, or several tokens each,
   * for a method that sees only the top k next tokens); undefined where it can. Asked of each task's first item.
   */
  loglikLimitation?(request: LoglikRequest): Promise<string | undefined>;
  /** The most tokens one sequence may hold, prompt and continuation, where the engine says (vLLM, a GGUF context). */
  contextTokens?(): Promise<number | undefined>;
  /** How many tokens a text makes with the model's tokenizer. */
  countTokens?(text: string): Promise<number>;
  /**
   * The prompt tokens of a chat request as the server counts them, its chat template included (vLLM's /tokenize of
   * messages, Anthropic's count_tokens); undefined where the server cannot say.
   */
  countChatTokens?(messages: readonly ChatMessage[]): Promise<number | undefined>;
  /** Bounds the requests the provider has in flight at once (a run's `concurrency`, whatever sends them). */
  limitInFlight?(n: number): void;
  /**
   * Runs `check` before every retry (after its wait): a queue worker that may have been declared lost meanwhile beats
   * first, and a retry of a job no longer its own throws instead of going out.
   */
  checkBeforeRetry?(check: () => Promise<void>): void;
  /**
   * Milliseconds until the server's circuit breaker, open after an outage, lets a request try again (0 when closed).
   * A queue worker waits this out before a new job, so that a job taken just after an outage (`plan retry` once the
   * cause is fixed) tries the server instead of failing without a request sent.
   */
  breakerWaitMs?(): number;
  close?(): Promise<void>;
}
