/**
 * The CLI reference (docs/cli.md), written from the commands' own declarations: every command, its arguments, and
 * every flag with its default and choices. `npm run docs:cli` rewrites the file; a test fails when it is stale.
 */
import type { Command, Option } from 'commander';
import { createLogger } from '../log.js';
import { buildFullProgram } from './program.js';

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/</g, '\\<').replace(/\n/g, ' ');

function defaultOf(o: Option): string {
  if (o.negate) return '';
  const d = o.defaultValue as unknown;
  if (d === undefined || d === false || (Array.isArray(d) && d.length === 0)) return '';
  return `\`${typeof d === 'string' ? d : JSON.stringify(d)}\``;
}

function section(cmd: Command, path: string[]): string[] {
  const name = [...path, cmd.name()].join(' ');
  const args = cmd.registeredArguments.map((a) =>
    a.required ? `<${a.name()}${a.variadic ? '...' : ''}>` : `[${a.name()}]`,
  );
  const out = [`## \`${[name, ...args].join(' ')}\``, '', cmd.description(), ''];
  if (cmd.registeredArguments.length > 0) {
    out.push('| argument | what |', '| --- | --- |');
    for (const a of cmd.registeredArguments) out.push(`| \`${a.name()}\` | ${cell(a.description)} |`);
    out.push('');
  }
  const options = cmd.options.filter((o) => o.long !== '--version');
  if (options.length > 0) {
    out.push('| flag | default | what |', '| --- | --- | --- |');
    for (const o of options) {
      const choices = o.argChoices ? ` (one of ${o.argChoices.map((c) => `\`${c}\``).join(', ')})` : '';
      const required = o.mandatory ? ' **Required.**' : '';
      out.push(
        `| \`${o.flags.replace(/\|/g, '\\|')}\` | ${defaultOf(o)} | ${cell(o.description)}${choices}${required} |`,
      );
    }
    out.push('');
  }
  return out;
}

function walk(cmd: Command, path: string[], out: string[]): void {
  for (const sub of cmd.commands) {
    if (sub.commands.length === 0 || sub.options.length > 0 || sub.registeredArguments.length > 0)
      out.push(...section(sub, path));
    else out.push(`## \`${[...path, sub.name()].join(' ')} …\``, '', sub.description(), '');
    walk(sub, [...path, sub.name()], out);
  }
}

/** The reference as Markdown. */
export async function cliReference(): Promise<string> {
  const program = await buildFullProgram({ out: () => {}, log: createLogger('silent') }, () => {});
  const out = [
    '# `rumedbench` command reference',
    '',
    '<!-- Written by `npm run docs:cli` from the flag tables in src/cli/; do not edit by hand. -->',
    '',
    `Every command, its arguments and its flags, with defaults. \`rumedbench --version\` (or \`-V\`) prints the version;`,
    'every command takes `--help`. Exit codes: 0 done; 1 the input has errors, or a run scored nothing; 2 a bad command',
    'line (an `--out` it cannot write to among them: one line, no stack trace); 3 an LLM run with failed requests (or',
    'mostly echoed, cut-off or filtered replies), not scored; 4 an LLM run stopped by the server (key, model, URL,',
    'redirect); 5 an LLM run stopped because its server is down; 70 an internal error.',
    '',
  ];
  walk(program, ['rumedbench'], out);
  return `${out.join('\n').trimEnd()}\n`;
}
