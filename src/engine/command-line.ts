/**
 * The command line that makes a run spec, for people to read: a manifest records it beside the spec, and nothing
 * parses it back. An LLM run's is written from the flags' table (src/engine/llm-flags.ts), field by field, so that
 * it reads back into the same spec (src/cli/run-spec.test.ts walks the table to prove it).
 */
import { flagWordsOf } from './flag-table.js';
import { LLM_FLAGS } from './llm-flags.js';
import type { ProviderSpec, RunSpec } from './spec.js';

const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The command line that makes the same run. Templates and other values with no flag of their own are named by the
 * spec file.
 */
export function commandLineOf(spec: RunSpec): string {
  const a: string[] = ['rumedbench'];
  const push = (flag: string, v: unknown) => {
    if (v === undefined || v === false) return;
    if (v === true) a.push(flag);
    else a.push(flag, quote(String(v)));
  };
  // A probe's provider takes the flags of llm's.
  const provider = (p: ProviderSpec) => a.push(...flagWordsOf(LLM_FLAGS, { provider: p }, p.name).map(quote));
  if (spec.kind === 'contamination') {
    a.push('contamination');
    provider(spec.provider);
    push('--concurrency', spec.concurrency);
    push('--tasks', spec.tasks.join(','));
    for (const f of spec.task_files ?? []) push('--tasks-dir', f);
    push('--data', spec.data);
    push('--split', spec.split);
    push('--probes', spec.probes.join(','));
    push('--shards', spec.shards);
    push('--permutations', spec.permutations);
    push('--items', spec.items);
    push('--alpha', spec.alpha);
    push('--seed', spec.seed);
  } else if (spec.kind === 'llm') {
    a.push('llm', ...flagWordsOf(LLM_FLAGS, spec, spec.provider.name).map(quote));
    // Every command's --tasks-dir (src/cli/flags.ts) reads the definitions of tasks defined in files.
    for (const f of spec.task_files ?? []) push('--tasks-dir', f);
  } else {
    a.push('baseline', spec.method);
    const e = spec.encoder;
    if (e) {
      push('--model', e.model);
      push('--endpoint', e.endpoint);
      push('--api-key-env', e.api_key_env);
      push('--pooling', e.pooling);
      push('--dtype', e.dtype);
      push('--max-length', e.max_length);
      push('--batch-size', e.batch_size);
      push('--max-dimensions', e.max_dimensions);
      push('--C', e.C);
      if (e.cache === false) a.push('--no-cache');
      else push('--cache', e.cache);
      if (!e.download) a.push('--no-download');
    }
    push('--tasks', spec.tasks.join(','));
    for (const f of spec.task_files ?? []) push('--tasks-dir', f);
    push('--data', spec.data);
    push('--gold', spec.gold);
    push('--train-split', spec.train_split);
    push('--seed', spec.seed);
    push('--epochs', spec.epochs);
    push('--patience', spec.patience);
    push('--threads', spec.threads);
    push('--bootstrap', spec.bootstrap);
    push('--save', spec.save);
  }
  return a.join(' ');
}
