import { describe, expect, it } from 'vitest';
import { RunSpecError } from '../errors.js';
import { type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA, specJson } from './spec.js';

const openai = { name: 'openai', model: 'm', base_url: 'http://127.0.0.1:8000/v1' } as const;

describe('run specs', () => {
  it('fill every default once, when made', () => {
    const spec = makeRunSpec({ schema: RUN_SPEC_SCHEMA, kind: 'llm', provider: openai }) as LlmSpec;
    expect(spec).toEqual({
      schema: RUN_SPEC_SCHEMA,
      kind: 'llm',
      provider: {
        ...openai,
        headers: {},
        header_env: {},
        down_after: 5,
        timeout_ms: 120_000,
        max_retries: 6,
        max_wait_s: 60,
        max_reply_bytes: 4 << 20,
      },
      tasks: ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER', 'RuMedTest'],
      split: 'test',
      mode: 'generate',
      label_words: false,
      shots: 0,
      seed: 0,
      temperature: 0,
      max_tokens: 1024,
      stop: [],
      concurrency: 8,
      prompts: [],
      perturb: [],
      repeats: 1,
      bootstrap: 1000,
    });
    // A local model evaluates one sequence at a time unless told otherwise.
    const local = makeRunSpec({
      schema: RUN_SPEC_SCHEMA,
      kind: 'llm',
      provider: { name: 'llama', model: '/m.gguf' },
    }) as LlmSpec;
    expect([local.concurrency, local.provider]).toEqual([
      1,
      { name: 'llama', model: '/m.gguf', context_size: 4096, gpu: false },
    ]);
    // Made again from its own JSON, a spec is the same spec.
    expect(makeRunSpec(JSON.parse(JSON.stringify(spec)))).toEqual(spec);
  });

  it('name every problem with its path, and the schema of another release', () => {
    const bad = () =>
      makeRunSpec(
        {
          schema: RUN_SPEC_SCHEMA,
          kind: 'llm',
          provider: { ...openai, max_retries: -1 },
          tasks: ['RuMedDanet'],
          max_tokens: 0,
          colour: 'red',
        },
        'spec.json',
      );
    expect(bad).toThrow(RunSpecError);
    expect(bad).toThrow(/spec\.json: not a valid run spec/);
    let message = '';
    try {
      bad();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('provider.max_retries');
    expect(message).toContain('tasks');
    expect(message).toContain('unknown task "RuMedDanet"');
    expect(message).toContain('max_tokens');
    expect(message).toContain('colour');
    expect(() => makeRunSpec({ schema: 'rumedbench.run/2', kind: 'llm' })).toThrow(
      /a spec of another release/,
    );
    expect(() => makeRunSpec({ schema: RUN_SPEC_SCHEMA, kind: 'train' })).toThrow(
      /kind: one of llm, baseline, contamination, got "train"/,
    );
    expect(() => makeRunSpec([])).toThrow(/a JSON object/);
  });

  it('are the same spec whichever way round their keys are written', () => {
    const a = makeRunSpec({ schema: RUN_SPEC_SCHEMA, kind: 'llm', provider: openai, shots: 1 });
    const b = makeRunSpec({
      shots: 1,
      provider: { base_url: openai.base_url, model: 'm', name: 'openai' },
      kind: 'llm',
      schema: RUN_SPEC_SCHEMA,
    });
    expect(specJson(a)).toBe(specJson(b));
  });

  it('refuse encoder settings on other baselines, and local settings with an endpoint', () => {
    expect(() =>
      makeRunSpec({ schema: RUN_SPEC_SCHEMA, kind: 'baseline', method: 'naive', encoder: { model: 'x' } }),
    ).toThrow(/encoder: only for method encoder/);
    expect(() =>
      makeRunSpec({
        schema: RUN_SPEC_SCHEMA,
        kind: 'baseline',
        method: 'encoder',
        encoder: { model: 'x', endpoint: 'http://127.0.0.1:1/v1', pooling: 'cls' },
      }),
    ).toThrow(/pooling: for a model run here, not with an endpoint/);
  });
});
