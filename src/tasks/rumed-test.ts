/** RuMedTest: four-option questions from Russian medical exams; the answers are closed (no public gold). */
import { parseOption } from './parse.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['1', '2', '3', '4'] as const;

const TEST_FORMAT = 'Последняя строка ответа: «Ответ: N», где N — номер варианта (1, 2, 3 или 4).';

export const rumedTest = {
  name: 'RuMedTest',
  title: 'medical exam, four options',
  guidelines:
    'Выберите один правильный вариант ответа на вопрос медицинского экзамена. Клавиши 1–4. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'classification',
  idField: 'idx',
  goldField: 'answer',
  inputFields: ['question', '1', '2', '3', '4'],
  splits: ['private_test'],
  // The paper's overall averages the five public tasks; RuMedTest has no public gold.
  inOverall: false,
  metrics: ['accuracy'],
  labels: LABELS,
  naiveLabel: '1',
  choices: { questionField: 'question', optionFields: { '1': '1', '2': '2', '3': '3', '4': '4' } },
  prompt: {
    version: 'test-v1',
    system: 'Ты опытный врач, сдающий аккредитационный экзамен. Отвечай кратко и строго в требуемом формате.',
    instruction: () => `Выбери единственный правильный вариант ответа на вопрос. ${TEST_FORMAT}`,
    render: (raw) =>
      `Вопрос: ${String(raw.question)}\n${LABELS.map((l) => `${l}. ${String(raw[l])}`).join('\n')}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction:
        'Выбери один правильный вариант ответа на вопрос медицинского экзамена и ответь его номером.',
      candidates: () => ['1', '2', '3', '4'].map((label) => ({ label, text: ` ${label}` })),
    },
    variants: [
      {
        id: 'p1',
        version: 'test-v1',
        instruction: () => `Выбери единственный правильный вариант ответа на вопрос. ${TEST_FORMAT}`,
      },
      {
        id: 'p2',
        version: 'test-p2-v1',
        instruction: () =>
          `Ты сдаёшь аккредитационный экзамен по медицине. Выбери один верный ответ. ${TEST_FORMAT}`,
      },
      {
        id: 'p3',
        version: 'test-p3-v1',
        instruction: () => `Ответь на тестовый вопрос, выбрав один из четырёх вариантов. ${TEST_FORMAT}`,
      },
      {
        id: 'p4',
        version: 'test-p4-v1',
        instruction: () =>
          `Прочитай вопрос и варианты ответа; правильный среди них только один. ${TEST_FORMAT}`,
      },
      {
        id: 'p5',
        version: 'test-p5-v1',
        instruction: () => `Какой из вариантов ответа верен? ${TEST_FORMAT}`,
      },
    ],
    parse: (reply) => parseOption(reply, LABELS),
  },
  recordFields: {
    idx: { type: 'text' },
    question: { type: 'text' },
    '1': { type: 'string' },
    '2': { type: 'string' },
    '3': { type: 'string' },
    '4': { type: 'string' },
    answer: { type: 'label', optional: true, oneOf: LABELS },
  },
} as const satisfies ClassificationTask<'RuMedTest'>;
