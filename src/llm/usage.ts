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

/**
 * The flag of a reply that gave no token counts at all (`usage` absent or null): a proxy may strip them, and the
 * server still bills, so its tokens are estimated as unreadable counts are, never taken as none.
 */
export const NO_USAGE = 'no token counts (the reply has no usage)';
