/**
 * The reply cap fits the request (#25): an echo of log-probabilities is as large as the prompts it echoes, so its cap
 * grows with them; a generation reply past --max-reply-bytes, or an echo past what its prompts explain, still fails.
 * And --concurrency N is N requests at the server, /tokenize included.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rumedbench } from '../helpers/cli.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
const start = async (o: Omit<Parameters<typeof startFakeOpenAI>[0], 'reply'> & { reply?: () => string }) => {
  const s = await startFakeOpenAI({ reply: () => 'Ответ: да', ...o });
  servers.push(s);
  return s;
};
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-cap-'));
const llm = (s: FakeOpenAI, ...args: string[]) =>
  rumedbench(
    'llm',
    '--model',
    'fake-1',
    '--base-url',
    s.url,
    '--data',
    DATA,
    '--no-progress',
    '--bootstrap',
    '0',
    ...args,
  );

describe('the reply cap fits the request (on fixture data the test writes)', () => {
  it('scores a log-likelihood run whose echo replies are many times the cap, as their prompts explain', async () => {
    // 600 bytes per echoed token (vLLM writes 150-250): a RuMedTop3 request of 30 candidates is some 2 MB.
    const s = await start({ echoBytesPerToken: 600 });
    const out = tmp();
    const r = await llm(
      s,
      '--mode',
      'loglik',
      '--tasks',
      'RuMedTop3,RuMedDaNet,RuMedNLI',
      '--max-reply-bytes',
      '65536',
      '--out',
      out,
    );
    expect([r.code, r.stderr]).toEqual([0, expect.not.stringContaining('larger than')]);
    expect(s.largest()).toBeGreaterThan(10 * 65536);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      tasks: Record<string, { n: number }>;
      llm: { failed_requests: number };
    };
    expect(summary.llm.failed_requests).toBe(0);
    expect(Object.keys(summary.tasks).sort()).toEqual(['RuMedDaNet', 'RuMedNLI', 'RuMedTop3']);
  });

  it('still cuts off an echo larger than its prompts explain, and a long generation reply', async () => {
    const echo = await start({ echoBytesPerToken: 4000 });
    const a = await llm(
      echo,
      '--mode',
      'loglik',
      '--tasks',
      'RuMedDaNet',
      '--out',
      tmp(),
      '--max-reply-bytes',
      '65536',
    );
    expect(a.code).toBe(3);
    expect(a.stderr).toContain('the reply is larger than the request can explain');

    const huge = 'да '.repeat(9 << 20); // 50 MiB of UTF-8
    const gen = await start({ reply: () => huge });
    const b = await llm(gen, '--tasks', 'RuMedDaNet', '--limit', '2', '--out', tmp(), '--max-retries', '0');
    // A successful generation past the cap: the server ignores max_tokens, and the run stops (exit 4).
    expect(b.code).toBe(4);
    expect(b.stderr).toMatch(
      /answered HTTP 200 with a reply of (more than )?\d+ bytes, past the 4194304 bytes of --max-reply-bytes, to a request for at most \d+ tokens \(max_tokens\)/,
    );
  });

  it('runs the order probe with shards as long as the context, their echoes several times the cap', async () => {
    const s = await start({ echoBytesPerToken: 600, maxModelLen: 4096 });
    const r = await rumedbench(
      ...['contamination', '--model', 'fake-1', '--base-url', s.url, '--data', DATA],
      ...['--tasks', 'RuMedDaNet', '--probes', 'order', '--max-reply-bytes', '65536', '--shards', '2'],
    );
    expect([r.code, r.stderr]).toEqual([0, expect.not.stringContaining('larger than')]);
    expect(s.largest()).toBeGreaterThan(4 * 65536);
  });

  it('keeps --concurrency N requests at the server at most, /tokenize included', async () => {
    const s = await start({ completionsDelayMs: 15, tokenizeDelayMs: 5 });
    const r = await llm(
      s,
      '--mode',
      'loglik',
      '--tasks',
      'RuMedTop3,RuMedDaNet',
      '--concurrency',
      '4',
      '--out',
      tmp(),
    );
    expect(r.code).toBe(0);
    expect(s.peak()).toBe(4);
  });
});
