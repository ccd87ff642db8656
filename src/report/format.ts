/** How numbers read in every table, chart label and page: percentages to two decimals, intervals, signed deltas, p. */
import type { Interval } from '../metrics/bootstrap.js';

/** Two decimals; a dash for a value that is missing or not a number. */
export const f2 = (x: number | null | undefined): string =>
  x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(2);

/** "[lo, hi]", or `empty` where there is no interval (bootstrap off, a saved result without one). */
export const ciText = (i: Interval | null | undefined, empty = '–'): string =>
  i ? `[${f2(i[0])}, ${f2(i[1])}]` : empty;

/** A difference with its sign: "+0.39", "-4.58". */
export const signed = (x: number): string => (x > 0 ? `+${f2(x)}` : f2(x));

/** A p-value to three decimals, or "<0.001". */
/** A rank's interval as people write it: "2–5", or "3" when it is one rank. */
export const rankInterval = ([lo, hi]: readonly [number, number]): string =>
  lo === hi ? `${lo}` : `${lo}–${hi}`;

export const pValue = (p: number): string => (p < 0.001 ? '<0.001' : p.toFixed(3));

/**
 * A moment as a page in `lang` writes it (Intl), in UTC to the minute: "7 декабря 2026 г., 02:17 UTC", not the ISO
 * text the database keeps (which the page's `<time datetime>` carries).
 */
export function dateTime(iso: string, lang: 'en' | 'ru'): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const f = new Intl.DateTimeFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'long',
    timeStyle: 'short',
    timeZone: 'UTC',
  });
  return `${f.format(d)} UTC`;
}

// Made at first use: two NumberFormats at import cost every process that loads this module (a queue worker among
// them, which never prints a count) some 25 ms of ICU's locale data (#64).
const COUNTS: Partial<Record<'en' | 'ru', Intl.NumberFormat>> = {};
/**
 * A count as a page in `lang` writes it, the one way the report and the pages write thousands: "1,200,000" and
 * "1 200 000" (Intl; the Russian groups are parted by a no-break space, so a count never breaks across lines).
 */
export const count = (n: number, lang: 'en' | 'ru'): string => {
  COUNTS[lang] ??= new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-US', { maximumFractionDigits: 0 });
  return COUNTS[lang].format(n);
};
