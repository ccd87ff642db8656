/**
 * A reply judged before it is parsed. A parser reads whatever text it is given, so a server that echoes the prompt
 * gets the answer its instruction spells out («Ответ: да» или «Ответ: нет» reads as "нет"), and a reply cut off by
 * the token limit or withheld by a filter is an unreadable answer for a reason the user can fix. These are told apart
 * and counted, never scored as a model's answer.
 */
import type { ChatMessage } from './prompt.js';

/**
 * - `echo`: the reply repeats a sentence of the system prompt or the task's instruction;
 * - `filtered`: the server withheld the reply (`finish_reason: content_filter`);
 * - `empty`: no text at all;
 * - `truncated_in_reasoning`: a reasoning block (`<think>`) that never closes: the token limit came first;
 * - `truncated`: `finish_reason: length` (the answer may still have been given before the cut).
 */
export type ReplyFlag = 'echo' | 'filtered' | 'empty' | 'truncated_in_reasoning' | 'truncated';

export const REPLY_FLAGS: readonly ReplyFlag[] = [
  'echo',
  'filtered',
  'empty',
  'truncated_in_reasoning',
  'truncated',
];

/** Sentences shorter than this are not matched: a model may well write "Ответ: да" or quote a few words. */
const MIN_SENTENCE = 24;

const fold = (t: string) => t.replace(/\s+/g, ' ').trim().toLowerCase();

const sentencesCache = new Map<string, string[]>();

/** The prompt's own sentences: the system prompt's and the instruction's (the first user message up to its first blank line). */
function promptSentences(messages: readonly ChatMessage[]): string[] {
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const user = messages.find((m) => m.role === 'user')?.content ?? '';
  const instruction = user.split(/\n\s*\n/)[0] ?? '';
  const key = `${system}\u0000${instruction}`;
  const cached = sentencesCache.get(key);
  if (cached) return cached;
  const found = [system, instruction]
    .flatMap((t) => t.split(/(?<=[.!?])\s+|\n+/))
    .map(fold)
    .filter((s) => s.length >= MIN_SENTENCE);
  if (sentencesCache.size > 1000) sentencesCache.clear();
  sentencesCache.set(key, found);
  return found;
}

const THINK_OPEN = /<(think|thinking|reasoning)>/gi;

/** A reasoning block opened last and never closed. */
function unclosedReasoning(reply: string): boolean {
  let last: RegExpExecArray | null = null;
  for (const m of reply.matchAll(THINK_OPEN)) last = m as RegExpExecArray;
  if (!last) return false;
  const rest = reply.slice((last.index ?? 0) + last[0].length);
  return !new RegExp(`</${last[1]}>`, 'i').test(rest);
}

/** The flag of a reply, or undefined for a reply to be read as it is. */
export function judgeReply(
  reply: string,
  finishReason: string | undefined,
  messages: readonly ChatMessage[],
): ReplyFlag | undefined {
  if (finishReason === 'content_filter') return 'filtered';
  if (reply.trim() === '') return 'empty';
  if (unclosedReasoning(reply)) return 'truncated_in_reasoning';
  const visible = fold(reply.replace(/<(think|thinking|reasoning)>[\s\S]*?<\/\1>/gi, ' '));
  if (promptSentences(messages).some((s) => visible.includes(s))) return 'echo';
  if (finishReason === 'length') return 'truncated';
  return undefined;
}

/** Why a flagged reply is not read (the sample's `reason`), with what to do about it. */
export function flagReason(flag: ReplyFlag, finishReason: string | undefined): string {
  switch (flag) {
    case 'echo':
      return "echo: the reply repeats the prompt's instruction; it is not read as an answer";
    case 'filtered':
      return 'filtered: the server withheld the reply (finish_reason content_filter)';
    case 'empty':
      return `empty: the reply has no text${finishReason ? ` (finish_reason ${finishReason})` : ''}`;
    case 'truncated_in_reasoning':
      return 'truncated in reasoning: the token limit came before the reasoning block closed; raise --max-tokens';
    case 'truncated':
      return 'truncated: cut off by the token limit (finish_reason length) before an answer; raise --max-tokens';
  }
}
