/**
 * A reply judged before it is parsed. A parser reads whatever text it is given, so a server that echoes the prompt
 * gets the answer its instruction spells out («Ответ: да» или «Ответ: нет» reads as "нет"), and a reply cut off by
 * the token limit or withheld by a filter is an unreadable answer for a reason the user can fix. These are told apart
 * and counted, never scored as a model's answer.
 */
import { say } from './reasons.js';
import type { PromptContext, TaskDefinition } from './types.js';

/** A message as sent (src/llm/prompt.ts's ChatMessage, or one read back from lm-eval's samples). */
export interface SentMessage {
  readonly role: string;
  readonly content: string;
}

/**
 * - `echo`: the reply repeats a sentence of the system prompt or the task's instruction;
 * - `filtered`: the server withheld the reply (`finish_reason: content_filter`);
 * - `empty`: no text at all;
 * - `truncated_in_reasoning`: a reasoning block (`<think>`) that never closes, or reasoning and no answer with
 *   `finish_reason: length`: the token limit came first;
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
function promptSentences(messages: readonly SentMessage[]): string[] {
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

/** A reply's answer apart from its reasoning. */
export interface SplitReply {
  /** The text the task's parser reads: the reply without its reasoning blocks. */
  answer: string;
  /** The reasoning: the server's field (`reasoning_content`, `reasoning`, Anthropic's thinking) and inline blocks. */
  reasoning?: string;
  /** A reasoning block opened and never closed: the token limit came first. */
  unclosed: boolean;
}

const TAG = '(think|thinking|reasoning)';
const BLOCK = new RegExp(`<${TAG}>([\\s\\S]*?)</\\1>`, 'gi');
const OPEN = new RegExp(`<${TAG}>`, 'i');
const CLOSE = new RegExp(`</${TAG}>`, 'i');

/**
 * Splits a reply into its answer and its reasoning. Reasoning comes as a field of the reply (vLLM's and DeepSeek's
 * `reasoning_content`, newer vLLM's `reasoning`, Anthropic's thinking blocks) or inline, as `<think>…</think>`
 * blocks; a chat template that opens the block itself (DeepSeek-R1's distillations, Qwen3's) leaves a reply that
 * only closes it, everything before the close being reasoning. A block never closed makes the rest reasoning.
 */
export function splitReply(text: string, reasoningField?: string): SplitReply {
  const parts: string[] = [];
  if (reasoningField !== undefined && reasoningField.trim() !== '') parts.push(reasoningField.trim());
  let answer = text;
  const close = CLOSE.exec(answer);
  const open = OPEN.exec(answer);
  if (close && (!open || open.index > close.index)) {
    parts.push(answer.slice(0, close.index).trim());
    answer = answer.slice(close.index + close[0].length);
  }
  answer = answer.replace(BLOCK, (_m, _tag, inner: string) => {
    parts.push(inner.trim());
    return ' ';
  });
  let unclosed = false;
  const left = OPEN.exec(answer);
  if (left) {
    unclosed = true;
    parts.push(answer.slice(left.index + left[0].length).trim());
    answer = answer.slice(0, left.index);
  }
  const reasoning = parts.filter((p) => p !== '').join('\n\n');
  return { answer: answer.trim(), ...(reasoning !== '' ? { reasoning } : {}), unclosed };
}

/** The flag of a reply (split by {@link splitReply}), or undefined for a reply to be read as it is. */
export function judgeReply(
  reply: SplitReply,
  finishReason: string | undefined,
  messages: readonly SentMessage[],
): ReplyFlag | undefined {
  if (finishReason === 'content_filter') return 'filtered';
  if (reply.unclosed) return 'truncated_in_reasoning';
  if (reply.answer === '')
    return reply.reasoning !== undefined && finishReason === 'length' ? 'truncated_in_reasoning' : 'empty';
  const visible = fold(reply.answer);
  if (promptSentences(messages).some((s) => visible.includes(s))) return 'echo';
  if (finishReason === 'length') return 'truncated';
  return undefined;
}

/** Why a flagged reply is not read (the sample's `reason`), with what to do about it. */
export function flagReason(flag: ReplyFlag, finishReason: string | undefined): string {
  switch (flag) {
    case 'echo':
      return say('ECHO');
    case 'filtered':
      return say('FILTERED');
    case 'empty':
      return finishReason ? say('EMPTY_FINISH', finishReason) : say('EMPTY');
    case 'truncated_in_reasoning':
      return say('TRUNCATED_IN_REASONING');
    case 'truncated':
      return say('TRUNCATED');
  }
}

/** A reply as read: the parser's answer, or why there is none. */
export type ReadReply =
  | { status: 'parsed'; answer: string | string[]; notes: string[]; flag?: ReplyFlag }
  | { status: 'unparsed'; answer: null; reason: string; flag?: ReplyFlag };

/**
 * The one reading of a generated reply, for `rumedbench llm` (src/llm/outputs.ts) and for lm-eval's generation
 * samples (src/scoring/lm-eval.ts): reasoning split off, the reply judged, then the task's parser on the answer
 * alone. An echo, a filtered or empty reply, or one cut off inside its reasoning is never read as an answer; an
 * unparseable reply is unparsed, never defaulted to a label.
 */
export function readReply(
  task: TaskDefinition,
  reply: { text: string; reasoning?: string; finishReason?: string },
  asked: {
    messages: readonly SentMessage[];
    raw: Readonly<Record<string, unknown>>;
    ctx: PromptContext;
  },
): ReadReply {
  const split = splitReply(reply.text, reply.reasoning);
  const flag = judgeReply(split, reply.finishReason, asked.messages);
  if (flag !== undefined && flag !== 'truncated')
    return { status: 'unparsed', answer: null, reason: flagReason(flag, reply.finishReason), flag };
  // The parser reads the answer alone: a reasoning that weighs «Ответ: да» against «нет» is not the answer.
  const p = task.prompt.parse(split.answer, asked.raw, asked.ctx);
  const flagged = flag ? { flag } : {};
  return p.status === 'parsed'
    ? { status: 'parsed', answer: p.answer, notes: p.notes, ...flagged }
    : {
        status: 'unparsed',
        answer: null,
        reason: flag ? say('FLAGGED', flagReason(flag, reply.finishReason), p.reason) : p.reason,
        ...flagged,
      };
}
