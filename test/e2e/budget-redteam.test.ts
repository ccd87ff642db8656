import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';
import { chatPromptTokens } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { query, startWorker } from '../helpers/workers.js';

const DATA = fixtureDataDir();
const PRICES = { prompt: 10, completion: 30 };
/** Prompt tokens the server bills and reports that no count made before sending can see: $0.05 a request. */
const HIDDEN = 5_000;

interface BillingServer {
  url: string;
  /** What it charged in all, and for one request at most (what one request in flight may add past a budget). */
  billed: () => number;
  dearest: () => number;
  requests: () => number;
  close: () => Promise<void>;
}

/**
 * A priced OpenAI-compatible server on loopback: each chat request is answered after 20 ms with `answer`'s reply,
 * billed for `prompt` and `completion` tokens, and its usage written as `usage` gives it.
 */
async function billingServer(
  answer: (messages: { content: string }[]) => {
    content: string;
    finish: string;
    prompt: number;
    completion: number;
    usage: (prompt: number, completion: number) => unknown;
  },
): Promise<BillingServer> {
  let billed = 0;
  let dearest = 0;
  let requests = 0;
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
      requests++;
      const { messages } = JSON.parse(body) as { messages: { content: string }[] };
      const a = answer(messages);
      const usd = (a.prompt * PRICES.prompt + a.completion * PRICES.completion) / 1e6;
      billed += usd;
      dearest = Math.max(dearest, usd);
      setTimeout(() => {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            model: 'fake-m',
            choices: [
              { index: 0, message: { role: 'assistant', content: a.content }, finish_reason: a.finish },
            ],
            usage: a.usage(a.prompt, a.completion),
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
    requests: () => requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * A priced server that reports its usage with the counts written as decimal texts (`"prompt_tokens": "5123"`), as
 * some gateways re-serialize them: the counts are there, only their JSON type is off.
 */
const stringUsageServer = (): Promise<BillingServer> =>
  billingServer((messages) => ({
    content: /«да» или «нет»/.test(messages.at(-1)?.content ?? '') ? 'Ответ: да' : 'Ответ: 1',
    finish: 'stop',
    prompt: chatPromptTokens(messages) + HIDDEN,
    completion: 3,
    usage: (prompt, completion) => ({ prompt_tokens: String(prompt), completion_tokens: String(completion) }),
  }));

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

/** Completion tokens the over-long replies are billed: 20,000 for a request that asked for 64 at most. */
const RUNAWAY = 20_000;
/** The reply cap the runs below set (`--max-reply-bytes`, a plan's `max_reply_bytes`), and a reply well past it. */
const CAP = 2048;
const LONG_REPLY = 'Ответ: да. '.repeat(400);

/**
 * A priced server that ignores max_tokens: every reply runs on past the client's reply cap, and is billed for RUNAWAY
 * completion tokens.
 */
const runawayServer = (): Promise<BillingServer> =>
  billingServer((messages) => ({
    content: LONG_REPLY,
    finish: 'length',
    prompt: chatPromptTokens(messages),
    completion: RUNAWAY,
    usage: (prompt, completion) => ({ prompt_tokens: prompt, completion_tokens: completion }),
  }));

/** The breaker's one line: the endpoint, max_tokens, the reply's size and the cap. */
const IGNORES_MAX_TOKENS =
  /http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions answered HTTP 200 with a reply of \d+ bytes, past the 2048 bytes of --max-reply-bytes, to a request for at most 64 tokens \(max_tokens\): the server does not honour max_tokens, so what it bills cannot be bounded; nothing more is sent to it/;

describe('max_cost against a server that ignores max_tokens (replies past --max-reply-bytes, red team)', () => {
  it('llm: the cut-off replies count as spent at their ceilings, and the run stops at once naming why', async () => {
    const s = await runawayServer();
    closers.push(s.close);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-redteam-'));
    const r = await rumedbench(
      'llm',
      ...['--model', 'fake-m', '--base-url', s.url, '--data', DATA, '--no-progress'],
      ...['--out', out, '--tasks', 'RuMedDaNet', '--max-retries', '0'],
      ...['--bootstrap', '0', '--max-tokens', '64', '--concurrency', '2', '--max-reply-bytes', String(CAP)],
      ...['--price-prompt', '10', '--price-completion', '30', '--max-cost', '1'],
    );
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(IGNORES_MAX_TOKENS);
    expect(r.stderr.split('\n').filter((l) => IGNORES_MAX_TOKENS.test(l))).toHaveLength(1);
    // Stopped at the first: what was in flight then, at most, was billed.
    expect(s.requests()).toBeLessThanOrEqual(2);
    expect(s.billed()).toBeLessThanOrEqual(2 * s.dearest());
    // Each cut-off reply is journaled as spent at its ceiling (at least 64 completion tokens), flagged an estimate.
    const cutOff = readFileSync(join(out, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as { status: string; usage?: { completionTokens: number }; usageProblem?: string },
      );
    expect(cutOff).toHaveLength(s.requests());
    for (const e of cutOff) {
      expect(e.status).toBe('error');
      expect(e.usage?.completionTokens).toBeGreaterThanOrEqual(64);
      expect(e.usageProblem).toMatch(
        /cut off past --max-reply-bytes: counted at its request's ceiling, an estimate/,
      );
    }
  });

  it('plan run: the cell fails at the first cut-off reply, naming why', async () => {
    const s = await runawayServer();
    closers.push(s.close);
    const r = await rumedbench(
      'plan',
      'run',
      runawayPlan(s.url),
      '--out',
      mkdtempSync(join(tmpdir(), 'rumedbench-redteam-')),
    );
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.stderr).toMatch(/m\/default/);
    expect(r.stderr).toMatch(IGNORES_MAX_TOKENS);
    expect(s.requests()).toBeLessThanOrEqual(2);
    expect(s.billed()).toBeLessThanOrEqual(2 * s.dearest());
  });
});

/** A plan of one cell (RuMedDaNet, 2 requests in flight, no retries) against `url`, capped at CAP bytes a reply. */
function runawayPlan(url: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-redteam-')), 'plan.yaml');
  writeFileSync(
    file,
    [
      'name: runaway',
      'split: test',
      'tasks: [RuMedDaNet]',
      `data: ${DATA}`,
      'defaults: {temperature: 0, max_tokens: 64, concurrency: 2, bootstrap: 0, max_retries: 0}',
      'models:',
      `  - {name: m, provider: openai, base_url: "${url}", model: fake-m, prices: {prompt: 10, completion: 30}, max_cost: 1, max_reply_bytes: ${CAP}}`,
      '',
    ].join('\n'),
  );
  return file;
}

describe.skipIf(!PG_URL)('max_cost on a worker against a server that ignores max_tokens (PostgreSQL)', () => {
  it("the cell fails naming why, and the queue's spent_usd counts the cut-off replies", async () => {
    const db = await freshDatabase('postgres');
    const s = await runawayServer();
    closers.push(s.close);
    const file = runawayPlan(s.url);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const w = startWorker(db, 'r1', ['--exit-when-idle', '--concurrency', '2']);
    expect((await w.exited).code, w.log()).toBe(0);
    expect(s.requests()).toBeLessThanOrEqual(2);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      cells: { cell: string; status: string; error?: string }[];
    };
    expect(status.cells.map((c) => [c.cell, c.status])).toEqual([['m/default', 'failed']]);
    expect(status.cells[0]?.error).toMatch(IGNORES_MAX_TOKENS);
    const [money] = await query<{ spent: number }>(
      db,
      'SELECT spent_usd AS spent FROM rumedbench_runs.cells WHERE plan_id = $1',
      [id],
    );
    // Each cut-off reply at no less than its ceiling: 64 completion tokens at $30 per million, and its prompt.
    expect(money?.spent).toBeGreaterThanOrEqual((s.requests() * 64 * 30) / 1e6);
  });
});

if (!PG_URL)
  describe('max_cost on a worker against a server that ignores max_tokens', () =>
    it.skip(NO_PG_REASON, () => {}));
