/** A reply's token counts, as the server reported them: its own module, so that every client reads it without a circle. */

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Of the completion tokens, those spent reasoning, where the server says (OpenAI's `completion_tokens_details`). */
  reasoningTokens?: number;
  /** Of the prompt tokens, those read from a prompt cache, where the server says. */
  cachedPromptTokens?: number;
  /** Of the prompt tokens, those written to a prompt cache, where the server says (Anthropic's cache writes). */
  cacheWriteTokens?: number;
}
