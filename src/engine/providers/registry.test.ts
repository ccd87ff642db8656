/**
 * A provider is one record: a provider registered here, in the test, and nowhere else, is checked by the spec, run end
 * to end by `runEvaluation`, made into a plan's cell and counted at its endpoint by the queue, with no other file
 * knowing its name (test/layout.test.ts: no file outside this folder compares against a provider's name).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fixtureDataDir } from '../../../test/helpers/fixture-data.js';
import { RunSpecError, UsageError } from '../../errors.js';
import { runCli } from '../../index.js';
import { FULL_PRICE_CACHE } from '../../llm/cost.js';
import type { Provider } from '../../llm/provider.js';
import { createLogger } from '../../log.js';
import { planProviders } from '../../plans/settings.js';
import { variablesOf } from '../../workers/keys.js';
import { batchApiOf } from '../llm.js';
import { runEvaluation } from '../run.js';
import { type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA } from '../spec.js';
import type { ProviderRecord } from './record.js';
import { providerNames, registerProvider } from './registry.js';

const echoSchema = z
  .object({
    name: z.literal('echo'),
    model: z.string().min(1),
    /** What it answers every question with. */
    answer: z.string().default('да'),
    key_env: z.string().optional(),
  })
  .strict();
type Echo = z.output<typeof echoSchema>;

const asked: string[] = [];
const opened: { concurrency: number; env: string | undefined }[] = [];
const echo: ProviderRecord<Echo> = {
  name: 'echo',
  about: 'a test double that answers one word',
  schema: echoSchema,
  local: false,
  concurrency: 3,
  cachePricing: { cached: (p) => p / 4, cacheWrite: (p) => p * 2 },
  leavesOut: ['reasoning_effort'],
  paths: [],
  async open(p, o) {
    opened.push({ concurrency: o.concurrency, env: p.key_env ? o.env?.[p.key_env] : undefined });
    const provider: Provider = {
      describe: () => ({ provider: 'echo', model: p.model }),
      async chat(messages) {
        asked.push(String(messages.at(-1)?.content));
        return { text: p.answer, usage: { promptTokens: 10, completionTokens: 1 } };
      },
    };
    return provider;
  },
  modelName: (p) => `echo-${p.model}`,
  variables: (p) => (p.key_env ? [{ variable: p.key_env, holds: 'key' }] : []),
  endpoint: (p) => `echo ${p.model}`,
  problems: (s) => (s.mode === 'loglik' ? ['mode: echo answers; it scores nothing'] : []),
};
registerProvider(echo);

const specOf = (provider: Record<string, unknown>, more: Record<string, unknown> = {}) =>
  makeRunSpec({
    schema: RUN_SPEC_SCHEMA,
    kind: 'llm',
    provider,
    tasks: ['RuMedDaNet'],
    data: fixtureDataDir(),
    bootstrap: 0,
    ...more,
  }) as LlmSpec;

describe('a provider registered from outside', () => {
  it('is run end to end by runEvaluation: its schema, its defaults, its client, its model name, its prices', async () => {
    const spec = specOf({ name: 'echo', model: 'm' }, { prices: { prompt: 8, completion: 1 } });
    expect([spec.provider, spec.concurrency, spec.prices]).toEqual([
      { name: 'echo', model: 'm', answer: 'да' },
      3,
      { prompt: 8, completion: 1, cached: 2, cache_write: 16 },
    ]);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-echo-'));
    asked.length = 0;
    const outcome = await runEvaluation(spec, { out });
    if (outcome.kind !== 'llm') throw new Error('an llm outcome');
    // The fixture's 60 test items, each asked once of the provider's own client.
    expect([outcome.result.sent, asked.length, opened.at(-1)]).toEqual([
      60,
      60,
      { concurrency: 3, env: undefined },
    ]);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.spec.provider).toEqual({ name: 'echo', model: 'm', answer: 'да' });
    // Every answer is "да" and every other item's gold is (test/helpers/fixture-data.ts): half right, scored.
    expect(outcome.result.evaluation.tasks.RuMedDaNet?.metrics).toEqual({ accuracy: 50 });
  });

  it("is checked by its own schema and rules, and refused where it has no batch API, in the spec's words", () => {
    const problems = (provider: Record<string, unknown>, more: Record<string, unknown> = {}) => {
      try {
        specOf(provider, more);
        return [];
      } catch (e) {
        if (!(e instanceof RunSpecError)) throw e;
        return [...e.problems];
      }
    };
    expect(problems({ name: 'echo', model: 'm', answer: 5 }).join('\n')).toMatch(/provider\.answer/);
    expect(problems({ name: 'echo', model: 'm', base_url: 'http://x' }).join('\n')).toMatch(/base_url/);
    expect(problems({ name: 'echo', model: 'm' }, { mode: 'loglik' }).join('\n')).toMatch(
      /mode: echo answers; it scores nothing/,
    );
    expect(problems({ name: 'echo', model: 'm' }, { batch: true }).join('\n')).toMatch(
      /batch: a provider's batch \(openai or anthropic\); echo has none/,
    );
    expect(problems({ name: 'nobody', model: 'm' }).join('\n')).toMatch(
      /provider\.name: one of openai, anthropic, llama, echo, got "nobody"/,
    );
    const open = { describe: () => ({ provider: 'echo', model: 'm' }) } as unknown as Provider;
    expect(() => batchApiOf(open)).toThrow(
      /--batch: echo has no batch API; give --provider openai or anthropic/,
    );
  });

  it('is a plan cell, counted at its own endpoint, with its keys read where the cell runs', () => {
    const plan = planProviders().echo;
    if (!plan) throw new Error('the plan knows the registered provider');
    expect(plan.settings.has('answer')).toBe(true);
    expect(plan.settings.has('reasoning_effort')).toBe(false);
    const spec = plan.toSpec({ model: 'm', key_env: 'ECHO_KEY', tasks: ['RuMedDaNet'] }) as LlmSpec;
    expect([spec.provider, plan.endpoint(spec), plan.inFlight(spec), variablesOf(spec.provider)]).toEqual([
      { name: 'echo', model: 'm', answer: 'да', key_env: 'ECHO_KEY' },
      'echo m',
      3,
      [{ variable: 'ECHO_KEY', holds: 'key' }],
    ]);
  });

  it("is among the CLI's --provider choices, read when a command line is parsed; one not registered is refused naming those that are", async () => {
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-echo-cli-'));
    const said: string[] = [];
    const io = {
      out: (t: string) => said.push(t),
      err: (t: string) => said.push(t),
      log: createLogger('silent'),
    };
    asked.length = 0;
    const args = ['--model', 'm', '--data', fixtureDataDir(), '--tasks', 'RuMedDaNet', '--bootstrap', '0'];
    const code = await runCli(['llm', '--provider', 'echo', ...args, '--out', out, '--json'], io);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect([code, asked.length, manifest.spec.provider, manifest.command]).toEqual([
      0,
      60,
      { name: 'echo', model: 'm', answer: 'да' },
      `rumedbench llm --provider echo --model m --tasks RuMedDaNet --data ${fixtureDataDir()} --concurrency 3 --bootstrap 0`,
    ]);
    said.length = 0;
    const refused = await runCli(['llm', '--provider', 'nobody', ...args, '--out', join(out, 'x')], io);
    expect([refused, said.join('').split('\n')[0]]).toEqual([
      2,
      "error: option '--provider <name>' argument 'nobody' is invalid. Allowed choices are openai, anthropic, llama, echo.",
    ]);
    said.length = 0;
    await runCli(['llm', '--help'], io);
    // Help wraps its lines: read as one.
    expect(said.join('').replace(/\s+/g, ' ')).toContain(
      'or a test double that answers one word (choices: "openai", "anthropic", "llama", "echo"',
    );
  });

  it('cannot replace a provider already registered', () => {
    expect(() => registerProvider({ ...echo })).toThrow(UsageError);
    expect(providerNames()).toEqual(['openai', 'anthropic', 'llama', 'echo']);
    expect(FULL_PRICE_CACHE.cached(3)).toBe(3);
  });
});
