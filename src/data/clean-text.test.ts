import { describe, expect, it } from 'vitest';
import { cleanDeep, cleanName, cleanText, printable, storableJson } from './clean-text.js';

describe('text from outside', () => {
  it('replaces NUL and lone surrogates, keeps pairs, and caps', () => {
    expect(cleanText('a\u0000b\ud800c\udc00d😀')).toBe('a\uFFFDb\uFFFDc\uFFFDd😀');
    expect(cleanText('x'.repeat(10), 4)).toBe('xxxx… (10 characters)');
    expect(JSON.stringify(cleanDeep({ 'k\u0000': ['\ud800', 1, null, { e: 'ok' }] }))).toBe(
      '{"k\uFFFD":["\uFFFD",1,null,{"e":"ok"}]}',
    );
  });

  it('stores JSON as cleanDeep would, copying nothing where nothing needs cleaning (#64)', () => {
    const values: unknown[] = [
      { key: 'k', text: 'ответ: да 😀', n: 1, list: [null, true, 'x'] },
      { 'k\u0000': ['\ud800', 1, null, { e: 'ok\udc00' }] },
      { looks: '\\u0000 and \\ud800 as text', pair: '\ud83d\ude00' },
      'a\u0000b',
      [],
    ];
    for (const v of values) expect(storableJson(v)).toBe(JSON.stringify(cleanDeep(v)));
    expect(storableJson({ k: '\ud800\u0000' })).toBe('{"k":"\uFFFD\uFFFD"}');
  });

  it('prints no terminal escapes', () => {
    expect(printable('\u001b[2Jscored 99.9\r\nok\tfine')).toBe('\uFFFD[2Jscored 99.9\uFFFD\nok\tfine');
  });
});

describe('names people are shown (issue #42, item 7)', () => {
  it('drops each class of control, bidi and invisible character, and escape sequences whole', () => {
    const cases: [string, string, string][] = [
      ['BEL', 'model\u0007 A', 'model A'],
      ['a stray ESC, DEL, other C0 and C1 controls', 'm\u001b\u007f\u0001\u0080\u009c1', 'm1'],
      ['a CSI colour sequence', '\u001b[1;31mred\u001b[0m model', 'red model'],
      ['clear screen, cursor moves', '\u001b[2J\u001b[Hmodel\u001b[10A', 'model'],
      ['CSI as one C1 byte', '\u009b31mmodel', 'model'],
      ['an OSC title ended by BEL', '\u001b]0;pwned\u0007model', 'model'],
      [
        'an OSC hyperlink ended by ST',
        '\u001b]8;;https://evil.example\u001b\\click\u001b]8;;\u001b\\',
        'click',
      ],
      ['an unterminated OSC', 'model\u001b]0;rest of it', 'model'],
      ['a two-byte escape (RIS)', 'mo\u001bcdel', 'model'],
      ['NEL', 'line one\u0085line two', 'line one line two'],
      ['LINE SEPARATOR', 'one\u2028two', 'one two'],
      ['PARAGRAPH SEPARATOR', 'one\u2029two', 'one two'],
      ['LF, CR LF, VT, FF: one space a run', 'one\r\n\ntwo\u000bthree\u000cfour', 'one two three four'],
      ['a tab', 'one\ttwo', 'one two'],
      ['RLO and PDF', 'gpt\u202Etxt.exe\u202C', 'gpttxt.exe'],
      ['LRE, RLE, PDF, LRO', '\u202Aa\u202Bb\u202Cc\u202Dd', 'abcd'],
      ['the isolates LRI, RLI, FSI, PDI', '\u2066a\u2067b\u2068c\u2069d', 'abcd'],
      ['LRM, RLM, ALM', 'a\u200Eb\u200Fc\u061Cd', 'abcd'],
      ['ZWSP, ZWNJ, ZWJ', 'Sb\u200Ber\u200C A\u200DI', 'Sber AI'],
      ['WORD JOINER and BOM', '\uFEFFSber\u2060AI', 'SberAI'],
      [
        'a soft hyphen, a Hangul filler, tag characters',
        'Open\u00ADAI\u3164 \u{E0041}\u{E007F}x',
        'OpenAI x',
      ],
      ['NUL and a lone surrogate, as cleanText does', 'a\u0000b\uD800c', 'ab\uFFFDc'],
    ];
    expect(cases.map(([what, input]) => [what, cleanName(input)])).toEqual(
      cases.map(([what, , cleaned]) => [what, cleaned]),
    );
  });

  it('keeps ordinary text: Russian and English, combining marks, spaces, emoji', () => {
    const kept = [
      'Модель «Сбер» v2.1 — 7B (Ёж)',
      'GigaChat-Pro, fine-tuned: 8 бит',
      // Decomposed letters (a combining acute, a combining diaeresis) stay decomposed.
      'е\u0301ж Е\u0308лка',
      'two  spaces\u00A0and a no-break space',
      'emoji ❤\uFE0F and 🇷🇺, a CJK variant 葛\u{E0100}',
      '=1+1',
    ];
    expect(kept.map((t) => cleanName(t))).toEqual(kept);
  });

  it('keeps line breaks of a description, one kind of them, and trims', () => {
    expect(cleanName('  first\r\nsecond\u2028third\u0085\u202Efourth\n ', { multiline: true })).toBe(
      'first\nsecond\nthird\nfourth',
    );
    expect(cleanName('  first\n\nsecond  ')).toBe('first second');
  });

  it('is idempotent, and leaves no escape that removing characters could make', () => {
    const nasty = '\u001b\u200B[31m \u202E\r\u200B\n x\u001b]0;t\u0007\u0085\u2066y\u0000';
    for (const multiline of [false, true]) {
      const once = cleanName(nasty, { multiline });
      expect([
        cleanName(once, { multiline }),
        // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
        /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(once),
      ]).toEqual([once, false]);
    }
  });
});

describe('JSON nesting, bounded before parsing', () => {
  it('counts brackets outside strings only', async () => {
    const { nestsDeeperThan } = await import('./jsonl.js');
    expect(nestsDeeperThan('[[[1]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[1]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('{"a": "[[[[[[\\"[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('['.repeat(120_000), 64)).toBe(true);
    // More openers than the limit, yet shallow: walked, not refused; deep through both kinds of opener: refused.
    expect(nestsDeeperThan(`[${'[1],'.repeat(100)}[2]]`, 64)).toBe(false);
    expect(nestsDeeperThan(`${'{"a":['.repeat(33)}1${']}'.repeat(33)}`, 64)).toBe(true);
    expect(nestsDeeperThan(`${'{"a":['.repeat(32)}1${']}'.repeat(32)}`, 64)).toBe(false);
  });
});
