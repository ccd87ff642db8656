/**
 * The parsers' sayings in Russian (issue #63, item 5): every saying the table holds is read back from its English
 * with the values it was written with, and said in Russian with no Latin word outside its values (code) and the
 * pages' allow-list (JSON); what the
 * real parsers write is read, notes joined and a flag's saying before a parser's included; other text stays code.
 */
import { describe, expect, it } from 'vitest';
import { ALLOWED } from '../../test/helpers/latin-words.js';
import {
  parseIcd10List,
  parseLabelList,
  parseNli,
  parseOption,
  parseSymptomList,
  parseYesNo,
} from './parse.js';
import { readSaying, SAYINGS, type SayingCode, type SayingPart, say, sayingParts } from './reasons.js';
import { flagReason } from './reply-check.js';

/** The words of parts outside code: what a Russian reader reads as prose. */
const prose = (parts: SayingPart[]) =>
  parts
    .filter((p): p is string => typeof p === 'string')
    .join('')
    // A flag is the command line's, as the Latin-word check of pages treats it.
    .replace(/--[a-z-]+/g, '');

describe('the sayings table', () => {
  it('reads every saying back from its English, with its values, and says it in Russian', () => {
    const values = ['«Ответ: может быть»', 'A10', '0.91'];
    const read: Record<string, unknown> = {};
    const latin: Record<string, string[]> = {};
    for (const code of Object.keys(SAYINGS) as SayingCode[]) {
      const en = SAYINGS[code].en;
      const n = (en.match(/\{\d\}/g) ?? []).length;
      // A nested value is sayings joined by "; " (a parser's notes), or a flag's saying before a parser's.
      const notes = `${say('SYMPTOM_UNKNOWN', 'мигрень')}; ${say('CODE_CUT', 'С50.1', 'C50')}`;
      const args =
        code === 'FLAGGED'
          ? [say('TRUNCATED'), notes]
          : code === 'NO_SYMPTOM_NOTED'
            ? [notes]
            : values.slice(0, n);
      const text = say(code, ...args);
      read[code] = readSaying(text);
      latin[code] = (prose(sayingParts(text, 'ru')).match(/[A-Za-z][\w-]*/g) ?? []).filter(
        (w) => !ALLOWED.has(w),
      );
      expect(read[code]).toEqual({ code, values: args });
    }
    expect(Object.values(latin).flat()).toEqual([]);
  });

  it('reads what the parsers write, and says it in Russian with the values as code', () => {
    const written = {
      yesNo: (parseYesNo('не знаю') as { reason: string }).reason,
      pair: (parseYesNo('да или нет') as { reason: string }).reason,
      nli: (parseNli('следует или противоречит') as { reason: string }).reason,
      option: (parseOption('вариант 7', ['1', '2', '3', '4']) as { reason: string }).reason,
      icd:
        parseIcd10List('Ответ: С50.1').status === 'parsed'
          ? (parseIcd10List('Ответ: С50.1') as { notes: string[] }).notes
          : [],
      symptoms: (parseSymptomList('мигрень, кашель', ['Головная боль', 'Слабость']) as { reason: string })
        .reason,
      list: (parseLabelList('альфа, бета', { labels: ['гамма'] }) as { reason: string }).reason,
      flagged: `${flagReason('truncated', 'length')} (${(parseYesNo('не знаю') as { reason: string }).reason})`,
    };
    const ru = Object.fromEntries(
      Object.entries(written).map(([k, v]) => [
        k,
        (Array.isArray(v) ? v : [v]).map((t) => sayingParts(t, 'ru')),
      ]),
    );
    expect(ru).toEqual({
      yesNo: [['в ответе нет «да» или «нет» (или синонима)']],
      pair: [['неоднозначно: ответ предлагает на выбор ', { code: 'да' }, ' и ', { code: 'нет' }]],
      nli: [
        [
          'неоднозначно: ответ предлагает на выбор несколько отношений: ',
          { code: 'entailment and contradiction' },
        ],
      ],
      option: [['варианта ', { code: '7' }, ' нет среди предложенных: ', { code: '1, 2, 3, 4' }]],
      icd: [
        ['кириллическая буква ', { code: 'С' }, ' прочитана как латинская ', { code: 'C' }],
        [{ code: 'С50.1' }, ' сокращён до ', { code: 'C50' }],
      ],
      symptoms: [
        [
          'в ответе нет симптома из списка задачи (',
          { code: 'мигрень' },
          ' не совпадает ни с одним симптомом из списка задачи',
          '; ',
          { code: 'кашель' },
          ' не совпадает ни с одним симптомом из списка задачи',
          ')',
        ],
      ],
      list: [
        [{ code: 'альфа' }, ' — не метка этой задачи', '; ', { code: 'бета' }, ' — не метка этой задачи'],
      ],
      flagged: [
        [
          'обрезан: ответ оборвался на лимите токенов (',
          { code: 'finish_reason length' },
          ') до ответа; увеличьте --max-tokens',
          ' (',
          'в ответе нет «да» или «нет» (или синонима)',
          ')',
        ],
      ],
    });
  });

  it('keeps text that is none of its sayings as it is, as code, and English as it is', () => {
    expect([
      sayingParts('HTTP 500 from http://127.0.0.1:9/v1', 'ru'),
      sayingParts(say('NO_ICD_CODE'), 'en'),
    ]).toEqual([[{ code: 'HTTP 500 from http://127.0.0.1:9/v1' }], ['no ICD-10 code in the answer']]);
  });
});
