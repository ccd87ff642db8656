/** RuMedSymptomRec: the symptom a doctor should check next, given an incomplete description. */
import { parseSymptomList } from './parse.js';
import type { PromptContext, RankingTask } from './types.js';

const SYMPTOM_FORMAT = 'Последняя строка ответа: «Ответ: симптом1; симптом2; симптом3».';
const inventory = (ctx: PromptContext) => (ctx.labels ?? []).join('; ');
const SYMPTOM_INSTRUCTION = (ctx: PromptContext) =>
  'По описанию состояния пациента определи, какой симптом врачу следует проверить или уточнить следующим. ' +
  'Назови три наиболее вероятных симптома в порядке убывания вероятности, выбирая только из списка: ' +
  `${inventory(ctx)}. ${SYMPTOM_FORMAT}`;

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
    instruction: SYMPTOM_INSTRUCTION,
    render: (raw) => `Описание: ${String(raw.symptoms)}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction:
        'По описанию состояния пациента определи, какой симптом врачу следует проверить следующим.',
      candidates: (_raw, ctx) => (ctx.labels ?? []).map((label) => ({ label, text: ` ${label}` })),
    },
    variants: [
      { id: 'p1', version: 'symptomrec-v1', instruction: SYMPTOM_INSTRUCTION },
      {
        id: 'p2',
        version: 'symptomrec-p2-v1',
        instruction: (ctx) =>
          'Ты терапевт на приёме. Какой симптом стоит уточнить у пациента следующим? Назови три, выбирая только ' +
          `из списка, от самого важного к менее важному: ${inventory(ctx)}. ${SYMPTOM_FORMAT}`,
      },
      {
        id: 'p3',
        version: 'symptomrec-p3-v1',
        instruction: (ctx) =>
          'Продолжи сбор анамнеза: назови три симптома из списка, о которых следует спросить пациента в первую ' +
          `очередь, по убыванию вероятности. Список: ${inventory(ctx)}. ${SYMPTOM_FORMAT}`,
      },
      {
        id: 'p4',
        version: 'symptomrec-p4-v1',
        instruction: (ctx) =>
          'По описанию состояния выбери из перечня три симптома, наличие которых врачу важнее всего проверить ' +
          `дальше (сначала самый вероятный). Перечень: ${inventory(ctx)}. ${SYMPTOM_FORMAT}`,
      },
      {
        id: 'p5',
        version: 'symptomrec-p5-v1',
        instruction: (ctx) =>
          'Какие три симптома из списка вероятнее всего есть у этого пациента, хотя ещё не названы? Упорядочь их ' +
          `по убыванию вероятности. Список: ${inventory(ctx)}. ${SYMPTOM_FORMAT}`,
      },
    ],
    parse: (reply, _raw, ctx) => parseSymptomList(reply, ctx.labels ?? []),
  },
  recordFields: {
    idx: { type: 'text' },
    symptoms: { type: 'text' },
    code: { type: 'label', optional: true },
  },
} as const satisfies RankingTask<'RuMedSymptomRec'>;
