/**
 * `rumedbench llm` against providers that lie, attacked from outside (issue #59, red team): the built CLI spawned as a
 * user runs it, against a small OpenAI-compatible server written here, on loopback. Each row is a lie that broke a
 * promise before its fix: a key echoed in an encoding the redaction did not know (HTML entities, lowercase percent
 * escapes, JSON's `\u0026`), a results file whose lines are not the batch's answers though the provider counts them
 * done, and replies without token counts priced at $0 under `--max-cost`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENV } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, ledgerEvents, llmArgs } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
/** A key with the characters that encodings change: / + = & and a quote. */
const KEY = 'sk-te/st+Kq9=x&y"z-secret';

interface Lying {
  url: string;
  chats: number;
  creates: number;
  downloads: number;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => boolean;

const completion = (model: string, content: string, usage: unknown) => ({
  id: 'chatcmpl-x',
  object: 'chat.completion',
  created: 0,
  model,
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  ...(usage === undefined ? {} : { usage }),
});

/**
 * An OpenAI-compatible server (chat completions and the Batch API) whose lies the row gives: `chat` answers a chat
 * request where it returns true; `resultLine` writes a batch's results file line by line.
 */
async function lyingServer(o: {
  chat?: (n: number, res: ServerResponse, model: string) => boolean;
  usage?: unknown;
  /** A results line in place of the honest one; undefined keeps it. */
  resultLine?: (customId: string, i: number, honest: unknown) => unknown;
  other?: Handler;
}): Promise<Lying> {
  const files = new Map<string, string>();
  /** Each batch's results file, written when it is downloaded (so that a row can stop lying). */
  const outputs = new Map<string, () => string>();
  const batches = new Map<string, Record<string, unknown>>();
  const s = { chats: 0, creates: 0, downloads: 0 };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const url = req.url ?? '';
    if (req.method === 'POST' && url.endsWith('/chat/completions')) {
      const body = JSON.parse(raw.toString('utf8')) as { model: string };
      const n = s.chats++;
      if (o.chat?.(n, res, body.model)) return;
      json(
        200,
        completion(
          body.model,
          'Ответ: да',
          o.usage === undefined ? { prompt_tokens: 100, completion_tokens: 5 } : o.usage,
        ),
      );
      return;
    }
    if (req.method === 'POST' && url === '/v1/files') {
      const form = await new Response(raw, {
        headers: { 'content-type': String(req.headers['content-type']) },
      }).formData();
      const id = `file-${files.size + 1}`;
      files.set(id, await (form.get('file') as Blob).text());
      json(200, {
        id,
        object: 'file',
        bytes: raw.length,
        created_at: 0,
        filename: 'in.jsonl',
        purpose: 'batch',
      });
      return;
    }
    if (req.method === 'GET' && /^\/v1\/batches(\?|$)/.test(url)) {
      json(200, { object: 'list', data: [...batches.values()].reverse(), has_more: false });
      return;
    }
    if (req.method === 'POST' && url === '/v1/batches') {
      s.creates++;
      const body = JSON.parse(raw.toString('utf8')) as { input_file_id: string; metadata?: unknown };
      const input = (files.get(body.input_file_id) ?? '')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { custom_id: string; body: { model: string } });
      const id = `batch_${batches.size + 1}`;
      outputs.set(`out-${id}`, () =>
        input
          .map((l, i) => {
            const honest = {
              id: `r${i}`,
              custom_id: l.custom_id,
              response: {
                status_code: 200,
                body: completion(l.body.model, 'Ответ: да', { prompt_tokens: 100, completion_tokens: 5 }),
              },
              error: null,
            };
            return `${JSON.stringify(o.resultLine?.(l.custom_id, i, honest) ?? honest)}\n`;
          })
          .join(''),
      );
      const batch = {
        id,
        object: 'batch',
        endpoint: '/v1/chat/completions',
        input_file_id: body.input_file_id,
        completion_window: '24h',
        status: 'completed',
        output_file_id: `out-${id}`,
        error_file_id: null,
        request_counts: { total: input.length, completed: input.length, failed: 0 },
        created_at: Math.floor(Date.now() / 1000),
        metadata: body.metadata ?? null,
      };
      batches.set(id, batch);
      json(200, batch);
      return;
    }
    const batch = /^\/v1\/batches\/([^/]+)$/.exec(url);
    if (req.method === 'GET' && batch) {
      const b = batches.get(decodeURIComponent(batch[1] as string));
      if (b) json(200, b);
      else json(404, { error: { message: 'No batch found' } });
      return;
    }
    const file = /^\/v1\/files\/([^/]+)\/content$/.exec(url);
    if (req.method === 'GET' && file) {
      s.downloads++;
      const name = decodeURIComponent(file[1] as string);
      res
        .writeHead(200, { 'content-type': 'application/octet-stream' })
        .end(outputs.get(name)?.() ?? files.get(name));
      return;
    }
    if (o.other?.(req, res, raw.toString('utf8'))) return;
    json(404, { error: { message: 'Not found' } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get chats() {
      return s.chats;
    },
    get creates() {
      return s.creates;
    },
    get downloads() {
      return s.downloads;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const track = closedAfterEach<Lying>();

/** The built CLI as a user runs it, with the key in RB_KEY. */
function cli(argv: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...argv], {
    env: { ...CLI_ENV, RB_KEY: KEY },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((r) => child.once('close', (code) => r({ code, stderr })));
}

const llm = (url: string, out: string, ...more: string[]) =>
  llmArgs({ url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6 }, '--api-key-env', 'RB_KEY', ...more);

/** The key's encodings a server may echo it in, beside those issue #59 named (raw, JSON-escaped, URL-encoded). */
const ENCODED: Record<string, string> = {
  'URL-encoded, lowercase hex': encodeURIComponent(KEY).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  'HTML entities': KEY.replace(/&/g, '&amp;').replace(/"/g, '&quot;'),
  'JSON as Go writes it (& as \\u0026)': JSON.stringify(KEY).slice(1, -1).replace(/&/g, '\\u0026'),
  'JSON with \\/': JSON.stringify(KEY).slice(1, -1).replace(/\//g, '\\/'),
  'JSON, every character \\u-escaped': [...KEY]
    .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .join(''),
  'URL-encoded twice': encodeURIComponent(encodeURIComponent(KEY)),
};

/** `texts` and every file under `out`, as one text. */
function everythingIn(out: string, texts: string[]): string {
  const files = readdirSync(out, { recursive: true, encoding: 'utf8' })
    .map((f) => join(out, f))
    .filter((f) => statSync(f).isFile());
  return `${texts.join('\n')}\n${files.map((f) => readFileSync(f, 'utf8')).join('\n')}`;
}

/** The names of the encodings of KEY found in any file under `out` or in `texts`. */
function encodedKeysIn(out: string, ...texts: string[]): string[] {
  const everything = everythingIn(out, texts);
  return Object.entries({ raw: KEY, ...ENCODED })
    .filter(([, form]) => everything.includes(form))
    .map(([name]) => name);
}

/** A chat request answered with `echoed` in a 400's error message, or in a 200's reply. */
function echoIn(res: ServerResponse, model: string, echoed: string, status: 400 | 200): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(
      JSON.stringify(
        status === 400
          ? { error: { message: `upstream: ${echoed}` } }
          : completion(model, `Ответ: да (${echoed})`, { prompt_tokens: 100, completion_tokens: 5 }),
      ),
    );
}

describe('a key echoed in encodings beyond the raw, JSON and URL forms', () => {
  const echoed = Object.values(ENCODED).join(' | ');
  it('an error page, an error message and a reply that echo them reach no file of the run nor stderr', async () => {
    const server = await lyingServer({
      chat: (n, res, model) => {
        if (n % 3 === 0)
          res
            .writeHead(502, { 'content-type': 'text/html' })
            .end(`<html><body><h1>502 Bad Gateway</h1><p>${echoed}</p></body></html>`);
        else echoIn(res, model, echoed, n % 3 === 1 ? 400 : 200);
        return true;
      },
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-key-'));
    const run = await cli(llm(server.url, out, '--max-retries', '0'));
    // Two thirds of the requests failed (502 and 400), named on stderr with what the server said.
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('HTTP 502');
    expect(run.stderr).toContain('HTTP 400');
    expect(encodedKeysIn(out, run.stderr)).toEqual([]);
  });
});

/** Whether any 12 characters of the key's base64, at any of its three alignments, are in any file under `out` or in `texts`. */
function base64KeyIn(out: string, ...texts: string[]): string[] {
  const everything = everythingIn(out, texts);
  const found: string[] = [];
  for (const pad of ['', 'x', 'xy']) {
    const whole = Buffer.from(pad + KEY)
      .toString('base64')
      .slice(4, -4);
    for (let i = 0; i + 12 <= whole.length; i++)
      if (everything.includes(whole.slice(i, i + 12))) found.push(whole.slice(i, i + 12));
  }
  return found;
}

describe('a key echoed in base64 (red team, the leftovers of issue #59)', () => {
  it('Basic auth of "x:" + key and the raw base64 of the key reach no file of the run nor stderr', async () => {
    const basic = `Authorization: Basic ${Buffer.from(`x:${KEY}`).toString('base64')}`;
    const raw = Buffer.from(KEY).toString('base64');
    const echoed = `${basic} | token=${raw}`;
    const server = await lyingServer({
      chat: (n, res, model) => {
        echoIn(res, model, echoed, n % 2 === 0 ? 400 : 200);
        return true;
      },
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-b64-'));
    const run = await cli(llm(server.url, out, '--max-retries', '0'));
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('HTTP 400: upstream: Authorization: Basic ');
    expect(base64KeyIn(out, run.stderr)).toEqual([]);
  });
});

describe('a results file whose lines are not the batch answers the provider counts done', () => {
  const rows: Record<string, (customId: string, i: number, honest: unknown) => unknown> = {
    'every line another request (foreign ids)': (id, i, honest) => ({
      ...(honest as object),
      custom_id: `foreign-${i}-${id.slice(0, 6)}`,
    }),
    'lines that are not results': (_id, i) => `the upstream said nothing for ${i}`,
    'one request answered twice, another not at all': (_id, i, honest) =>
      i === 5 ? { ...(honest as object), custom_id: 'stolen' } : i === 4 ? honest : undefined,
  };
  for (const [name, line] of Object.entries(rows))
    it(`${name}: not collected, exit 3 naming --resume; --resume collects the same batch, paid once`, async () => {
      let lying = true;
      const server = await lyingServer({
        resultLine: (id, i, honest) => (lying ? line(id, i, honest) : undefined),
      });
      track(server);
      const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-ids-'));
      const args = llm(server.url, out, '--batch', '--batch-poll', '0.01');
      const first = await cli(args);
      expect(first.code).toBe(3);
      expect(first.stderr).toContain('--resume');
      expect(ledgerEvents(out)).not.toContain('collected');
      expect(existsSync(join(out, 'summary.json'))).toBe(false);
      lying = false;
      const again = await cli([...args, '--resume']);
      expect(again.code).toBe(0);
      expect({ creates: server.creates, chats: server.chats }).toEqual({ creates: 1, chats: 0 });
      expect(ledgerEvents(out).filter((e) => e === 'collected')).toHaveLength(1);
      const answered = readFileSync(join(out, 'journal.jsonl'), 'utf8').trim().split('\n');
      expect(answered).toHaveLength(6);
    });
});

const PRICES = ['--price-prompt', '1', '--price-completion', '2', '--max-tokens', '64'];
const summaryOf = (out: string) =>
  JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
    llm: { cost: number; usage: { prompt_tokens: number; replies_with_invalid_counts: number } };
  };
/** The ceiling a run said before sending ("cost: up to $0.0123 for …"), in USD. */
const ceilingSaid = (stderr: string): number => Number(/cost: up to \$([0-9.]+)/.exec(stderr)?.[1]);

describe('money the budget did not see', () => {
  it('replies without token counts are estimated, flagged and priced, not free', async () => {
    const server = await lyingServer({ usage: null });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-usage-'));
    const run = await cli(llm(server.url, out, ...PRICES, '--max-cost', '1'));
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('6 replies gave no token counts');
    const { llm: s } = summaryOf(out);
    expect(s.usage.replies_with_invalid_counts).toBe(6);
    expect(s.usage.prompt_tokens).toBeGreaterThan(0);
    expect(s.cost).toBeGreaterThan(0);
  });

  it('--resume --reask counts the answers it leaves unused as spent: a budget they would pass sends nothing', async () => {
    const server = await lyingServer({ usage: { prompt_tokens: 1000, completion_tokens: 5 } });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-reask-'));
    const first = await cli(llm(server.url, out, ...PRICES, '--max-cost', '1'));
    expect(first.code).toBe(0);
    const spent = summaryOf(out).llm.cost;
    expect(spent).toBeCloseTo(6 * (1000 + 5 * 2) * 1e-6, 10);
    // A budget the new requests' ceiling fits, but not on top of what the first answers cost.
    const max = ceilingSaid(first.stderr) + spent / 2;
    const reask = await cli(
      llm(
        server.url,
        out,
        ...PRICES,
        '--max-cost',
        String(max),
        '--resume',
        '--reask',
        '--temperature',
        '0.5',
      ),
    );
    expect(reask.code).toBe(3);
    expect(reask.stderr).toContain('its journal has spent');
    expect(server.chats).toBe(6);
  });
});

/**
 * vLLM's protocol (the repo's fake model) behind a proxy that adds, from the `from`th /v1/completions answer on (past
 * the probes), one choice numbered past the prompts sent.
 */
async function numberedPast(from: number): Promise<Lying> {
  const model = await startFakeOpenAI({ reply: () => 'Ответ: да' });
  let completions = 0;
  const proxy = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const upstream = await fetch(`${model.url.replace(/\/v1$/, '')}${req.url}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': 'application/json' },
      ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
    });
    let text = await upstream.text();
    if (req.url?.endsWith('/v1/completions') && ++completions >= from) {
      const json = JSON.parse(text) as { choices: { index: number }[] };
      const first = json.choices[0] as { index: number };
      json.choices.push({ ...first, index: json.choices.length + 3 });
      text = JSON.stringify(json);
    }
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`,
    chats: 0,
    creates: 0,
    get downloads() {
      return completions;
    },
    close: async () => {
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
      await model.close();
    },
  };
}

describe('log-likelihood: a reply numbered past the prompts sent', () => {
  it('fails the item naming the choice, never an internal error', async () => {
    const server = await numberedPast(4);
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rmb-redteam-index-'));
    const run = await cli(llm(server.url, out, '--mode', 'loglik', '--max-retries', '0'));
    expect(run.code).toBe(3);
    expect(run.stderr).not.toMatch(/TypeError|Cannot read properties/);
    expect(run.stderr).toMatch(/a choice numbered \d+ where \d+ prompts? (was|were) sent/);
  });
});
