import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPlan } from './file.js';

describe('plan cells sent as batches', () => {
  it('hold no request slots at their endpoint, and carry batch in their spec', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-plan-batch-')), 'plan.yaml');
    writeFileSync(
      file,
      [
        'name: b',
        'tasks: [RuMedDaNet]',
        'models:',
        '  - {name: online, provider: openai, base_url: "http://localhost:8000/v1", model: m, concurrency: 6}',
        '  - {name: batched, provider: openai, base_url: "http://localhost:8000/v1", model: m, batch: true}',
        '  - {name: claude, provider: anthropic, api_key_env: ANTHROPIC_API_KEY, model: c, batch: true}',
        '',
      ].join('\n'),
    );
    const { cells } = loadPlan(file);
    expect(cells.map((c) => [c.id.split('/')[0], c.endpoint, c.inFlight])).toEqual([
      ['online', 'openai http://localhost:8000/v1', 6],
      ['batched', 'openai http://localhost:8000/v1', 0],
      ['claude', 'anthropic https://api.anthropic.com/v1', 0],
    ]);
    expect(cells.map((c) => c.spec.kind === 'llm' && c.spec.batch === true)).toEqual([false, true, true]);
  });
});
