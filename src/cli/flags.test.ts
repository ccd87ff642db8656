/** Flag tables (#18): declared once, registered on commander, the values typed and checked as the line is read. */
import { Command } from 'commander';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { addFlags, choice, count, type FlagsOf, many, on, text } from './flags.js';
import { LLM_FLAGS, type LlmFlags } from './llm.js';

const TABLE = {
  model: text('--model <name>', 'm', { required: true }),
  tasks: text('--tasks <list>', 't'),
  shots: count('--shots <k>', 's', { min: 0, default: 0 }),
  limit: count('--limit <n>', 'l', { min: 1 }),
  mode: choice('--mode <mode>', 'x', ['generate', 'loglik'], { default: 'generate' }),
  stop: many('--stop <text>', 'y'),
  resume: on('--resume', 'r'),
  progress: on('--no-progress', 'p'),
};

function parse(argv: string[]): FlagsOf<typeof TABLE> {
  let got: FlagsOf<typeof TABLE> | undefined;
  const cmd = addFlags(new Command('t').exitOverride().configureOutput({ writeErr: () => {} }), TABLE).action(
    (flags) => {
      got = flags;
    },
  );
  cmd.parse(argv, { from: 'user' });
  return got as FlagsOf<typeof TABLE>;
}

describe('flag tables', () => {
  it('infer the flags type: defaults and required flags always there, the rest maybe', () => {
    expectTypeOf<FlagsOf<typeof TABLE>>().toEqualTypeOf<{
      model: string;
      tasks: string | undefined;
      shots: number;
      limit: number | undefined;
      mode: 'generate' | 'loglik';
      stop: string[];
      resume: boolean;
      progress: boolean;
    }>();
    expectTypeOf<LlmFlags['maxTokens']>().toEqualTypeOf<number>();
    expectTypeOf<LlmFlags['baseUrl']>().toEqualTypeOf<string | undefined>();
  });

  it('fill defaults, collect repeats, parse and check values', () => {
    expect(parse(['--model', 'x'])).toEqual({
      model: 'x',
      shots: 0,
      mode: 'generate',
      stop: [],
      resume: false,
      progress: true,
    });
    expect(
      parse([
        '--model',
        'x',
        '--stop',
        'a',
        '--stop',
        'b',
        '--limit',
        '3',
        '--resume',
        '--no-progress',
        '--mode',
        'loglik',
      ]),
    ).toMatchObject({ stop: ['a', 'b'], limit: 3, resume: true, progress: false, mode: 'loglik' });
    expect(() => parse(['--model', 'x', '--limit', '0'])).toThrow('--limit must be an integer ≥ 1, got "0"');
    expect(() => parse(['--model', 'x', '--mode', 'other'])).toThrow(/Allowed choices are generate, loglik/);
    expect(() => parse([])).toThrow(/required option '--model <name>' not specified/);
  });

  it('refuse a key that is not the flag’s own name, and declare every llm flag under its name', () => {
    expect(() => addFlags(new Command('t'), { max: count('--max-tokens <n>', 'x', { min: 1 }) })).toThrow(
      'flag table of t: "max" is named "maxTokens" by --max-tokens <n>',
    );
    expect(() => addFlags(new Command('llm'), LLM_FLAGS)).not.toThrow();
  });
});
