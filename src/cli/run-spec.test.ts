/** The run spec a command line makes, and the command line a manifest records for it, agree. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandLineOf } from '../engine/command-line.js';
import { boundFlags, type FlagTable, flagNameOf } from '../engine/flag-table.js';
import { type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA, type RunSpec } from '../engine/spec.js';
import { UsageError } from '../errors.js';
import { loadPlan } from '../plans/file.js';
import { planProviders, RENAMED } from '../plans/settings.js';
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
    const fromPlan = planProviders().openai?.toSpec({
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

/**
 * One value other than the default for every flag of `llm` that fills a spec field, as typed on a command line
 * (with the flags it needs beside it). A flag added to the table without one fails the walk below.
 */
const TEMPLATES = join(mkdtempSync(join(tmpdir(), 'rumedbench-flags-')), 'templates.json');
writeFileSync(TEMPLATES, JSON.stringify({ RuMedDaNet: { system: 'Отвечай да или нет.' } }));
const PRICES = ['--price-prompt', '0.5', '--price-completion', '1.5'];
const LOCAL = ['--provider', 'llama'];
const EXAMPLES: Record<string, string[]> = {
  provider: ['--provider', 'anthropic', '--api-key-env', 'KEY'],
  model: ['--model', 'other-model'],
  baseUrl: ['--base-url', 'http://10.0.0.1:9/v1'],
  apiKeyEnv: ['--api-key-env', 'MY_KEY'],
  header: ['--header', 'X-Team: a b', '--header', 'X-Other: c'],
  headerEnv: ['--header-env', 'Authorization: MY_TOKEN'],
  downAfter: ['--down-after', '0'],
  timeoutMs: ['--timeout-ms', '5000'],
  maxRetries: ['--max-retries', '2'],
  maxWait: ['--max-wait', '9'],
  maxReplyBytes: ['--max-reply-bytes', '2048'],
  contextSize: [...LOCAL, '--context-size', '512'],
  gpu: [...LOCAL, '--gpu'],
  threads: [...LOCAL, '--threads', '3'],
  mode: ['--mode', 'loglik'],
  labelWords: ['--label-words'],
  tasks: ['--tasks', 'RuMedDaNet,RuMedNLI'],
  split: ['--split', 'both'],
  data: ['--data', '/data/rumed'],
  gold: ['--gold', '/data/gold'],
  shots: ['--shots', '2'],
  seed: ['--seed', '7'],
  temperature: ['--temperature', '0.5'],
  maxTokens: ['--max-tokens', '64'],
  stop: ['--stop', "it's", '--stop', '###'],
  reasoningEffort: ['--reasoning-effort', 'low'],
  thinkingBudget: ['--thinking-budget', '256'],
  system: ['--system', "Ты — врач. Отвечай 'кратко'."],
  template: ['--template', TEMPLATES],
  concurrency: ['--concurrency', '3'],
  allowFailures: ['--allow-failures', '2.5%'],
  limit: ['--limit', '5'],
  prompts: ['--tasks', 'RuMedDaNet', '--prompts', 'p2'],
  perturb: ['--perturb', 'typos=0.05,yo'],
  repeats: ['--repeats', '3'],
  shard: ['--shard', '2/4'],
  pricePrompt: PRICES,
  priceCompletion: ['--price-prompt', '0', '--price-completion', '8'],
  priceCached: [...PRICES, '--price-cached', '0.1'],
  priceCacheWrite: [...PRICES, '--price-cache-write', '0'],
  batch: ['--batch'],
  batchPoll: ['--batch', '--batch-poll', '30'],
  batchDiscount: ['--batch', '--batch-discount', '0.4'],
  batchDeadline: ['--batch', '--batch-deadline', '48'],
  batchResults: ['--batch-results', '/runs/results.jsonl'],
  maxCost: [...PRICES, '--max-cost', '12.5'],
  bootstrap: ['--bootstrap', '0'],
};

const at = (o: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);
/** The model a line asks: a model server's, or a local model's where the line names one. */
const modelOf = (args: string[]) =>
  args.includes('llama') ? ['--model', '/models/m.gguf'] : ['--model', 'm', '--base-url', openai.base_url];
/** The spec `llm` makes of a command line. */
const specOfLine = (args: string[]) =>
  llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, [...modelOf(args), ...args, '--out', 'x']));

/** `baseline`'s examples, each after its method (the first word); an encoder's model is given where none is. */
const EMBEDDINGS = ['--endpoint', 'http://127.0.0.1:9/v1', '--model', 'e5'];
const BASELINE_EXAMPLES: Record<string, string[]> = {
  tasks: ['encoder', '--tasks', 'RuMedTest,RuMedDaNet'],
  data: ['encoder', '--data', '/data/rumed'],
  gold: ['encoder', '--gold', '/data/gold'],
  save: ['tfidf', '--save', '/models/saved'],
  trainSplit: ['encoder', '--train-split', 'dev'],
  seed: ['encoder', '--seed', '7'],
  threads: ['encoder', '--threads', '3'],
  epochs: ['bilstm', '--epochs', '3'],
  patience: ['bilstm', '--patience', '2'],
  bootstrap: ['encoder', '--bootstrap', '0'],
  model: ['encoder', '--model', '/models/other'],
  pooling: ['encoder', '--pooling', 'cls'],
  endpoint: ['encoder', ...EMBEDDINGS],
  apiKeyEnv: ['encoder', ...EMBEDDINGS, '--api-key-env', 'EMB_KEY'],
  maxDimensions: ['encoder', ...EMBEDDINGS, '--max-dimensions', '1024'],
  dtype: ['encoder', '--dtype', 'q8'],
  maxLength: ['encoder', '--max-length', '64'],
  batchSize: ['encoder', '--batch-size', '4'],
  C: ['encoder', '--C', '0.5'],
  cache: ['encoder', '--cache', '/cache/embeddings'],
  download: ['encoder', '--no-download'],
};
const specOfBaseline = ([method, ...rest]: string[]) =>
  baselineSpecOf(
    method as string,
    flagsOf<BaselineFlags>(BASELINE_FLAGS, [
      ...(method === 'encoder' && !rest.includes('--model') ? ['--model', '/models/rubert'] : []),
      ...rest,
    ]),
  );

/** `contamination`'s examples: `llm`'s for the provider's flags it shares, its own for the rest. */
const CONTAMINATION_OWN: Record<string, string[]> = {
  split: ['--split', 'dev'],
  probes: ['--probes', 'guided,options'],
  shards: ['--shards', '5'],
  permutations: ['--permutations', '7'],
  items: ['--items', '20'],
  alpha: ['--alpha', '0.05'],
  seed: ['--seed', '3'],
};
const specOfProbe = (args: string[]) =>
  contaminationSpecOf(flagsOf<ContaminationFlags>(CONTAMINATION_FLAGS, [...modelOf(args), ...args]));

/** A run kind's command: its table, an example for every flag that fills a field, and its spec both ways. */
interface Kind {
  table: FlagTable;
  examples: Record<string, string[]>;
  /** The spec the command makes of an example's words (with what the command needs beside them). */
  specOf(args: string[]): RunSpec;
  /** The spec before the example: the same command with only what it needs. */
  before(args: string[]): RunSpec;
  /** The spec the manifest's command line (`rumedbench <command> …`) reads back into. */
  back(line: string): RunSpec;
  /** The examples' flags that no plan carries (a plan carries LLM cells and encoder baselines); all where none. */
  notInPlans?: string[];
}

const KINDS: Record<string, Kind> = {
  llm: {
    table: LLM_FLAGS,
    examples: EXAMPLES,
    specOf: specOfLine,
    before: (args) => specOfLine(args.includes('llama') ? LOCAL : []),
    back: (line) => llmSpecOf(flagsOf<LlmFlags>(LLM_FLAGS, [...words(line).slice(2), '--out', 'x'])),
    notInPlans: ['provider', 'batchResults'],
  },
  baseline: {
    table: BASELINE_FLAGS,
    examples: BASELINE_EXAMPLES,
    specOf: specOfBaseline,
    before: (args) => specOfBaseline(args.slice(0, 1)),
    back: (line) => {
      const w = words(line);
      return baselineSpecOf(w[2] as string, flagsOf<BaselineFlags>(BASELINE_FLAGS, w.slice(3)));
    },
    // Saved models are a step of one run by hand; a plan's baselines are encoders.
    notInPlans: ['save', 'epochs', 'patience'],
  },
  contamination: {
    table: CONTAMINATION_FLAGS,
    examples: Object.fromEntries(
      boundFlags(CONTAMINATION_FLAGS).map(([k]) => [k, CONTAMINATION_OWN[k] ?? (EXAMPLES[k] as string[])]),
    ),
    specOf: specOfProbe,
    before: (args) => specOfProbe(args.includes('llama') ? LOCAL : []),
    back: (line) =>
      contaminationSpecOf(flagsOf<ContaminationFlags>(CONTAMINATION_FLAGS, words(line).slice(2))),
  },
};

describe.each(Object.entries(KINDS))(
  'the table from flags to spec fields of %s (src/engine/*-flags.ts)',
  (_, kind) => {
    const bound = boundFlags(kind.table);

    it('has an example for every flag that fills a field, and each example changes its field', () => {
      expect(bound.map(([k]) => k).filter((k) => !(k in kind.examples))).toEqual([]);
      expect(Object.keys(kind.examples).filter((k) => !bound.some(([b]) => b === k))).toEqual([]);
      for (const [key, f] of bound) {
        const args = kind.examples[key] as string[];
        expect([key, at(kind.specOf(args), f.field.path)]).not.toEqual([
          key,
          at(kind.before(args), f.field.path),
        ]);
      }
    });

    it("round-trips the manifest's command line for every field: the line reads back into the same spec", () => {
      for (const [key, f] of bound) {
        const spec = kind.specOf(kind.examples[key] as string[]);
        const line = commandLineOf(spec);
        if (f.field.notWritten !== undefined) {
          // A file read into the spec (--template): the line names the spec, which holds what the file held.
          expect([key, line]).toEqual([
            key,
            expect.stringContaining(`${flagNameOf(f)} '${f.field.notWritten}'`),
          ]);
          continue;
        }
        expect([key, kind.back(line)]).toEqual([key, spec]);
      }
    });

    // A plan carries LLM cells and encoder baselines, no probes.
    if (kind.notInPlans !== undefined)
      it('takes in a plan every value the flag takes: the same text in a plan makes the same spec', () => {
        const taken: string[] = [];
        for (const [key, f] of bound) {
          const args = kind.examples[key] as string[];
          const spec = kind.specOf(args);
          const name = flagNameOf(f);
          const setting = f.field.path.replace(/^(provider|encoder)\./, '');
          const providerName =
            spec.kind === 'llm' ? spec.provider.name : spec.kind === 'baseline' ? spec.method : '';
          const provider = planProviders()[providerName];
          if (!provider?.settings.has(setting) && !provider?.settings.has(RENAMED[setting] ?? setting))
            continue;
          taken.push(key);
          // The other fields as a plan holds them (the spec's own form); this one as the command line gave it.
          const { schema: _s, kind: _k, task_files: _t, ...run } = spec as Record<string, unknown>;
          const own = (run.provider ?? run.encoder ?? {}) as Record<string, unknown>;
          const { name: _n, ...ownFields } = own;
          delete run.provider;
          delete run.encoder;
          delete run.method;
          const texts = args.flatMap((w, i) => (w === name ? [args[i + 1] as string] : []));
          const typed = !f.flag.includes('<')
            ? !name.startsWith('--no-')
            : Array.isArray(f.default)
              ? texts
              : texts.at(-1);
          const entry: Record<string, unknown> = { name: 'm', provider: providerName, ...ownFields, ...run };
          delete entry[setting];
          // A price given alone stands beside the others, each by its own key (`prices.prompt`).
          if (setting.startsWith('prices.')) {
            for (const [k, v] of Object.entries(entry.prices as object)) entry[`prices.${k}`] = v;
            delete entry.prices;
          }
          entry[setting] = typed;
          const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-plan-form-')), 'plan.yaml');
          writeFileSync(file, `name: forms\nmodels:\n  - ${JSON.stringify(entry)}\n`);
          const { cells } = loadPlan(file);
          expect([key, typed, cells[0]?.spec]).toEqual([key, typed, spec]);
        }
        expect(bound.map(([k]) => k).filter((k) => !taken.includes(k))).toEqual(kind.notInPlans);
      });
  },
);

describe('the flags of llm, baseline and contamination', () => {
  it("say the spec's problems in the flags' words: each field named becomes its flag", () => {
    expect(() => specOfLine(['--max-cost', '3'])).toThrow(
      '--max-cost: needs prices (USD per million tokens)',
    );
    expect(() => specOfLine(['--batch-poll', '3'])).toThrow(
      '--batch-poll, --batch-discount, --batch-deadline: go with batch: true',
    );
    expect(() =>
      specOfLine(['--provider', 'anthropic', '--api-key-env', 'K', '--thinking-budget', '9']),
    ).toThrow(
      '--thinking-budget: Anthropic takes at least 1024 tokens, and fewer than --max-tokens (1024), which the thinking counts against; got 9',
    );
    const refusal = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof UsageError ? e.message : String(e);
      }
      return 'accepted';
    };
    expect([
      refusal(() => specOfBaseline(['encoder', ...EMBEDDINGS, '--pooling', 'cls', '--no-download'])),
      refusal(() => specOfBaseline(['encoder', '--max-dimensions', '10'])),
      refusal(() => specOfBaseline(['bilstm', '--threads', '3'])),
      refusal(() => specOfBaseline(['naive', '--epochs', '2', '--pooling', 'cls', '--no-cache'])),
      refusal(() =>
        baselineSpecOf(
          'encoder',
          flagsOf<BaselineFlags>(BASELINE_FLAGS, ['--endpoint', 'http://127.0.0.1:9/v1']),
        ),
      ),
      refusal(() => specOfProbe(['--alpha', '1.5'])),
    ]).toEqual([
      '--pooling, --no-download: for a model run here, not with an endpoint (the server pools, and its heads cannot be reopened without it)',
      '--max-dimensions: for an embeddings endpoint, not a model run here',
      '--threads: method bilstm runs at most 2 threads, one per direction of each layer',
      '--epochs: only for baseline bilstm\n--pooling, --no-cache: only for baseline encoder',
      '--endpoint needs --model NAME, the model the server embeds with',
      expect.stringMatching(/^--alpha: /),
    ]);
  });

  it('derive the old plan keys from the flags whose names are not their fields', () => {
    expect(RENAMED).toEqual({
      max_wait: 'max_wait_s',
      header: 'headers',
      template: 'templates',
      price_prompt: 'prices.prompt',
      price_completion: 'prices.completion',
      price_cached: 'prices.cached',
      price_cache_write: 'prices.cache_write',
      batch_poll: 'batch_poll_s',
      batch_deadline: 'batch_deadline_h',
    });
  });
});
