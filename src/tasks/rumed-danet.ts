/** RuMedDaNet: yes/no questions on a medical passage. */
import { parseYesNo } from './parse.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['да', 'нет'] as const;

const DANET_FORMAT = 'Последняя строка ответа: «Ответ: да» или «Ответ: нет».';
const DANET_INSTRUCTION = `Прочитай текст и ответь на вопрос по нему словом «да» или «нет». ${DANET_FORMAT}`;

export const rumedDaNet = {
  name: 'RuMedDaNet',
  title: 'yes/no question answering',
  guidelines:
    'Прочитайте фрагмент медицинского текста и ответьте на вопрос «да» или «нет», опираясь только на этот текст. Клавиши: Д или 1 — «да», Н или 2 — «нет». Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'classification',
  idField: 'pairID',
  goldField: 'answer',
  inputFields: ['context', 'question'],
  splits: ['train', 'dev', 'test', 'private_test'],
  inOverall: true,
  metrics: ['accuracy'],
  labels: LABELS,
  labelKeys: { да: ['д'], нет: ['н'] },
  naiveLabel: 'да',
  prompt: {
    version: 'danet-v1',
    system: 'Ты эксперт в медицине и биологии. Отвечай кратко и строго в требуемом формате.',
    instruction: () => DANET_INSTRUCTION,
    render: (raw) => `Текст: ${String(raw.context)}\nВопрос: ${String(raw.question)}`,
    answer: (gold) => `Ответ: ${String(gold)}`,
    loglik: {
      instruction: 'Прочитай текст и ответь на вопрос «да» или «нет», опираясь только на текст.',
      candidates: () => [
        { label: 'да', text: ' да' },
        { label: 'нет', text: ' нет' },
      ],
    },
    variants: [
      { id: 'p1', version: 'danet-v1', instruction: () => DANET_INSTRUCTION },
      {
        id: 'p2',
        version: 'danet-p2-v1',
        instruction: () =>
          `Ниже дан фрагмент медицинского текста и вопрос к нему. Ответь «да» или «нет», опираясь только на текст. ${DANET_FORMAT}`,
      },
      {
        id: 'p3',
        version: 'danet-p3-v1',
        instruction: () =>
          `Ты эксперт-биолог. Верно ли то, о чём спрашивает вопрос, согласно приведённому тексту? Ответь «да» или «нет». ${DANET_FORMAT}`,
      },
      {
        id: 'p4',
        version: 'danet-p4-v1',
        instruction: () =>
          `Прочитай отрывок. Если на вопрос по нему следует ответить утвердительно, напиши «да», иначе — «нет». ${DANET_FORMAT}`,
      },
      {
        id: 'p5',
        version: 'danet-p5-v1',
        instruction: () => `Ответь на вопрос по тексту одним словом: «да» или «нет». ${DANET_FORMAT}`,
      },
    ],
    parse: (reply) => parseYesNo(reply),
  },
  recordFields: {
    pairID: { type: 'text' },
    context: { type: 'text' },
    question: { type: 'text' },
    answer: { type: 'label', optional: true, oneOf: LABELS },
  },
} as const satisfies ClassificationTask<'RuMedDaNet'>;
