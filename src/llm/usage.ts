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

/** More tokens in one reply than any model's context holds: a count above it is not taken. */
export const MAX_USAGE_TOKENS = 1e7;

/**
 * A token count as a server gives it: a non-negative whole number, or undefined. A count written as a decimal text
 * (`"5123"`, as some gateways re-serialize usage) is that number: it is what the server bills, and reading it as
 * unreadable would price the reply at its bytes, which can be far less than what was billed (issue #58's red team).
 */
export function tokenCount(v: unknown): number | undefined {
  const n = typeof v === 'string' && /^\d{1,8}$/.test(v) ? Number(v) : v;
  return Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= MAX_USAGE_TOKENS
    ? (n as number)
    : undefined;
}
