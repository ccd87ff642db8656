/** RuMedNER: named entities in drug reviews (RuDReC), one IOB2 tag per token. */
import { getEntities } from './iob2.js';
import { parseEntities } from './parse.js';
import { iob2Tags } from './record.js';
import type { TaggingTask } from './types.js';

const ENTITY_TYPES = ['ADR', 'DI', 'Drugclass', 'Drugform', 'Drugname', 'Finding'] as const;
const TAGS = iob2Tags(ENTITY_TYPES);

const NER_FORMAT =
  'Верни только JSON-список вида [{"text": "фрагмент", "type": "тип"}], где text — точный фрагмент отзыва. ' +
  'Если сущностей нет, верни [].';
const NER_INSTRUCTION =
  'Найди в отзыве о лекарстве именованные сущности следующих типов: Drugname (название препарата), ' +
  'Drugclass (класс препаратов), Drugform (лекарственная форма), DI (болезнь или симптом, от которых принимают ' +
  `препарат), ADR (побочное действие препарата), Finding (прочие болезни и симптомы). ${NER_FORMAT}`;

export const rumedNer = {
  name: 'RuMedNER',
  title: 'drug-review named entities',
  guidelines:
    'Выделите в отзыве о лекарстве все фрагменты следующих типов: 1 ADR — побочное действие препарата; 2 DI — болезнь или симптом, от которых принимают препарат; 3 Drugclass — класс препаратов; 4 Drugform — лекарственная форма; 5 Drugname — название препарата; 6 Finding — прочие болезни и симптомы (цифры — в порядке кнопок типов). Выделите слова мышью (нажмите и протяните, или щёлкните первое и с Shift — последнее) или клавишами (← → по словам, Shift + ← → — расширить выделение) и нажмите цифру типа или кнопку. Фрагмент убирается кнопкой ×. Если сущностей нет, просто подтвердите ответ. Enter — подтвердить ответ и перейти к следующему примеру, ← → — переход между примерами, «Пропустить» — оставить пример без ответа (пропуск не считается ответом).',
  kind: 'tagging',
  idField: 'idx',
  goldField: 'ner_tags',
  inputFields: ['tokens'],
  tokensField: 'tokens',
  entityTypes: ENTITY_TYPES,
  tags: TAGS,
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'f1'],
  prompt: {
    version: 'ner-v1',
    system: 'Ты специалист по разметке медицинских текстов. Отвечай только JSON.',
    instruction: () => NER_INSTRUCTION,
    render: (raw) => `Отзыв: ${(raw.tokens as string[]).join(' ')}`,
    answer: (gold, raw) =>
      JSON.stringify(
        getEntities(gold as string[]).map((e) => ({
          text: (raw.tokens as string[]).slice(e.start, e.end + 1).join(' '),
          type: e.type,
        })),
      ),
    variants: [
      { id: 'p1', version: 'ner-v1', instruction: () => NER_INSTRUCTION },
      {
        id: 'p2',
        version: 'ner-p2-v1',
        instruction: () =>
          'Ты специалист по фармаконадзору. Выпиши из отзыва все упоминания: Drugname (название препарата), ' +
          'Drugclass (класс препаратов), Drugform (лекарственная форма), DI (болезнь или симптом, от которых ' +
          `принимают препарат), ADR (побочное действие), Finding (прочие болезни и симптомы). ${NER_FORMAT}`,
      },
      {
        id: 'p3',
        version: 'ner-p3-v1',
        instruction: () =>
          'Разметь отзыв о лекарстве: найди фрагменты типов Drugname, Drugclass, Drugform, DI, ADR и Finding ' +
          '(название, класс и форма препарата; показание; побочный эффект; прочие болезни и симптомы). ' +
          NER_FORMAT,
      },
      {
        id: 'p4',
        version: 'ner-p4-v1',
        instruction: () =>
          'Извлеки именованные сущности из отзыва пациента о препарате. Типы: Drugname — название; Drugclass — ' +
          'класс; Drugform — форма выпуска; DI — болезнь или симптом, ради которых его принимают; ADR — ' +
          `нежелательная реакция; Finding — другие болезни и симптомы. ${NER_FORMAT}`,
      },
      {
        id: 'p5',
        version: 'ner-p5-v1',
        instruction: () =>
          'Найди в тексте отзыва названия и классы лекарств (Drugname, Drugclass), их формы (Drugform), показания ' +
          `(DI), побочные действия (ADR) и прочие упомянутые болезни и симптомы (Finding). ${NER_FORMAT}`,
      },
    ],
    parse: (reply, raw) => parseEntities(reply, raw.tokens as string[], ENTITY_TYPES),
    jsonSchema: {
      type: 'array',
      items: {
        type: 'object',
        properties: { text: { type: 'string' }, type: { enum: [...ENTITY_TYPES] } },
      },
    },
  },
  recordFields: {
    idx: { type: 'text' },
    tokens: { type: 'tokens' },
    ner_tags: { type: 'tags', optional: true, oneOf: TAGS, tokens: 'tokens' },
  },
} as const satisfies TaggingTask<'RuMedNER'>;
