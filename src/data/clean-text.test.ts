import { describe, expect, it } from 'vitest';
import { cleanDeep, cleanText, printable } from './clean-text.js';

describe('text from outside', () => {
  it('replaces NUL and lone surrogates, keeps pairs, and caps', () => {
    expect(cleanText('a\u0000b\ud800c\udc00d😀')).toBe('a\uFFFDb\uFFFDc\uFFFDd😀');
    expect(cleanText('x'.repeat(10), 4)).toBe('xxxx… (10 characters)');
    expect(JSON.stringify(cleanDeep({ 'k\u0000': ['\ud800', 1, null, { e: 'ok' }] }))).toBe(
      '{"k\uFFFD":["\uFFFD",1,null,{"e":"ok"}]}',
    );
  });

  it('prints no terminal escapes', () => {
    expect(printable('\u001b[2Jscored 99.9\r\nok\tfine')).toBe('\uFFFD[2Jscored 99.9\uFFFD\nok\tfine');
  });
});

describe('JSON nesting, bounded before parsing', () => {
  it('counts brackets outside strings only', async () => {
    const { nestsDeeperThan } = await import('./jsonl.js');
    expect(nestsDeeperThan('[[[1]]]', 3)).toBe(false);
    expect(nestsDeeperThan('[[[[1]]]]', 3)).toBe(true);
    expect(nestsDeeperThan('{"a": "[[[[[[\\"[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('['.repeat(120_000), 64)).toBe(true);
  });
});
