/** RuMedTop3: the ICD-10 code (three characters) of a diagnosis from the patient's symptoms. */
import { parseIcd10List } from './parse.js';
import type { RankingTask } from './types.js';

const ICD10_CODE = /^[A-Z][0-9]{2}$/;

const TOP3_INSTRUCTION =
  'По жалобам пациента определи наиболее вероятный диагноз. Назови три наиболее вероятных кода МКБ-10 ' +
  '(три знака: латинская буква и две цифры, например M54), от самого вероятного к наименее вероятному. ' +
  'Последняя строка ответа: «Ответ: КОД1, КОД2, КОД3».';

export const rumedTop3 = {
  name: 'RuMedTop3',
  title: 'ICD-10 code from symptoms',
  guidelines:
    'Прочитайте жалобы пациента и выберите до трёх наиболее вероятных диагнозов — коды МКБ-10 из трёх знаков (например, M54) — в порядке убывания вероятности. Начните вводить код, выберите его из списка; порядок меняется кнопками ↑ ↓, лишний код убирается кнопкой ×. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'ranking',
  idField: 'idx',
  goldField: 'code',
  inputFields: ['symptoms'],
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'hit_at_3'],
  labelPattern: ICD10_CODE,
  labelDescription: 'a three-character ICD-10 code such as "M54" (Latin letter, two digits)',
  prompt: {
    version: 'top3-v1',
    system: 'Ты опытный врач-терапевт. Отвечай кратко и строго в требуемом формате.',
    instruction: () => TOP3_INSTRUCTION,
    render: (raw) => `Жалобы: ${String(raw.symptoms)}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction: 'По жалобам пациента определи наиболее вероятный диагноз: код МКБ-10 из трёх знаков.',
      candidates: (_raw, ctx) => (ctx.labels ?? []).map((label) => ({ label, text: ` ${label}` })),
    },
    variants: [
      { id: 'p1', version: 'top3-v1', instruction: () => TOP3_INSTRUCTION },
      {
        id: 'p2',
        version: 'top3-p2-v1',
        instruction: () =>
          'Ты врач приёмного отделения. Прочитай жалобы пациента и предложи три наиболее вероятных диагноза в виде ' +
          'кодов МКБ-10 из трёх знаков (латинская буква и две цифры, например J06), начиная с самого вероятного. ' +
          'Последняя строка ответа: «Ответ: КОД1, КОД2, КОД3».',
      },
      {
        id: 'p3',
        version: 'top3-p3-v1',
        instruction: () =>
          'Какие три диагноза по МКБ-10 лучше всего объясняют эти жалобы? Укажи трёхзначные коды (буква и две ' +
          'цифры, как I10) в порядке убывания вероятности. ' +
          'Последняя строка ответа: «Ответ: КОД1, КОД2, КОД3».',
      },
      {
        id: 'p4',
        version: 'top3-p4-v1',
        instruction: () =>
          'Задача: дифференциальная диагностика по жалобам. Выдай три кода МКБ-10 (латинская буква и две цифры, ' +
          'например K29), от наиболее к наименее вероятному. ' +
          'Последняя строка ответа: «Ответ: КОД1, КОД2, КОД3».',
      },
      {
        id: 'p5',
        version: 'top3-p5-v1',
        instruction: () =>
          'Пациент описал свои жалобы. Определи рубрику МКБ-10 (три знака, например M54), к которой они скорее ' +
          'всего относятся, и ещё две запасные; перечисли все три по убыванию вероятности. ' +
          'Последняя строка ответа: «Ответ: КОД1, КОД2, КОД3».',
      },
    ],
    parse: (reply) => parseIcd10List(reply),
  },
  recordFields: {
    idx: { type: 'text' },
    symptoms: { type: 'text' },
    code: {
      type: 'label',
      optional: true,
      pattern: ICD10_CODE,
      patternHint: 'a three-character ICD-10 code such as "M54"',
    },
  },
} as const satisfies RankingTask<'RuMedTop3'>;
