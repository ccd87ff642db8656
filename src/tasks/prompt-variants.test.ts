/** Every task's formulations of its instruction (prompt sensitivity, `llm --prompts`): enough, distinct, readable. */
import { describe, expect, it } from 'vitest';
import { TASKS } from './registry.js';

const CTX = { labels: ['головная боль', 'кашель', 'слабость'] };
/** The sentence that tells the model the answer's form: the same in every formulation, so one parser reads all. */
const formatOf = (instruction: string) =>
  instruction.slice(
    Math.max(instruction.indexOf('Последняя строка ответа'), instruction.indexOf('Верни только JSON')),
  );

describe('prompt formulations', () => {
  it('give every task at least five, p1 its own instruction, ids and versions distinct', () => {
    for (const task of TASKS) {
      const v = task.prompt.variants;
      expect([task.name, v.length >= 5]).toEqual([task.name, true]);
      expect(v.map((x) => x.id)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
      expect(new Set(v.map((x) => x.version)).size).toBe(v.length);
      expect(v[0]?.version).toBe(task.prompt.version);
      expect(v[0]?.instruction(CTX)).toBe(task.prompt.instruction(CTX));
      expect(new Set(v.map((x) => x.instruction(CTX))).size).toBe(v.length);
    }
  });

  it('ask for the answer in the same form in every formulation, the inventory listed where the task needs it', () => {
    for (const task of TASKS) {
      const format = formatOf(task.prompt.instruction(CTX));
      expect([task.name, format.length > 20]).toEqual([task.name, true]);
      for (const v of task.prompt.variants) {
        const text = v.instruction(CTX);
        expect([task.name, v.id, text.endsWith(format)]).toEqual([task.name, v.id, true]);
        if (task.name === 'RuMedSymptomRec') expect(text).toContain('головная боль; кашель; слабость');
      }
    }
  });
});
