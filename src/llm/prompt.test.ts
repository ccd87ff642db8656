import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { buildMessages, drawExamples, requestKey } from './prompt.js';

const rec = (id: string, gold: string, raw: Record<string, unknown>): TaskRecord => ({
  id,
  gold,
  raw,
  line: 1,
});
const danet = getTask('RuMedDaNet');
const train = Array.from({ length: 20 }, (_, i) =>
  rec(`t${i}`, i < 15 ? 'да' : 'нет', { context: `Текст ${i}`, question: `Вопрос ${i}?` }),
);

describe('prompts', () => {
  it('draws k examples with the seed, balanced over labels even when train is not', () => {
    const ex = drawExamples(danet, train, 4, 7);
    expect(ex.slice(0, 4).map((r) => r.gold)).toEqual(['да', 'нет', 'да', 'нет']);
    expect(drawExamples(danet, train, 4, 7)).toEqual(ex);
    expect(drawExamples(danet, train, 4, 8).map((r) => r.id)).not.toEqual(ex.map((r) => r.id));
  });

  it('builds system, instruction with the first example, answers as the model should give them, then the item', () => {
    const examples = drawExamples(danet, train, 2, 1);
    const item = rec('q', 'да', {
      context: 'Эпилепсия — хроническое заболевание мозга.',
      question: 'Это болезнь мозга?',
    });
    const m = buildMessages(danet, item, examples, { shots: 2, seed: 1, context: {} });
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(m[1]?.content.startsWith(danet.prompt.instruction({}))).toBe(true);
    expect(m[2]?.content).toMatch(/^Ответ: (да|нет)$/);
    expect(m[5]?.content).toBe(
      'Текст: Эпилепсия — хроническое заболевание мозга.\nВопрос: Это болезнь мозга?',
    );
  });

  it('never shows the item being asked as an example', () => {
    const examples = drawExamples(danet, train, 3, 2);
    const asked = examples[0] as TaskRecord;
    const m = buildMessages(danet, asked, examples, { shots: 3, seed: 2, context: {} });
    const shown = m.filter((x) => x.role === 'user').slice(0, -1);
    expect(shown).toHaveLength(3);
    expect(shown.some((x) => x.content.endsWith(danet.prompt.render(asked.raw)))).toBe(false);
  });

  it('takes overrides: no system prompt, another instruction, an item template', () => {
    const item = rec('q', 'да', { context: 'К', question: 'В?' });
    const m = buildMessages(danet, item, [], {
      shots: 0,
      seed: 0,
      system: '',
      template: { instruction: 'Ответь да или нет.', item: '{{question}} ({{context}})' },
      context: {},
    });
    expect(m).toEqual([{ role: 'user', content: 'Ответь да или нет.\n\nВ? (К)' }]);
  });

  it('writes NER examples as the JSON the parser reads back', () => {
    const ner = getTask('RuMedNER');
    const raw = { tokens: ['Виферон', 'вызвал', 'сыпь'] };
    const text = ner.prompt.answer(['B-Drugname', 'O', 'B-ADR'], raw);
    expect(JSON.parse(text)).toEqual([
      { text: 'Виферон', type: 'Drugname' },
      { text: 'сыпь', type: 'ADR' },
    ]);
    expect(ner.prompt.parse(text, raw, {})).toEqual({
      status: 'parsed',
      answer: ['B-Drugname', 'O', 'B-ADR'],
      notes: [],
    });
  });

  it('keys a request by its messages and sampling parameters', () => {
    const m = [{ role: 'user' as const, content: 'x' }];
    expect(requestKey(m, { t: 0 })).toBe(requestKey(m, { t: 0 }));
    expect(requestKey(m, { t: 0 })).not.toBe(requestKey(m, { t: 1 }));
  });
});
