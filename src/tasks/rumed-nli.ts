/** RuMedNLI: natural language inference on clinical sentence pairs (translated MedNLI). */
import { z } from 'zod';
import { text } from './fields.js';
import { parseNli } from './parse.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['entailment', 'contradiction', 'neutral'] as const;

export const rumedNli = {
  name: 'RuMedNLI',
  title: 'clinical natural language inference',
  guidelines:
    'Даны два утверждения из медицинской документации: посылка и гипотеза. Определите отношение между ними: гипотеза следует из посылки (1), противоречит ей (2) или нейтральна — не следует и не противоречит (3). Клавиши 1, 2, 3. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'classification',
  idField: 'pairID',
  goldField: 'gold_label',
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
    instruction: () =>
      'Даны два утверждения из медицинской документации: посылка и гипотеза. Определи отношение между ними:\n' +
      '1 — entailment (следование): гипотеза следует из посылки;\n' +
      '2 — contradiction (противоречие): гипотеза противоречит посылке;\n' +
      '3 — neutral (нейтрально): ни то, ни другое.\n' +
      'Последняя строка ответа: «Ответ: entailment», «Ответ: contradiction» или «Ответ: neutral».',
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
    parse: (reply) => parseNli(reply),
  },
  recordSchema: z.looseObject({
    pairID: text,
    ru_sentence1: text,
    ru_sentence2: text,
    gold_label: z.enum(LABELS).optional(),
  }),
} as const satisfies ClassificationTask<'RuMedNLI'>;
