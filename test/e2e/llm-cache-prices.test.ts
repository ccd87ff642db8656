/** Cached prompt tokens priced apart (#43 item 5): the ledger keeps cache reads and writes, `llm.cost` prices them. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchWith } from '../helpers/cli.js';
import { type FakeAnthropic, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, llmArgs, readJsonl } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const KEY = 'sk-ant-test-0123456789';
const track = closedAfterEach<FakeOpenAI | FakeAnthropic>();

describe('llm: cache reads and writes at their own prices (fixture data)', () => {
  it('Anthropic: cache reads at 0.1× and writes at 1.25× of --price-prompt by default, and the ledger keeps both', async () => {
    const server = await startFakeAnthropic({
      key: KEY,
      reply: () => ({ text: 'Ответ: да', cacheRead: 40, cacheWrite: 30 }),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-cache-'));
    const run = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: KEY },
      ...llmArgs(
        { url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6, model: 'claude-fake' },
        ...['--provider', 'anthropic', '--api-key-env', 'ANTHROPIC_TEST_KEY'],
        ...['--price-prompt', '3', '--price-completion', '15', '--max-cost', '1', '--json'],
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const sum = (f: (r: FakeAnthropic['reported'][number]) => number) =>
      server.reported.reduce((n, r) => n + f(r), 0);
    expect(server.reported).toHaveLength(6);
    const summary = JSON.parse(run.stdout);
    expect(summary.llm.usage).toMatchObject({
      prompt_tokens: sum((r) => r.input + r.cacheRead + r.cacheWrite),
      completion_tokens: sum((r) => r.output),
      cached_prompt_tokens: 6 * 40,
      cache_write_tokens: 6 * 30,
    });
    // By hand: input at $3, cache reads at $0.30, cache writes at $3.75, output at $15 per million.
    const byHand = (sum((r) => r.input) * 3 + 6 * 40 * 0.3 + 6 * 30 * 3.75 + sum((r) => r.output) * 15) / 1e6;
    expect(summary.llm.cost).toBeCloseTo(byHand, 12);
    const samples = readJsonl(join(out, 'samples.jsonl'));
    expect(samples[0].usage).toMatchObject({ cached_prompt_tokens: 40, cache_write_tokens: 30 });
    // The spec records the prices the run paid, defaults filled in, and the command line writes them back.
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.spec.prices).toEqual({ prompt: 3, completion: 15, cached: 0.3, cache_write: 3.75 });
  });

  it('OpenAI-compatible: cached tokens (inside prompt_tokens) at --price-cached; in full when it is not given', async () => {
    const server = await startFakeOpenAI({ reply: () => ({ content: 'Ответ: да', cachedTokens: 16 }) });
    track(server);
    const args = (out: string, ...more: string[]) =>
      llmArgs(
        { url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6 },
        ...['--price-prompt', '2', '--price-completion', '8', '--json', ...more],
      );
    const a = mkdtempSync(join(tmpdir(), 'rumedbench-cache-'));
    const b = mkdtempSync(join(tmpdir(), 'rumedbench-cache-'));
    const priced = await rumedbench(...args(a, '--price-cached', '0.5'));
    expect(priced.code, priced.stderr).toBe(0);
    const full = await rumedbench(...args(b));
    expect(full.code, full.stderr).toBe(0);
    const usage = JSON.parse(priced.stdout).llm.usage;
    expect(usage.cached_prompt_tokens).toBe(6 * 16);
    expect(usage.cache_write_tokens).toBeUndefined();
    const uncached = usage.prompt_tokens - 6 * 16;
    expect(JSON.parse(priced.stdout).llm.cost).toBeCloseTo(
      (uncached * 2 + 6 * 16 * 0.5 + usage.completion_tokens * 8) / 1e6,
      12,
    );
    expect(JSON.parse(full.stdout).llm.cost).toBeCloseTo(
      (usage.prompt_tokens * 2 + usage.completion_tokens * 8) / 1e6,
      12,
    );
  });
});
