/**
 * The command line that makes a run spec, for people to read: a manifest records it beside the spec, and nothing
 * parses it back. Each kind's is written from its command's table of flags (./llm-flags.ts, ./baseline-flags.ts,
 * ./contamination-flags.ts), field by field, so that it reads back into the same spec (src/cli/run-spec.test.ts
 * walks the tables to prove it).
 */
import { BASELINE_FLAGS } from './baseline-flags.js';
import { CONTAMINATION_FLAGS } from './contamination-flags.js';
import { flagWordsOf } from './flag-table.js';
import { LLM_FLAGS } from './llm-flags.js';
import type { RunSpec } from './spec.js';

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The command line that makes the same run. Templates and other values with no flag of their own are named by the
 * spec file.
 */
export function commandLineOf(spec: RunSpec): string {
  const words =
    spec.kind === 'llm'
      ? ['llm', ...flagWordsOf(LLM_FLAGS, spec, spec.provider.name)]
      : spec.kind === 'contamination'
        ? ['contamination', ...flagWordsOf(CONTAMINATION_FLAGS, spec, spec.provider.name)]
        : ['baseline', spec.method, ...flagWordsOf(BASELINE_FLAGS, spec, spec.method)];
  // Every command's --tasks-dir (src/cli/flags.ts) reads the definitions of tasks defined in files.
  for (const f of spec.task_files ?? []) words.push('--tasks-dir', f);
  return ['rumedbench', ...words.map(quote)].join(' ');
}
