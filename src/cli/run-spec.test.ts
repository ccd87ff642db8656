/** The run spec a command line makes, and the command line a manifest records for it, agree. */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandLineOf, type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA } from '../engine/spec.js';
import { PLAN_PROVIDERS } from '../plans/settings.js';
import { BASELINE_FLAGS, type BaselineFlags, baselineSpecOf } from './baseline.js';
import { CONTAMINATION_FLAGS, type ContaminationFlags, contaminationSpecOf } from './contamination.js';
import { addFlags } from './flags.js';
import { LLM_FLAGS, type LlmFlags, llmSpecOf } from './llm.js';

const openai = { name: 'openai', model: 'm', base_url: 'http://127.0.0.1:8000/v1' } as const;

/** The flags commander gives for a command line, as the `llm` or `baseline` command would see them. */
function flagsOf<T>(table: Parameters<typeof addFlags>[1], words: string[]): T {
  let flags: T | undefined;
  const cmd = addFlags(new Command('x').exitOverride(), table).action((f: T) => {
    flags = f;
  });
  cmd.parse(words, { from: 'user' });
  return flags as T;
}

/** A command line as a shell would split it (single quotes only, as commandLineOf writes them). */
const words = (line: string) =>
  [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map(
    (m) => m[1]?.replace(/'\\''/g, "'") ?? (m[2] as string),
  );

describe('run specs and the command line', () => {
  it('have a command line that the CLI reads back into the same spec', () => {
    const spec = makeRunSpec({
      schema: RUN_SPEC_SCHEMA,
      kind: 'llm',
      provider: { ...openai, headers: { 'X-Team': 'a b' }, api_key_env: 'KEY', max_retries: 2 },
      tasks: ['RuMedDaNet', 'RuMedNLI'],
      split: 'both',
      data: '/data/rumed',
      mode: 'generate',
      shots: 2,
      seed: 7,
      temperature: 0.5,
      max_tokens: 64,
      stop: ["it's", '\n\n'.trim() || 'x'],
      system: "Ты — врач. Отвечай 'кратко'.",
      limit: 5,
      prompts: ['p2'],
      perturb: [{ kind: 'typos', rate: 0.05 }, { kind: 'yo' }],
      repeats: 3,
      shard: { index: 2, count: 4 },
      allow_failures: { percent: 2.5 },
      prices: { prompt: 0.5, completion: 1.5 },
      bootstrap: 0,
    }) as LlmSpec;
    const line = commandLineOf(spec);
    expect(
      line.startsWith('rumedbench llm --provider openai --model m --base-url http://127.0.0.1:8000/v1'),
    ).toBe(true);
    const back = llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, [...words(line).slice(2), '--out', 'x']));
    expect(back).toEqual(spec);

    const enc = baselineSpecOf(
      'encoder',
      flagsOf<BaselineFlags>(BASELINE_FLAGS, [
        '--model',
        '/models/rubert',
        '--pooling',
        'cls',
        '--no-cache',
        '--C',
        '0.5',
      ]),
    );
    const encBack = baselineSpecOf(
      'encoder',
      flagsOf<BaselineFlags>(BASELINE_FLAGS, words(commandLineOf(enc)).slice(3)),
    );
    expect(encBack).toEqual(enc);
  });

  it('come back from the command line a manifest records for a batch run, a log-likelihood run and a probe', () => {
    const base = { schema: RUN_SPEC_SCHEMA, tasks: ['RuMedDaNet', 'RuMedTest'] } as const;
    const batch = makeRunSpec({
      ...base,
      kind: 'llm',
      provider: { ...openai, base_url: 'https://api.openai.com/v1', api_key_env: 'KEY' },
      batch: true,
      batch_poll_s: 30,
      batch_discount: 0.4,
      batch_deadline_h: 48,
      max_cost: 12.5,
      prices: { prompt: 2, completion: 8 },
      reasoning_effort: 'low',
      label_words: true,
    }) as LlmSpec;
    const loglik = makeRunSpec({ ...base, kind: 'llm', provider: openai, mode: 'loglik', split: 'both' });
    for (const spec of [batch, loglik])
      expect(
        llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, [...words(commandLineOf(spec)).slice(2), '--out', 'x'])),
      ).toEqual(spec);
    const probe = makeRunSpec({
      ...base,
      kind: 'contamination',
      provider: openai,
      probes: ['order'],
      permutations: 20,
      items: 50,
      alpha: 0.01,
      seed: 3,
    });
    expect(
      contaminationSpecOf(
        flagsOf<ContaminationFlags>(CONTAMINATION_FLAGS, words(commandLineOf(probe)).slice(2)),
      ),
    ).toEqual(probe);
  });

  it('fill the cache prices by provider once, write them back, and take them from a plan as from the flags', () => {
    const anthropic = { name: 'anthropic', model: 'claude', api_key_env: 'KEY' } as const;
    const base = { schema: RUN_SPEC_SCHEMA, kind: 'llm', tasks: ['RuMedDaNet'] } as const;
    const filled = makeRunSpec({
      ...base,
      provider: anthropic,
      prices: { prompt: 3, completion: 15 },
    }) as LlmSpec;
    expect(filled.prices).toEqual({ prompt: 3, completion: 15, cached: 0.3, cache_write: 3.75 });
    const plain = makeRunSpec({ ...base, provider: openai, prices: { prompt: 2, completion: 8 } }) as LlmSpec;
    expect(plain.prices).toEqual({ prompt: 2, completion: 8, cached: 2, cache_write: 2 });
    const given = makeRunSpec({
      ...base,
      provider: openai,
      prices: { prompt: 2, completion: 8, cached: 0.5, cache_write: 0 },
    }) as LlmSpec;
    expect(given.prices).toEqual({ prompt: 2, completion: 8, cached: 0.5, cache_write: 0 });
    const line = commandLineOf(given);
    expect(line).toContain('--price-prompt 2 --price-completion 8 --price-cached 0.5 --price-cache-write 0');
    expect(llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, [...words(line).slice(2), '--out', 'x']))).toEqual(given);
    const fromPlan = PLAN_PROVIDERS.openai?.toSpec({
      model: 'm',
      base_url: 'http://127.0.0.1:8000/v1',
      tasks: ['RuMedDaNet'],
      prices: { prompt: 2, completion: 8, cached: 0.5, cache_write: 0 },
    }) as LlmSpec;
    expect(fromPlan.prices).toEqual(given.prices);
    expect(() =>
      llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, ['--model', 'm', '--out', 'x', '--price-cached', '1'])),
    ).toThrow(/--price-cached and --price-cache-write go with the prices/);
  });
});
