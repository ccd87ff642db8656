import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { judgeReply, splitReply } from '../tasks/reply-check.js';
import { buildMessages } from './prompt.js';

const danet = getTask('RuMedDaNet');
const record = {
  id: 'x1',
  gold: 'да',
  raw: { context: 'Аспирин снижает свёртываемость крови.', question: 'Влияет ли аспирин на свёртываемость?' },
};
const messages = buildMessages(danet, record as never, [], { shots: 0, seed: 0, context: {} });
const instruction = (messages.find((m) => m.role === 'user')?.content ?? '').split('\n\n')[0] as string;

const judge = (text: string, finish: string | undefined, m = messages, reasoning?: string) =>
  judgeReply(splitReply(text, reasoning), finish, m);

describe('splitReply', () => {
  it('keeps the answer apart from reasoning given as a field, inline, or opened by the chat template', () => {
    expect(splitReply('Ответ: да', 'Думаю: да или нет?')).toEqual({
      answer: 'Ответ: да',
      reasoning: 'Думаю: да или нет?',
      unclosed: false,
    });
    expect(splitReply('<think>Ответ: нет?</think>\nОтвет: да')).toEqual({
      answer: 'Ответ: да',
      reasoning: 'Ответ: нет?',
      unclosed: false,
    });
    // DeepSeek-R1's distillations: the template opens the block, the reply only closes it.
    expect(splitReply('взвесим «нет»…</think>\n\nОтвет: да')).toEqual({
      answer: 'Ответ: да',
      reasoning: 'взвесим «нет»…',
      unclosed: false,
    });
    expect(splitReply('Ответ: да <thinking>a')).toEqual({
      answer: 'Ответ: да',
      reasoning: 'a',
      unclosed: true,
    });
    expect(splitReply('Ответ: да')).toEqual({ answer: 'Ответ: да', unclosed: false });
  });
});

describe('judgeReply', () => {
  it('reads plain answers, short quotes and reasoning that quotes the instruction', () => {
    expect(judge('Ответ: да', 'stop', messages)).toBeUndefined();
    expect(judge('Да, влияет. Ответ: да', 'stop', messages)).toBeUndefined();
    expect(judge(`<think>Меня просят: ${instruction}</think>\nОтвет: нет`, 'stop', messages)).toBeUndefined();
  });

  it('flags the prompt returned as the reply, whole or in part, with other spacing or case', () => {
    expect(judge(messages.map((m) => m.content).join('\n'), 'stop', messages)).toBe('echo');
    expect(judge(instruction.toUpperCase().replace(/ /g, '  '), 'stop', messages)).toBe('echo');
  });

  it('tells cut-off, filtered and empty replies apart', () => {
    expect(judge('Рассмотрим текст', 'length', messages)).toBe('truncated');
    expect(judge('Ответ: да', 'length', messages)).toBe('truncated');
    expect(judge('<think>Сначала подумаем', 'length', messages)).toBe('truncated_in_reasoning');
    expect(judge('<think>a</think> <think>b', undefined, messages)).toBe('truncated_in_reasoning');
    expect(judge('', 'content_filter', messages)).toBe('filtered');
    expect(judge('Не могу ответить', 'content_filter', messages)).toBe('filtered');
    expect(judge('  \n', 'stop', messages)).toBe('empty');
    // Reasoning given apart and no answer: cut off while reasoning if the token limit ended it, else empty.
    expect(judge('', 'length', messages, 'Сначала подумаем')).toBe('truncated_in_reasoning');
    expect(judge('', 'stop', messages, 'Сначала подумаем')).toBe('empty');
    expect(judge('Ответ: да', 'stop', messages, 'Сначала подумаем')).toBeUndefined();
  });
});
