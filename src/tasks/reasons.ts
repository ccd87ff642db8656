/**
 * What the reply parsers say about a reply, in English and Russian side by side, keyed by a code: why a reply is
 * unparsed (a sample's `reason`) and what was noted while reading it (its `notes`). The parsers write the English
 * from this table (`say`), so samples.jsonl keeps the words it always had; a Russian report reads them back
 * (`readSaying`) and shows the Russian, the values a saying names (the reply's words, labels, codes) as code.
 * Text no entry reads (a request's error, a saying of an older release) stays as it is, shown as code.
 */

/** `{n}`: the n-th value, shown as code in Russian; in `ru`, `` `…` `` is code too. */
interface Saying {
  en: string;
  ru: string;
  /** Values that are sayings themselves (a list joined by "; "), read and said in Russian in turn. */
  nested?: readonly number[];
}

// Order matters where one entry's English could read another's: the more specific first.
export const SAYINGS = {
  // Why a reply is unparsed: the parsers (src/tasks/parse.ts).
  NO_YES_NO: { en: 'no да/нет (or synonym) in the answer', ru: 'в ответе нет «да» или «нет» (или синонима)' },
  AMBIGUOUS_PAIR: {
    en: 'ambiguous: the answer offers "{0}" and "{1}" as alternatives',
    ru: 'неоднозначно: ответ предлагает на выбор {0} и {1}',
  },
  AMBIGUOUS_RELATIONS: {
    en: 'ambiguous: the answer offers {0} as alternatives',
    ru: 'неоднозначно: ответ предлагает на выбор несколько отношений: {0}',
  },
  NO_RELATION: {
    en: 'no entailment / contradiction / neutral (or a Russian form, or an option number) in the answer',
    ru: 'в ответе нет отношения (следование, противоречие, нейтрально — в любой форме) и нет номера варианта',
  },
  NO_OPTION: { en: 'no option number or letter in the answer', ru: 'в ответе нет номера или буквы варианта' },
  OPTION_NOT_OFFERED: { en: 'option {0} is not one of {1}', ru: 'варианта {0} нет среди предложенных: {1}' },
  NO_ICD_CODE: { en: 'no ICD-10 code in the answer', ru: 'в ответе нет кода МКБ-10' },
  NO_SYMPTOM_NOTED: {
    en: 'no symptom of the inventory in the answer ({0})',
    ru: 'в ответе нет симптома из списка задачи ({0})',
    nested: [0],
  },
  NO_SYMPTOM: {
    en: 'no symptom of the inventory in the answer',
    ru: 'в ответе нет симптома из списка задачи',
  },
  NO_ENTITY_LIST: {
    en: 'no JSON list of entities in the answer',
    ru: 'в ответе нет списка сущностей в JSON',
  },
  SEVERAL_LABELS: { en: 'the answer names several labels: {0}', ru: 'ответ называет несколько меток: {0}' },
  NO_LABEL_OF: { en: 'no label of {0} in the answer', ru: 'в ответе нет ни одной из меток {0}' },
  NO_LABEL: { en: 'no label in the answer', ru: 'в ответе нет метки' },
  // Why a reply is unparsed: the reply itself (src/tasks/reply-check.ts), before any parser reads it.
  ECHO: {
    en: "echo: the reply repeats the prompt's instruction; it is not read as an answer",
    ru: 'эхо: ответ повторяет инструкцию промпта и не читается как ответ',
  },
  FILTERED: {
    en: 'filtered: the server withheld the reply (finish_reason content_filter)',
    ru: 'отфильтрован: сервер не выдал ответ (`finish_reason content_filter`)',
  },
  EMPTY_FINISH: {
    en: 'empty: the reply has no text (finish_reason {0})',
    ru: 'пусто: в ответе нет текста (`finish_reason` {0})',
  },
  EMPTY: { en: 'empty: the reply has no text', ru: 'пусто: в ответе нет текста' },
  TRUNCATED_IN_REASONING: {
    en: 'truncated in reasoning: the token limit came while the model was still reasoning, before any answer; raise --max-tokens',
    ru: 'обрезан в рассуждении: лимит токенов наступил, пока модель ещё рассуждала, до всякого ответа; увеличьте --max-tokens',
  },
  TRUNCATED: {
    en: 'truncated: cut off by the token limit (finish_reason length) before an answer; raise --max-tokens',
    ru: 'обрезан: ответ оборвался на лимите токенов (`finish_reason length`) до ответа; увеличьте --max-tokens',
  },
  // Log-likelihood runs and requests (src/llm/outputs.ts).
  NO_CANDIDATE: {
    en: 'no candidate could be scored',
    ru: 'ни один вариант ответа не удалось оценить по правдоподобию',
  },
  NOT_SENT: { en: 'not sent', ru: 'запрос не отправлен' },
  UNPARSED: { en: 'unparsed', ru: 'не распознан' },
  // What a parser noted while reading a reply it could read (a sample's `notes`).
  CYRILLIC_LETTER: {
    en: 'Cyrillic "{0}" read as Latin "{1}"',
    ru: 'кириллическая буква {0} прочитана как латинская {1}',
  },
  CODE_CUT: { en: '"{0}" cut to {1}', ru: '{0} сокращён до {1}' },
  SYMPTOM_MATCHED: {
    en: '"{0}" matched "{1}" (similarity {2})',
    ru: '{0} сопоставлен с {1} (сходство {2})',
  },
  SYMPTOM_UNKNOWN: {
    en: '"{0}" matches no symptom of the inventory',
    ru: '{0} не совпадает ни с одним симптомом из списка задачи',
  },
  ENTRY_WITHOUT_FIELDS: {
    en: 'entry {0} has no "text" and "type"',
    ru: 'у записи {0} нет полей `text` и `type`',
  },
  UNKNOWN_TYPE: { en: 'type "{0}" is not one of {1}', ru: 'тип {0} не из списка: {1}' },
  NOT_IN_SENTENCE: { en: '"{0}" ({1}) is not in the sentence', ru: '{0} ({1}) нет в предложении' },
  NOT_A_LABEL: { en: '"{0}" is not a label of this task', ru: '{0} — не метка этой задачи' },
  LABELS_DROPPED: {
    en: '{0} label(s) beyond the first {1} dropped',
    ru: 'отброшены метки сверх первых {1}: {0}',
  },
  OPTION_LETTER: { en: 'option letter "{0}" read as {1}', ru: 'буква варианта {0} прочитана как {1}' },
  OPTION_READ_AS: { en: 'option {0} read as {1}', ru: 'вариант {0} прочитан как {1}' },
  LABEL_READ_FROM: { en: 'label read from "{0}"', ru: 'метка прочитана из {0}' },
  // A flagged reply that the parser could not read either: the flag's saying, then the parser's.
  FLAGGED: { en: '{0} ({1})', ru: '{0} ({1})', nested: [0, 1] },
} as const satisfies Record<string, Saying>;

export type SayingCode = keyof typeof SAYINGS;

/** The English of a saying with its values: what a parser writes into a sample. */
export function say(code: SayingCode, ...values: readonly (string | number)[]): string {
  return (SAYINGS[code] as Saying).en.replace(/\{(\d)\}/g, (_, i) => String(values[Number(i)]));
}

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Each saying's English as a pattern that gives its values back (`{n}` any text, shortest first). */
const PATTERNS: [SayingCode, RegExp][] = (Object.entries(SAYINGS) as [SayingCode, Saying][]).map(
  ([code, s]) => [
    code,
    new RegExp(
      `^${s.en
        .split(/\{\d\}/)
        .map(escapeRe)
        .join('([\\s\\S]*?)')}$`,
    ),
  ],
);

/** The code and values of a saying's English; undefined for text that is none of the table's. */
export function readSaying(text: string): { code: SayingCode; values: string[] } | undefined {
  for (const [code, re] of PATTERNS) {
    if (code === 'FLAGGED') continue;
    const m = re.exec(text);
    if (!m) continue;
    const values = m.slice(1) as string[];
    const nested = (SAYINGS[code] as Saying).nested ?? [];
    if (nested.every((i) => readSayings(values[i] as string) !== undefined)) return { code, values };
  }
  // A flag's saying and a parser's, "flag (parser)": both hold brackets of their own, so every split is tried.
  if (!text.endsWith(')')) return undefined;
  for (let at = text.indexOf(' ('); at > 0; at = text.indexOf(' (', at + 1)) {
    const values = [text.slice(0, at), text.slice(at + 2, -1)];
    if (readSaying(values[0] as string) && readSayings(values[1] as string))
      return { code: 'FLAGGED', values };
  }
  return undefined;
}

/** A part of a saying as a page shows it: words, or a value shown as code. */
export type SayingPart = string | { code: string };

/** Sayings joined by "; " (a parser's notes), each read; undefined unless every one is. */
function readSayings(text: string): { code: SayingCode; values: string[] }[] | undefined {
  // Pieces first: one saying's value could run over the "; " between two ("альфа" is not a label…; "бета" …).
  const pieces = text.split('; ');
  const read = pieces.length > 1 ? pieces.map((p) => readSaying(p)) : [];
  if (read.length > 0 && read.every((r) => r !== undefined))
    return read as { code: SayingCode; values: string[] }[];
  const one = readSaying(text);
  return one ? [one] : undefined;
}

/**
 * A parser's saying (or several, joined by "; ") in a language, as parts: in English the text as it is; in Russian
 * the table's words with the values as code. Text the table does not read stays as it is, as code.
 */
export function sayingParts(text: string, lang: 'en' | 'ru'): SayingPart[] {
  if (lang === 'en') return [text];
  const read = readSayings(text);
  if (!read) return [{ code: text }];
  return read.flatMap((r, k) => [...(k > 0 ? ['; '] : []), ...russian(r)]);
}

function russian({ code, values }: { code: SayingCode; values: string[] }): SayingPart[] {
  const s = SAYINGS[code] as Saying;
  const out: SayingPart[] = [];
  // `{n}` a value; `` `…` `` code written in the Russian words themselves.
  for (const piece of s.ru.split(/(\{\d\}|`[^`]*`)/)) {
    if (piece === '') continue;
    const v = /^\{(\d)\}$/.exec(piece);
    if (v) {
      const i = Number(v[1]);
      const value = values[i] as string;
      out.push(...(s.nested?.includes(i) ? sayingParts(value, 'ru') : [{ code: value }]));
    } else if (piece.startsWith('`')) out.push({ code: piece.slice(1, -1) });
    else out.push(piece);
  }
  return out;
}
