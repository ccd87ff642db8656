/**
 * Text from outside (a model server's error, an upload's field, an annotator's answer) made safe to store and show:
 * PostgreSQL refuses NUL in text and `\u0000` or a lone surrogate in jsonb, and one such row used to crash every
 * worker that met it and make pages that read it fail. Each is replaced by U+FFFD, and the text is capped.
 * Names people read (a model's, a team's, a description) are cleaned further by `cleanName`: nothing in them acts on
 * a terminal or a spreadsheet, reorders the text around it, or hides.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this finds
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** C0 controls but tab and newline, and DEL and C1: what a terminal would act on (clear screen, move the cursor). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const TERMINAL_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` without NUL or lone surrogates, cut to `max` characters (with a note of the length). */
export function cleanText(text: string, max = Number.POSITIVE_INFINITY): string {
  const clean = text.replace(UNSTORABLE, '\uFFFD');
  return clean.length <= max ? clean : `${clean.slice(0, max)}… (${clean.length} characters)`;
}

/** A JSON value with `f` applied to every string in it, keys too. */
function mapStrings<T>(value: T, f: (s: string) => string): T {
  if (typeof value === 'string') return f(value) as T;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [f(k), mapStrings(v, f)])) as T;
  }
  return value;
}

/** A JSON value with every string (keys too) cleaned as `cleanText` does; other values as they are. */
export const cleanDeep = <T>(value: T): T => mapStrings(value, (s) => cleanText(s));

/**
 * A JSON value as text PostgreSQL's jsonb stores: `JSON.stringify(cleanDeep(value))`, without copying the value when
 * nothing in it needs cleaning (a worker writes one such row per answer, #64). JSON.stringify writes every NUL as
 * `\u0000` and every lone surrogate as its `\udXXX` escape, so text without either escape holds neither; text that
 * merely looks so (an escaped backslash before `u0000`) is cleaned the long way, which changes nothing there.
 */
export function storableJson(value: unknown): string {
  const text = JSON.stringify(value);
  return UNSTORABLE_ESCAPE.test(text) ? JSON.stringify(cleanDeep(value)) : text;
}
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f])/;

/** Text to print on a terminal: also without control characters (escape sequences, carriage returns). */
export function printable(text: string, max = Number.POSITIVE_INFINITY): string {
  return cleanText(text, max).replace(TERMINAL_CONTROLS, '\uFFFD');
}

/** A JSON value with every string made `printable`: what a hostile server answers is printed as text, not acted on. */
export const printableDeep = <T>(value: T): T => mapStrings(value, (s) => printable(s));

/**
 * Escape sequences whole, so that no parameters are left behind as text: CSI (`ESC [` or U+009B, parameters, one final
 * byte), the string commands (OSC, DCS, SOS, PM, APC: up to BEL or ST, or to the end where unterminated, as a
 * terminal would swallow it), and the other two-byte escapes (ECMA-48, section 5).
 */
const ESCAPE_SEQUENCE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escape sequences are what this finds
  /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]|(?:\u001b[\]PX^_]|[\u0090\u0098\u009d-\u009f])[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|\u001b[\u0020-\u002f]*[\u0030-\u007e]/g;
/** Line breaks (Unicode's mandatory breaks: LF, CR, CR LF, VT, FF, NEL, LINE and PARAGRAPH SEPARATOR), and a run of them. */
const LINE_BREAKS = /(?:\r\n|[\n\r\v\f\u0085\u2028\u2029])+/g;
const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g;
/**
 * What no name needs and an attacker uses: C0 and C1 controls and DEL (BEL, a stray ESC); and the default-ignorable
 * code points, which show nothing and so hide a difference: the bidi controls (U+061C, U+200E-200F, the embeddings
 * and overrides U+202A-202E such as RLO, the isolates U+2066-2069), the zero-width ones (U+200B-200D, U+2060, U+FEFF),
 * soft hyphens, fillers and tags (Unicode's Default_Ignorable_Code_Point).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const INVISIBLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]|\p{Default_Ignorable_Code_Point}/gu;
/**
 * Default-ignorable, but part of ordinary text: the variation selectors (an emoji's presentation, a CJK variant, the
 * Mongolian free variation selectors) and the combining grapheme joiner (a combining mark).
 */
const KEPT_IGNORABLE = /^[\u034f\u180b-\u180d\u180f\ufe00-\ufe0f\u{e0100}-\u{e01ef}]$/u;

/**
 * A name as people may be shown it (on a page, in the JSON API, in a CSV, on a terminal): without escape sequences,
 * control characters, bidi overrides and isolates, or zero-width characters; a tab is a space; line breaks are
 * one space in a one-line name (the default), or `\n` where `multiline` (a description). Letters of any script,
 * combining marks and ordinary spaces are kept as they are; the result is trimmed. NUL and lone surrogates become
 * U+FFFD, as `cleanText` does. Idempotent: a cleaned name is cleaned to itself.
 *
 * @example
 * cleanName('GPT\u202e4o\u202c \u001b[31mbest\u001b[0m\u0007'); // 'GPT4o best'
 * cleanName('Модель\r\nвторая строка'); // 'Модель вторая строка'
 */
export function cleanName(text: string, options: { multiline?: boolean } = {}): string {
  const noEscapes = text.replace(ESCAPE_SEQUENCE, '').replace(/\t/g, ' ');
  const lines = options.multiline ? noEscapes.replace(LINE_BREAK, '\n') : noEscapes.replace(LINE_BREAKS, ' ');
  const visible = lines.replace(INVISIBLE, (c) => (KEPT_IGNORABLE.test(c) ? c : ''));
  return cleanText(visible).trim();
}
