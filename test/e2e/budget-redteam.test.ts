import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rumedbench } from '../helpers/cli.js';
import { chatPromptTokens } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const PRICES = { prompt: 10, completion: 30 };
/** Prompt tokens the server bills and reports that no count made before sending can see: $0.05 a request. */
const HIDDEN = 5_000;

/**
 * A priced OpenAI-compatible server that reports its usage with the counts written as decimal texts
 * (`"prompt_tokens": "5123"`), as some gateways re-serialize them: the counts are there, only their JSON type is off.
 */
async function stringUsageServer(): Promise<{
  url: string;
  billed: () => number;
  dearest: () => number;
  close: () => Promise<void>;
}> {
  let billed = 0;
  let dearest = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      if (!req.url?.endsWith('/chat/completions')) {
        res.statusCode = 404;
        res.end('{}');
        return;
      }
      const { messages } = JSON.parse(body) as { messages: { content: string }[] };
      const text = /«да» или «нет»/.test(messages.at(-1)?.content ?? '') ? 'Ответ: да' : 'Ответ: 1';
      const prompt = chatPromptTokens(messages) + HIDDEN;
      const completion = 3;
      const usd = (prompt * PRICES.prompt + completion * PRICES.completion) / 1e6;
      billed += usd;
      dearest = Math.max(dearest, usd);
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            model: 'fake-m',
            choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
            usage: { prompt_tokens: String(prompt), completion_tokens: String(completion) },
          }),
        );
      }, 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    billed: () => billed,
    dearest: () => dearest,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

describe('max_cost against a server that writes its token counts as texts (red team, issue #58)', () => {
  it('the counts it reports are what is spent: the run stops at the budget plus what was in flight', async () => {
    const s = await stringUsageServer();
    closers.push(s.close);
    const max = 1;
    const r = await rumedbench(
      'llm',
      ...['--model', 'fake-m', '--base-url', s.url, '--data', DATA, '--no-progress'],
      ...['--out', mkdtempSync(join(tmpdir(), 'rumedbench-redteam-')), '--tasks', 'RuMedDaNet'],
      ...['--bootstrap', '0', '--max-tokens', '64', '--concurrency', '2'],
      ...['--price-prompt', '10', '--price-completion', '30', '--max-cost', String(max)],
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/reaching --max-cost \$1\.00/);
    expect(s.billed()).toBeGreaterThanOrEqual(max);
    expect(s.billed()).toBeLessThanOrEqual(max + 2 * s.dearest());
  });
});
