/** `--max-cost`: a run that may cost more sends nothing; one whose spending reaches it stops, and resumes. */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchWith } from '../helpers/cli.js';
import { type FakeAnthropic, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, llmArgs } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI | FakeAnthropic>();

const llm = (url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6 },
    ...['--max-tokens', '100', '--price-prompt', '10', '--price-completion', '30', ...more],
  );

/** The estimate a refusal names: its dollars, and its prompt and completion tokens. */
function estimateIn(message: string): { usd: number; prompt: number; completion: number } {
  const m = /up to \$([\d.]+) for (\d+) requests \((\d+) prompt tokens[^;]*; (\d+) completion tokens/.exec(
    message,
  );
  if (!m) throw new Error(`no estimate in: ${message}`);
  return { usd: Number(m[1]), prompt: Number(m[3]), completion: Number(m[4]) };
}

describe('llm --max-cost (fixture data)', () => {
  it('refuses a run whose estimate passes the budget, sending nothing; the prompts counted are what the server bills', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-cost-'));
    const refused = await rumedbench(...llm(server.url, out, '--max-cost', '0.001'));
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('prompt tokens as the server counts them');
    expect(refused.stderr).toContain('more than --max-cost $0.001, so nothing was sent');
    expect(server.requests).toHaveLength(0);
    expect(server.tokenizeCalls()).toBe(6);
    const estimate = estimateIn(refused.stderr);
    expect(estimate.completion).toBe(6 * 100);
    // Said to three significant digits.
    const exact = (estimate.prompt * 10 + estimate.completion * 30) / 1e6;
    expect(Math.abs(estimate.usd - exact) / exact).toBeLessThan(0.005);

    // Within the budget the same run goes through, and the server bills exactly the prompts counted beforehand.
    const ran = await rumedbench(...llm(server.url, out, '--max-cost', '1', '--json'));
    expect(ran.code, ran.stderr).toBe(0);
    const summary = JSON.parse(ran.stdout);
    expect(summary.llm.usage.prompt_tokens).toBe(estimate.prompt);
    expect(summary.llm.cost).toBeLessThanOrEqual(estimate.usd);
  });

  it('bounds prompts by their bytes where the server counts no tokens', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', tokenize: false });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-cost-'));
    const refused = await rumedbench(...llm(server.url, out, '--max-cost', '0.001'));
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      'prompt tokens at most (their UTF-8 bytes: the server counts no tokens)',
    );
    expect(server.requests).toHaveLength(0);
  });

  it('stops sending once the spending the server reports reaches the budget, and resumes under a larger one', async () => {
    // The server bills 20,000 prompt tokens it did not count beforehand on each request: $0.20 at $10 per million.
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', hiddenPromptTokens: 20_000 });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-cost-'));
    const stopped = await rumedbench(...llm(server.url, out, '--max-cost', '0.5', '--concurrency', '1'));
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toMatch(
      /the run has cost \$0\.6\d+ by the server's token counts, reaching --max-cost \$0\.5:/,
    );
    expect(stopped.stderr).toContain('3 of 6 requests are answered');
    expect(server.requests).toHaveLength(3);
    expect(existsSync(join(out, 'summary.json'))).toBe(false);

    // Resumed under the same budget: the journal has spent it, nothing is sent.
    const again = await rumedbench(...llm(server.url, out, '--max-cost', '0.5', '--resume'));
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/after the \$0\.6\d+ its journal has spent/);
    expect(server.requests).toHaveLength(3);

    const resumed = await rumedbench(...llm(server.url, out, '--max-cost', '5', '--resume', '--json'));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.requests).toHaveLength(6);
    const summary = JSON.parse(resumed.stdout);
    expect(summary.llm.cost).toBeCloseTo(
      (summary.llm.usage.prompt_tokens * 10 + summary.llm.usage.completion_tokens * 30) / 1e6,
      9,
    );
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.spec.max_cost).toBe(5);
  });

  it("counts an Anthropic run's prompts with the API's count_tokens", async () => {
    const server = await startFakeAnthropic({ key: 'k', reply: () => ({ text: 'Ответ: да' }) });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-cost-'));
    const refused = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: 'k' },
      ...llm(
        server.url,
        out,
        '--provider',
        'anthropic',
        '--api-key-env',
        'ANTHROPIC_TEST_KEY',
        '--max-cost',
        '0.001',
      ),
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('prompt tokens as the server counts them');
    expect(server.countCalls()).toBe(6);
    expect(server.requests).toHaveLength(0);
  });
});
