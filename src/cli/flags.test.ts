/** Flag tables (#18): declared once, registered on commander, the values typed and checked as the line is read. */
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createLogger } from '../log.js';
import { addFlags, choice, count, type FlagsOf, many, on, text } from './flags.js';
import { LLM_FLAGS, type LlmFlags } from './llm.js';
import { buildFullProgram, runCli } from './program.js';

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

  it('give every command one --quiet, which drops notes and keeps warnings (#18)', async () => {
    const leaves: string[] = [];
    const walk = (cmd: Command, path: string) => {
      for (const sub of cmd.commands) {
        if (sub.commands.length > 0) walk(sub, `${path} ${sub.name()}`);
        else if (!sub.options.some((o) => o.long === '--quiet' && o.short === '-q'))
          leaves.push(`${path} ${sub.name()}`);
      }
    };
    walk(await buildFullProgram({ out: () => {}, log: createLogger('silent') }, () => {}), 'rumedbench');
    expect(leaves).toEqual([]);

    const run = async (...argv: string[]) => {
      const lines: string[] = [];
      const code = await runCli(argv, { out: () => {}, log: createLogger('debug', (l) => lines.push(l)) });
      return { code, lines };
    };
    // A download from a loopback server that has nothing: notes (the folder, the licence), then an error per file.
    const server = createServer((_, res) => res.writeHead(404).end()).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-quiet-'));
    const args = [
      'data',
      'download',
      '--dir',
      dir,
      '--tasks',
      'RuMedTest',
      '--base-url',
      `http://127.0.0.1:${port}/`,
    ];
    const loud = await run(...args);
    const quiet = await run(...args, '--quiet');
    server.close();
    expect(quiet.code).toBe(loud.code);
    expect(loud.lines.some((l) => !/^(warning|error): /.test(l))).toBe(true);
    expect(quiet.lines).toEqual(loud.lines.filter((l) => /^(warning|error): /.test(l)));
  });
});
