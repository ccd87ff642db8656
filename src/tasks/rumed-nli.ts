/** RuMedNLI: natural language inference on clinical sentence pairs (translated MedNLI). */
import { parseNli } from './parse.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['entailment', 'contradiction', 'neutral'] as const;

const NLI_FORMAT =
  'Последняя строка ответа: «Ответ: entailment», «Ответ: contradiction» или «Ответ: neutral».';
const NLI_INSTRUCTION =
  'Даны два утверждения из медицинской документации: посылка и гипотеза. Определи отношение между ними:\n' +
  '1 — entailment (следование): гипотеза следует из посылки;\n' +
  '2 — contradiction (противоречие): гипотеза противоречит посылке;\n' +
  `3 — neutral (нейтрально): ни то, ни другое.\n${NLI_FORMAT}`;

export const rumedNli = {
  name: 'RuMedNLI',
  title: 'clinical natural language inference',
  guidelines:
    'Даны два утверждения из медицинской документации: посылка и гипотеза. Определите отношение между ними: гипотеза следует из посылки (1), противоречит ей (2) или нейтральна — не следует и не противоречит (3). Клавиши 1, 2, 3. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'classification',
  idField: 'pairID',
  goldField: 'gold_label',
  // Three hypotheses per premise (1,422 public test items are 463 premises): their errors go together.
  cluster: 'ru_sentence1',
  inputFields: ['ru_sentence1', 'ru_sentence2'],
  splits: ['train', 'dev', 'test', 'private_test'],
  inOverall: true,
  metrics: ['accuracy'],
  labels: LABELS,
  labelNames: { entailment: 'следует', contradiction: 'противоречит', neutral: 'нейтрально' },
  naiveLabel: 'neutral',
  prompt: {
    version: 'nli-v2',
    system: 'Ты опытный врач. Отвечай кратко и строго в требуемом формате.',
    instruction: () => NLI_INSTRUCTION,
    render: (raw) => `Посылка: ${String(raw.ru_sentence1)}\nГипотеза: ${String(raw.ru_sentence2)}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction:
        'Даны два утверждения из медицинской документации: посылка и гипотеза. Определи отношение между ними:\n' +
        '1 — entailment (следование): гипотеза следует из посылки;\n' +
        '2 — contradiction (противоречие): гипотеза противоречит посылке;\n' +
        '3 — neutral (нейтрально): ни то, ни другое.\n' +
        'Ответь номером варианта.',
      candidates: (_raw, _ctx, options) =>
        LABELS.map((label, i) => ({ label, text: options.labelWords ? ` ${label}` : ` ${i + 1}` })),
    },
    variants: [
      { id: 'p1', version: 'nli-v2', instruction: () => NLI_INSTRUCTION },
      {
        id: 'p2',
        version: 'nli-p2-v1',
        instruction: () =>
          'Ты врач, читающий историю болезни. Следует ли гипотеза из посылки (entailment), противоречит ли ей ' +
          `(contradiction) или ни то, ни другое (neutral)? ${NLI_FORMAT}`,
      },
      {
        id: 'p3',
        version: 'nli-p3-v1',
        instruction: () =>
          'Определи логическое отношение гипотезы к посылке. entailment — если посылка верна, гипотеза тоже верна; ' +
          'contradiction — если посылка верна, гипотеза неверна; neutral — по посылке о гипотезе судить нельзя. ' +
          NLI_FORMAT,
      },
      {
        id: 'p4',
        version: 'nli-p4-v1',
        instruction: () =>
          'Сравни два утверждения из медицинской карты и выбери один из трёх ответов: entailment (второе вытекает ' +
          `из первого), contradiction (второе несовместимо с первым), neutral (связь не определена). ${NLI_FORMAT}`,
      },
      {
        id: 'p5',
        version: 'nli-p5-v1',
        instruction: () =>
          'Посылка — факт о пациенте, гипотеза — предположение о нём. Подтверждает посылка гипотезу (entailment), ' +
          `опровергает её (contradiction) или не позволяет судить (neutral)? ${NLI_FORMAT}`,
      },
    ],
    parse: (reply) => parseNli(reply),
  },
  recordFields: {
    pairID: { type: 'text' },
    ru_sentence1: { type: 'text' },
    ru_sentence2: { type: 'text' },
    gold_label: { type: 'label', optional: true, oneOf: LABELS },
  },
} as const satisfies ClassificationTask<'RuMedNLI'>;
