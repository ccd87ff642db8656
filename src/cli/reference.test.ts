/** The CLI reference is written from the flag tables (#20): it is never stale, and no flag goes undocumented. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/helpers/data.js';
import { createLogger } from '../log.js';
import { buildFullProgram } from './program.js';
import { cliReference } from './reference.js';

describe('docs/cli.md', () => {
  it('is what `npm run docs:cli` writes from the flag tables today', async () => {
    const file = readFileSync(join(REPO_ROOT, 'docs', 'cli.md'), 'utf8');
    expect(file === (await cliReference()), 'docs/cli.md is stale: run `npm run docs:cli`').toBe(true);
  });

  it('describes every command, argument and flag', async () => {
    const program = await buildFullProgram({ out: () => {}, log: createLogger('silent') }, () => {});
    const undocumented: string[] = [];
    const walk = (cmd: typeof program, path: string): void => {
      for (const sub of cmd.commands) {
        const here = `${path} ${sub.name()}`;
        if (!sub.description()) undocumented.push(here);
        for (const a of sub.registeredArguments)
          if (!a.description) undocumented.push(`${here} <${a.name()}>`);
        for (const o of sub.options) if (!o.description) undocumented.push(`${here} ${o.flags}`);
        walk(sub, here);
      }
    };
    walk(program, 'rumedbench');
    expect(undocumented).toEqual([]);
    expect(await cliReference()).toContain('| `--allow-failures <n\\|p%>` |');
  });
});
