/**
 * The answer parsers against real-looking Russian model outputs, every failure mode the harness must handle:
 * reasoning blocks, markdown, answer markers (last wins), synonyms, English labels, option letters, Cyrillic
 * look-alikes in ICD-10 codes, subcodes, duplicates, fuzzy symptom names, entity JSON in prose, and replies that
 * must stay unparsed (null below) rather than get a default label.
 */
import { describe, expect, it } from 'vitest';
import {
  finalAnswer,
  parseEntities,
  parseIcd10List,
  parseNli,
  parseOption,
  parseSymptomList,
  parseYesNo,
  tokenize,
} from './parse.js';

const answerOf = <T>(r: { status: string; answer?: T }): T | null =>
  r.status === 'parsed' ? (r.answer as T) : null;

const YES_NO: [string, 'да' | 'нет' | null][] = [
  ['да', 'да'],
  ['Нет', 'нет'],
  ['Да.', 'да'],
  ['**Да**', 'да'],
  ['Ответ: нет', 'нет'],
  ['Ответ: Да, эпилепсию относят к заболеваниям головного мозга.', 'да'],
  ['Нет, это неверно.', 'нет'],
  ['Неверно', 'нет'],
  ['Верно', 'да'],
  ['Утверждение верно.', 'да'],
  ['Это утверждение не верно', 'нет'],
  ['Yes', 'да'],
  ['no', 'нет'],
  ['<think>Вопрос про бутамират. Да или нет? Думаю, нет связи с опием.</think>\nОтвет: нет', 'нет'],
  ['<think>Сначала кажется, что да</think> Нет', 'нет'],
  ['Ответ: да\n\nПроверим ещё раз... Итоговый ответ: нет', 'нет'],
  ['### Ответ\nДа', 'да'],
  ['- Да', 'да'],
  ['`нет`', 'нет'],
  ['Правильно', 'да'],
  ['Это ложно.', 'нет'],
  ['НЕТ', 'нет'],
  ['Не соответствует действительности', 'нет'],
  ['Да, бутамират не является опиоидом.', 'да'],
  ['Ответ — нет.', 'нет'],
  ['Затрудняюсь ответить', null],
  ['', null],
  ['<think>Думаю... да или нет', null],
  ['Возможно', null],
];

const NLI: [string, 'entailment' | 'contradiction' | 'neutral' | null][] = [
  ['entailment', 'entailment'],
  ['Contradiction', 'contradiction'],
  ['neutral', 'neutral'],
  ['Ответ: следование', 'entailment'],
  ['Противоречие', 'contradiction'],
  ['Нейтрально', 'neutral'],
  ['Отношение: нейтральное.', 'neutral'],
  ['Второе предложение следует из первого.', 'entailment'],
  ['Гипотеза противоречит посылке', 'contradiction'],
  // Negated cues ("не следует", "не противоречит") are not the relation.
  ['Из посылки не следует гипотеза, и она ей не противоречит: нейтрально', 'neutral'],
  ['Гипотеза не противоречит посылке, но и не следует из неё. Ответ: нейтрально', 'neutral'],
  ['Label: neutral', 'neutral'],
  ['**Ответ:** neutral', 'neutral'],
  [
    '<think>Пациент на комнатном воздухе... это противоречие? нет, следование</think>\nОтвет: contradiction',
    'contradiction',
  ],
  ['Ответ: entailment (следование)', 'entailment'],
  ['Невозможно определить по тексту', 'neutral'],
  ['Предложения не связаны', 'neutral'],
  ['Метка: ENTAILMENT', 'entailment'],
  // Nouns, verbs and adjectives in any case and capitalisation (upstream's GigaChat file uses Следствие / Противоречие
  // / Нейтральность as its labels), with and without the number of the option.
  ['Ответ: следствие', 'entailment'],
  ['Следствие', 'entailment'],
  ['СЛЕДСТВИЕ', 'entailment'],
  ['Ответ: Противоречие', 'contradiction'],
  ['Нейтральность', 'neutral'],
  ['Это логическое следование.', 'entailment'],
  ['Гипотеза является следствием посылки.', 'entailment'],
  ['Между ними нет противоречия, гипотеза вытекает из посылки', 'entailment'],
  ['Налицо противоречие между утверждениями', 'contradiction'],
  ['Утверждения противоречат друг другу.', 'contradiction'],
  ['Гипотеза противоречащая посылке', 'contradiction'],
  ['Утверждения противоречивы', 'contradiction'],
  ['Посылка опровергает гипотезу', 'contradiction'],
  ['Отношение нейтральное', 'neutral'],
  ['Нейтральный', 'neutral'],
  ['Связь нейтральная.', 'neutral'],
  ['Ответ: 1 (следование)', 'entailment'],
  ['Ответ: 2 — противоречие', 'contradiction'],
  ['3. Нейтрально', 'neutral'],
  ['Ответ: 2', 'contradiction'],
  ['1', 'entailment'],
  ['«3»', 'neutral'],
  ['The hypothesis contradicts the premise.', 'contradiction'],
  ['The premise entails the hypothesis', 'entailment'],
  // Negations keep a cue out: not contradiction, not entailment, and nothing else said.
  ['Гипотеза не противоречит посылке', null],
  ['Нет противоречия', null],
  ['Не следует', null],
  // Words that only look like the cues.
  ['Следующий вопрос, пожалуйста', null],
  ['Через 2 дня', null],
  ['Сложно сказать', null],
  ['<think>долго думаю', null],
];

const OPTIONS: [string, string | null][] = [
  ['3', '3'],
  ['Ответ: 2', '2'],
  ['Правильный ответ — 4', '4'],
  ['1)', '1'],
  ['Вариант 3: 4 см2', '3'],
  ['**2**', '2'],
  ['Ответ: Б', '2'],
  ['в', '3'],
  ['Г) 1 см2 и менее', '4'],
  ['А', '1'],
  ['Ответ: B', '3'],
  ['A', '1'],
  ['<think>Площадь 1 см2 критична, это вариант 4</think>\nОтвет: 4', '4'],
  ['Ответ: 1\nНо подумав, итоговый ответ: 3', '3'],
  ['Ответ: 3) 2 см2', '3'],
  ['Я выбираю вариант Б', '2'],
  ['5', null],
  ['Ни один из вариантов', null],
  ['', null],
];

const ICD: [string, string[] | null][] = [
  ['M54, I11, G54', ['M54', 'I11', 'G54']],
  ['1. M54.5 — дорсалгия\n2. M42.1\n3. G54.2', ['M54', 'M42', 'G54']],
  ['Ответ: I10; I11; I20', ['I10', 'I11', 'I20']],
  ['М54, І11', ['M54']],
  ['Коды: Ј06.9, J20, J06', ['J20', 'J06']],
  ['Наиболее вероятно K29.7, затем K58 и K21.0', ['K29', 'K58', 'K21']],
  ['М54.2 (Цервикалгия), М53.1, G44.2', ['M54', 'M53', 'G44']],
  ['J06, J06.9, J06.0, J02', ['J06', 'J02']],
  ['**E11**', ['E11']],
  ['<think>Может быть I10 или I11</think>\nОтвет: I11, I10, E05', ['I11', 'I10', 'E05']],
  ['N30, N39, N31, N34', ['N30', 'N39', 'N31']],
  ['Диагноз по МКБ-10: R51', ['R51']],
  ['Код: Н10.1', ['H10']],
  ['i10, i11', ['I10', 'I11']],
  ['I 11', ['I11']],
  ['Не могу поставить диагноз без осмотра', null],
  ['', null],
];

const INVENTORY = [
  'сухой кашель',
  'насморк',
  'боль в горле',
  'боль в шейном отделе позвоночника',
  'озноб',
  'головокружение',
];
const SYMPTOMS: [string, string[] | null][] = [
  ['сухой кашель, насморк, боль в горле', ['сухой кашель', 'насморк', 'боль в горле']],
  ['1. Насморк\n2. Озноб\n3. Головокружение', ['насморк', 'озноб', 'головокружение']],
  ['Ответ: боль в горле; сухой кашель', ['боль в горле', 'сухой кашель']],
  ['- Сухой кашель.\n- Насморк!', ['сухой кашель', 'насморк']],
  ['головокружениe', ['головокружение']],
  ['боль в шейном отделе позвоночникa, озноб', ['боль в шейном отделе позвоночника', 'озноб']],
  ['сухой кашел', ['сухой кашель']],
  ['насморк, насморк, озноб', ['насморк', 'озноб']],
  ['**Озноб**', ['озноб']],
  ['<think>кашель сухой?</think> Ответ: сухой кашель', ['сухой кашель']],
  ['Головокружение.', ['головокружение']],
  ['температура, слабость', null],
  ['Нужно уточнить анамнез', null],
];

const NER_TOKENS = tokenize('Виферон не помог , появилась сыпь на коже .');
const NER: [string, string[] | null][] = [
  [
    '[{"text": "Виферон", "type": "Drugname"}, {"text": "сыпь на коже", "type": "ADR"}]',
    ['B-Drugname', 'O', 'O', 'O', 'O', 'B-ADR', 'I-ADR', 'I-ADR', 'O'],
  ],
  [
    '```json\n[{"text": "виферон", "type": "drugname"}]\n```',
    ['B-Drugname', 'O', 'O', 'O', 'O', 'O', 'O', 'O', 'O'],
  ],
  [
    'Сущности: {"entities": [{"entity": "сыпь", "label": "ADR"}]}',
    ['O', 'O', 'O', 'O', 'O', 'B-ADR', 'O', 'O', 'O'],
  ],
  ['[]', ['O', 'O', 'O', 'O', 'O', 'O', 'O', 'O', 'O']],
  [
    '<think>найду препараты</think>[{"text": "Виферон", "type": "Drugname"}, {"text": "зуд", "type": "ADR"}]',
    ['B-Drugname', 'O', 'O', 'O', 'O', 'O', 'O', 'O', 'O'],
  ],
  ['[{"text": "Виферон", "type": "Medicine"}]', ['O', 'O', 'O', 'O', 'O', 'O', 'O', 'O', 'O']],
  ['Виферон — препарат, сыпь — ADR', null],
  ['[{"text": "Виферон", "type": "Drugname"', null],
];

describe('answer parsers', () => {
  it('cover at least 100 outputs', () => {
    expect(
      YES_NO.length + NLI.length + OPTIONS.length + ICD.length + SYMPTOMS.length + NER.length,
    ).toBeGreaterThanOrEqual(100);
  });
  it.each(YES_NO)('yes/no %j', (reply, expected) => expect(answerOf(parseYesNo(reply))).toEqual(expected));
  it.each(NLI)('nli %j', (reply, expected) => expect(answerOf(parseNli(reply))).toEqual(expected));
  it.each(OPTIONS)('option %j', (reply, expected) => expect(answerOf(parseOption(reply))).toEqual(expected));
  it.each(ICD)('icd-10 %j', (reply, expected) => expect(answerOf(parseIcd10List(reply))).toEqual(expected));
  it.each(SYMPTOMS)('symptoms %j', (reply, expected) =>
    expect(answerOf(parseSymptomList(reply, INVENTORY))).toEqual(expected),
  );
  it.each(NER)('entities %j', (reply, expected) =>
    expect(
      answerOf(
        parseEntities(reply, NER_TOKENS, ['ADR', 'DI', 'Drugclass', 'Drugform', 'Drugname', 'Finding']),
      ),
    ).toEqual(expected),
  );

  it('records what it corrected or could not place', () => {
    expect(parseIcd10List('М54.5')).toEqual({
      status: 'parsed',
      answer: ['M54'],
      notes: ['Cyrillic "М" read as Latin "M"', '"М54.5" cut to M54'],
    });
    expect(parseSymptomList('сухой кашел', INVENTORY)).toEqual({
      status: 'parsed',
      answer: ['сухой кашель'],
      notes: ['"сухой кашел" matched "сухой кашель" (similarity 0.92)'],
    });
    expect(parseOption('Ответ: B')).toEqual({
      status: 'parsed',
      answer: '3',
      notes: ['option letter "B" read as 3'],
    });
    const ner = parseEntities('[{"text": "зуд", "type": "ADR"}]', NER_TOKENS, ['ADR']);
    expect(ner.status === 'parsed' && ner.notes).toEqual(['"зуд" (ADR) is not in the sentence']);
    expect(parseYesNo('Затрудняюсь ответить')).toEqual({
      status: 'unparsed',
      reason: 'no да/нет (or synonym) in the answer',
    });
  });

  it('takes the text after the last answer marker', () => {
    expect(finalAnswer('Рассуждение. Ответ: да. Проверка... Окончательный ответ: нет')).toBe('нет');
  });
});

describe('answers that offer alternatives are not read', () => {
  it('да или нет, 1/2, 2 or 3: unparsed as ambiguous; the same answer twice, or a choice, is read', () => {
    expect(parseYesNo('Ответ: да или нет')).toEqual({
      status: 'unparsed',
      reason: 'ambiguous: the answer offers "да" and "нет" as alternatives',
    });
    expect(parseYesNo('Ответ: нет/да').status).toBe('unparsed');
    expect(parseOption('Ответ: 1/2')).toMatchObject({ status: 'unparsed' });
    expect(parseOption('Ответ: 2 or 3')).toMatchObject({ status: 'unparsed' });
    expect(parseOption('Ответ: «Б» или «В»')).toMatchObject({ status: 'unparsed' });
    expect(parseYesNo('Ответ: да, да')).toMatchObject({ status: 'parsed', answer: 'да' });
    expect(parseYesNo('Да или нет? Скорее да. Ответ: да')).toMatchObject({ status: 'parsed', answer: 'да' });
    expect(parseOption('Ответ: 2 (не 3)')).toMatchObject({ status: 'parsed', answer: '2' });
    expect(parseNli('Ответ: entailment или contradiction')).toEqual({
      status: 'unparsed',
      reason: 'ambiguous: the answer offers entailment and contradiction as alternatives',
    });
    expect(parseNli('Ответ: 1/3')).toMatchObject({ status: 'unparsed' });
    expect(parseNli('Ответ: противоречие, а не следствие')).toMatchObject({
      status: 'parsed',
      answer: 'contradiction',
    });
    expect(parseNli('Ответ: нейтрально')).toMatchObject({ status: 'parsed', answer: 'neutral' });
  });
});
