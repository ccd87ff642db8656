/** `rumedbench llm --provider anthropic` against a loopback server faithful to the Messages API. */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { getTask } from '../../src/tasks/registry.js';
import { CLI_ENV, rumedbenchWith } from '../helpers/cli.js';
import { type FakeAnthropic, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, killWhen, llmArgs, readJsonl } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const KEY = 'sk-ant-test-0123456789';
const track = closedAfterEach<FakeAnthropic>();

const llm = (url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6, model: 'claude-fake' },
    ...['--provider', 'anthropic', '--api-key-env', 'ANTHROPIC_TEST_KEY', ...more],
  );

describe('llm --provider anthropic (fixture data)', () => {
  it('asks the Messages API as documented, through 529 and 429, and reads answers, thinking and the ledger', async () => {
    const task = getTask('RuMedDaNet');
    const records = (await loadSplit(task, 'test', { dataDir: DATA })).slice(0, 6);
    const gold = new Map(records.map((r) => [task.prompt.render(r.raw), r.gold as string]));
    const server = await startFakeAnthropic({
      key: KEY,
      reply: (body) => {
        const last = body.messages[body.messages.length - 1]?.content ?? '';
        const g = gold.get(last.slice(last.indexOf('\n\n') + 2)) ?? '?';
        return {
          text: `Ответ: ${g}`,
          thinking: `Не «Ответ: ${g === 'да' ? 'нет' : 'да'}» ли?`,
          cacheRead: 4,
        };
      },
      // An overloaded API first, then a rate limit with its Retry-After: both retried, nothing lost.
      behaviour: (n) =>
        n === 0 ? { kind: '529' } : n === 1 ? { kind: '429', retryAfter: '1' } : { kind: 'ok' },
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-'));
    const run = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: KEY },
      ...llm(server.url, out, '--thinking-budget', '1024', '--max-tokens', '2048', '--json'),
    );
    expect(run.code, run.stderr).toBe(0);
    const first = server.requests[0];
    expect(first?.headers['x-api-key']).toBe(KEY);
    expect(first?.headers.authorization).toBeUndefined();
    expect(first?.body).toMatchObject({
      model: 'claude-fake',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(first?.body.temperature).toBeUndefined();
    expect(typeof first?.body.system).toBe('string');
    expect(first?.body.messages.map((m) => m.role)).toEqual(['user']);
    expect(server.requests).toHaveLength(6 + 2);

    const samples = readJsonl(join(out, 'samples.jsonl'));
    expect(samples.map((s) => [s.status, s.correct])).toEqual(Array(6).fill(['parsed', true]));
    expect(samples[0].reasoning).toMatch(/^Не «Ответ: (да|нет)» ли\?$/);
    expect(samples[0].reply).toMatch(/^Ответ: (да|нет)$/);
    const summary = JSON.parse(run.stdout);
    expect(summary.tasks.RuMedDaNet.metrics.accuracy).toBe(100);
    // The ledger equals what the API reported: all prompt tokens (cached ones included), output tokens; Anthropic
    // does not count thinking apart, so no reasoning tokens are claimed.
    const sum = (f: (r: FakeAnthropic['reported'][number]) => number) =>
      server.reported.reduce((n, r) => n + f(r), 0);
    expect(summary.llm.usage).toMatchObject({
      prompt_tokens: sum((r) => r.input + r.cacheRead),
      completion_tokens: sum((r) => r.output),
      cached_prompt_tokens: 24,
    });
    expect(summary.llm.usage.reasoning_tokens).toBeUndefined();
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ provider: 'anthropic', model: 'claude-fake' });
    expect(manifest.spec.provider).toMatchObject({ name: 'anthropic', base_url: server.url });
    expect(JSON.stringify(manifest)).not.toContain(KEY);
  });

  it("sends a run as a Message Batch: the online run's predictions, failures re-sent alone, at half the price", async () => {
    const task = getTask('RuMedDaNet');
    const records = (await loadSplit(task, 'test', { dataDir: DATA })).slice(0, 6);
    const gold = new Map(records.map((r) => [task.prompt.render(r.raw), r.gold as string]));
    const reply = (body: { messages: { content: string }[] }) => {
      const last = body.messages[body.messages.length - 1]?.content ?? '';
      return { text: `Ответ: ${gold.get(last.slice(last.indexOf('\n\n') + 2)) ?? '?'}` };
    };
    const online = await startFakeAnthropic({ key: KEY, reply });
    // The first batch's second and fifth requests error (an API error in their results); later batches are clean.
    const batched = await startFakeAnthropic({
      key: KEY,
      reply,
      behaviour: (n) => (n === 1_000_001 || n === 1_000_004 ? { kind: '529' } : { kind: 'ok' }),
    });
    track(online, batched);
    const a = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-online-'));
    const b = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-batch-'));
    const env = { ANTHROPIC_TEST_KEY: KEY };
    const prices = ['--price-prompt', '3', '--price-completion', '15'];
    const onlineRun = await rumedbenchWith(env, ...llm(online.url, a, ...prices, '--json'));
    expect(onlineRun.code, onlineRun.stderr).toBe(0);
    const argv = llm(batched.url, b, ...prices, '--batch', '--batch-poll', '0.01');
    const failed = await rumedbenchWith(env, ...argv);
    expect(failed.code).toBe(3);
    expect(failed.stderr).toContain('2 of 6 requests failed');
    expect(failed.stderr).toContain('batch msgbatch_1: errored: Internal server error');
    const retried = await rumedbenchWith(env, ...argv, '--resume', '--retry-errors', '--json');
    expect(retried.code, retried.stderr).toBe(0);
    expect(batched.requests).toHaveLength(0);
    expect(batched.batches().map((x) => x.request_counts)).toEqual([
      { processing: 0, succeeded: 4, errored: 2, canceled: 0, expired: 0 },
      { processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 },
    ]);
    // The batch's requests are the online run's, with the same custom ids a journal keys them by.
    expect(
      batched.batchLines
        .slice(0, 6)
        .map((l) => JSON.stringify(l))
        .sort(),
    ).toEqual(online.requests.map((r) => JSON.stringify(r.body)).sort());
    const read = (dir: string) => readFileSync(join(dir, 'predictions', 'RuMedDaNet.jsonl'), 'utf8');
    expect(read(b)).toBe(read(a));
    const summary = JSON.parse(retried.stdout);
    const onlineSummary = JSON.parse(onlineRun.stdout);
    expect(summary.llm.batch).toEqual({
      provider: 'anthropic',
      batches: ['msgbatch_1', 'msgbatch_2'],
      discount: 0.5,
      answers: summary.llm.requests.total,
      cost: summary.llm.cost,
    });
    expect(summary.llm.usage.prompt_tokens).toBe(onlineSummary.llm.usage.prompt_tokens);
    expect(summary.llm.cost).toBeCloseTo(onlineSummary.llm.cost / 2, 12);
  });

  it('a run killed while its Message Batch waits is collected by --resume, never submitted again', async () => {
    let hold = true;
    const server = await startFakeAnthropic({
      key: KEY,
      reply: () => ({ text: 'Ответ: да' }),
      holdBatches: () => hold,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-kill-'));
    const argv = llm(server.url, out, '--batch', '--batch-poll', '0.02');
    await killWhen(argv, { ...CLI_ENV, ANTHROPIC_TEST_KEY: KEY }, () => server.batchLooks() >= 3);
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
    hold = false;
    const resumed = await rumedbenchWith({ ANTHROPIC_TEST_KEY: KEY }, ...argv, '--resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(
      'batch msgbatch_1: submitted by an earlier run; collecting its 6 requests',
    );
    expect(server.batches()).toHaveLength(1);
    expect(server.batchLines).toHaveLength(6);
    expect(server.requests).toHaveLength(0);
  });

  it('stops at a refused key, and refuses what the API cannot do before sending anything', async () => {
    const server = await startFakeAnthropic({ key: KEY, reply: () => ({ text: 'Ответ: да' }) });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-'));
    const refused = await rumedbenchWith({ ANTHROPIC_TEST_KEY: 'sk-ant-wrong' }, ...llm(server.url, out));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('HTTP 401: invalid x-api-key (the server refused the key');
    expect(refused.stderr).not.toContain('sk-ant-wrong');

    const asked = server.requests.length;
    const loglik = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: KEY },
      ...llm(server.url, out, '--mode', 'loglik'),
    );
    expect(loglik.code).toBe(2);
    expect(loglik.stderr).toContain('--mode: the Messages API returns no log-probabilities; use generate');
    const budget = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: KEY },
      ...llm(server.url, out, '--thinking-budget', '512'),
    );
    expect(budget.code).toBe(2);
    expect(budget.stderr).toContain(
      '--thinking-budget: Anthropic takes at least 1024 tokens, and fewer than --max-tokens (1024), which the thinking counts against; got 512',
    );
    const effort = await rumedbenchWith(
      { ANTHROPIC_TEST_KEY: KEY },
      ...llm(server.url, out, '--reasoning-effort', 'high'),
    );
    expect(effort.code).toBe(2);
    expect(server.requests.length).toBe(asked);
  });
});
