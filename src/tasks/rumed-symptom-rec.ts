/** RuMedSymptomRec: the symptom a doctor should check next, given an incomplete description. */
import { z } from 'zod';
import { text } from './fields.js';
import { parseSymptomList } from './parse.js';
import type { RankingTask } from './types.js';

export const rumedSymptomRec = {
  name: 'RuMedSymptomRec',
  title: 'symptom to check next',
  guidelines:
    'Прочитайте описание состояния пациента и выберите до трёх симптомов, которые врачу следует проверить или уточнить следующими, в порядке убывания важности. Начните вводить название симптома и выберите его из списка; порядок меняется кнопками ↑ ↓, лишний симптом убирается кнопкой ×. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'ranking',
  idField: 'idx',
  goldField: 'code',
  inputFields: ['symptoms'],
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'hit_at_3'],
  // Free-text symptom names: anything non-blank is well formed; names outside the train inventory are counted.
  labelPattern: /\S/,
  labelDescription: 'a symptom name from the train inventory, such as "сухой кашель"',
  prompt: {
    version: 'symptomrec-v1',
    system: 'Ты опытный врач-терапевт. Отвечай кратко и строго в требуемом формате.',
    instruction: (ctx) =>
      'По описанию состояния пациента определи, какой симптом врачу следует проверить или уточнить следующим. ' +
      'Назови три наиболее вероятных симптома в порядке убывания вероятности, выбирая только из списка: ' +
      `${(ctx.labels ?? []).join('; ')}. Последняя строка ответа: «Ответ: симптом1; симптом2; симптом3».`,
    render: (raw) => `Описание: ${String(raw.symptoms)}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction:
        'По описанию состояния пациента определи, какой симптом врачу следует проверить следующим.',
      candidates: (_raw, ctx) => (ctx.labels ?? []).map((label) => ({ label, text: ` ${label}` })),
    },
    parse: (reply, _raw, ctx) => parseSymptomList(reply, ctx.labels ?? []),
  },
  recordSchema: z.looseObject({ idx: text, symptoms: text, code: text.optional() }),
} as const satisfies RankingTask<'RuMedSymptomRec'>;
