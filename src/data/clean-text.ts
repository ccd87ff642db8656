/**
 * Text from outside (a model server's error, an upload's field, an annotator's answer) made safe to store and show:
 * PostgreSQL refuses NUL in text and `\u0000` or a lone surrogate in jsonb, and one such row used to crash every
 * worker that met it and make pages that read it fail. Each is replaced by U+FFFD, and the text is capped.
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

/** Text to print on a terminal: also without control characters (escape sequences, carriage returns). */
export function printable(text: string, max = Number.POSITIVE_INFINITY): string {
  return cleanText(text, max).replace(TERMINAL_CONTROLS, '\uFFFD');
}

/** A JSON value with every string made `printable`: what a hostile server answers is printed as text, not acted on. */
export const printableDeep = <T>(value: T): T => mapStrings(value, (s) => printable(s));
