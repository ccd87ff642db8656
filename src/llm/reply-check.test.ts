import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import { buildMessages } from './prompt.js';
import { judgeReply } from './reply-check.js';

const danet = getTask('RuMedDaNet');
const record = {
  id: 'x1',
  gold: 'да',
  raw: { context: 'Аспирин снижает свёртываемость крови.', question: 'Влияет ли аспирин на свёртываемость?' },
};
const messages = buildMessages(danet, record as never, [], { shots: 0, seed: 0, context: {} });
const instruction = (messages.find((m) => m.role === 'user')?.content ?? '').split('\n\n')[0] as string;

describe('judgeReply', () => {
  it('reads plain answers, short quotes and reasoning that quotes the instruction', () => {
    expect(judgeReply('Ответ: да', 'stop', messages)).toBeUndefined();
    expect(judgeReply('Да, влияет. Ответ: да', 'stop', messages)).toBeUndefined();
    expect(
      judgeReply(`<think>Меня просят: ${instruction}</think>\nОтвет: нет`, 'stop', messages),
    ).toBeUndefined();
  });

  it('flags the prompt returned as the reply, whole or in part, with other spacing or case', () => {
    expect(judgeReply(messages.map((m) => m.content).join('\n'), 'stop', messages)).toBe('echo');
    expect(judgeReply(instruction.toUpperCase().replace(/ /g, '  '), 'stop', messages)).toBe('echo');
  });

  it('tells cut-off, filtered and empty replies apart', () => {
    expect(judgeReply('Рассмотрим текст', 'length', messages)).toBe('truncated');
    expect(judgeReply('Ответ: да', 'length', messages)).toBe('truncated');
    expect(judgeReply('<think>Сначала подумаем', 'length', messages)).toBe('truncated_in_reasoning');
    expect(judgeReply('<think>a</think> <think>b', undefined, messages)).toBe('truncated_in_reasoning');
    expect(judgeReply('', 'content_filter', messages)).toBe('filtered');
    expect(judgeReply('Не могу ответить', 'content_filter', messages)).toBe('filtered');
    expect(judgeReply('  \n', 'stop', messages)).toBe('empty');
  });
});
