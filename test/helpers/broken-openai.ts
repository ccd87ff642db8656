/**
 * A loopback OpenAI-compatible server that misbehaves in one chosen way, as real servers and proxies do (an nginx
 * error page, vLLM's top-level `{"message"}` errors, a 50 MiB reply, a hang, a redirect, a tool call instead of text,
 * log-probabilities that cannot be right), and is otherwise healthy: chat completions answer "да", `/tokenize` and
 * `/v1/completions` with `echo` behave as vLLM's (the tokenizer and log-probabilities of fake-openai.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { fakeLogprob, fakePiece, fakeTokenize } from './fake-openai.js';

export type Misbehaviour =
  | 'healthy'
  | 'html-502'
  | 'retry-after-3600'
  | 'hang'
  | 'unauthorized'
  | 'vllm-404'
  | 'context-length'
  | 'huge-reply'
  | 'null-content'
  | 'tool-call'
  | 'not-json'
  | 'truncated-json'
  | 'deep-json'
  | 'redirect'
  | 'absurd-usage'
  | 'other-model'
  | 'positive-logprobs'
  | 'long-logprobs'
  | 'shifted-logprobs'
  | 'tokenize-mismatch'
  | 'infinite-logprob'
  | 'echo'
  | 'truncated'
  | 'unclosed-think'
  | 'filtered'
  | 'echo-headers-401'
  | 'echo-headers-502'
  | 'zero-logprobs'
  | 'tiny-logprobs'
  | 'drop-token'
  | 'huge-usage'
  | 'echo-key-reply'
  | 'permuted-logprobs'
  | 'short-logprobs'
  | 'extra-logprob'
  | 'dies';

export interface BrokenServer {
  url: string;
  /** Requests received, by path. */
  counts: { chat: number; completions: number; tokenize: number };
  /** Headers of every request received. */
  headers: IncomingMessage['headers'][];
  /** Most requests in flight at once, and TCP connections opened. */
  peak: { inFlight: number; connections: number };
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

export async function startBrokenServer(
  mode: Misbehaviour,
  options: {
    redirectTo?: string;
    hugeBytes?: number;
    /**
     * Misbehave on /v1/completions from this request on (1: from the first; 2: after a healthy probe, so the text
     * check fails and items go by /tokenize ids; 4: after the probe and the text check, on the text path).
     */
    completionsFrom?: number;
    /** false: /v1/completions refuses text prompts (HTTP 400), so items go by /tokenize ids. */
    textPrompts?: boolean;
    /** `dies`: after answering this many chat requests, the server closes and nothing listens any more. */
    dieAfter?: number;
    /** What /tokenize says the model's context holds (8192 unless given). */
    maxModelLen?: number;
  } = {},
): Promise<BrokenServer> {
  const counts = { chat: 0, completions: 0, tokenize: 0 };
  const headers: IncomingMessage['headers'][] = [];
  const peak = { inFlight: 0, connections: 0 };
  let inFlight = 0;
  const hanging = new Set<ServerResponse>();
  const json = (res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', ...extra }).end(JSON.stringify(body));

  const server: Server = createServer(async (req, res) => {
    headers.push(req.headers);
    inFlight++;
    peak.inFlight = Math.max(peak.inFlight, inFlight);
    res.once('close', () => inFlight--);
    const body = await readBody(req);
    // A little latency, so that requests sent together overlap here as they would on a real server.
    await new Promise((r) => setTimeout(r, 2));
    const path = req.url ?? '';
    // Errors that echo the request's headers, as some gateways and debug servers do: the key is in the message.
    if (mode === 'echo-headers-401') {
      json(res, 401, { error: { message: `Unauthorized request, headers: ${JSON.stringify(req.headers)}` } });
      return;
    }
    if (mode === 'echo-headers-502') {
      res
        .writeHead(502, { 'content-type': 'text/plain' })
        .end(`upstream failed for ${req.method} ${path} with ${JSON.stringify(req.headers)}`);
      return;
    }
    if (mode === 'unauthorized') {
      json(res, 401, {
        error: { message: 'Incorrect API key provided: sk-…abcd.', type: 'invalid_request_error' },
      });
      return;
    }
    if (mode === 'vllm-404') {
      json(res, 404, {
        object: 'error',
        message: 'The model `fake-1` does not exist.',
        type: 'NotFoundError',
        code: 404,
      });
      return;
    }
    if (mode === 'redirect') {
      res.writeHead(307, { location: `${options.redirectTo ?? 'http://127.0.0.1:9'}${path}` }).end();
      return;
    }
    if (path === '/tokenize') {
      counts.tokenize++;
      const b = JSON.parse(body) as { prompt: string; add_special_tokens?: boolean };
      let tokens = fakeTokenize(b.prompt, b.add_special_tokens ?? true);
      // A tokenizer whose counts do not add up: every text is three tokens.
      if (mode === 'tokenize-mismatch' && b.prompt !== '') tokens = tokens.slice(0, 3);
      // A tokenizer that loses the last token of every text.
      if (mode === 'drop-token' && tokens.length > 1) tokens = tokens.slice(0, -1);
      json(res, 200, { tokens, count: tokens.length, max_model_len: options.maxModelLen ?? 8192 });
      return;
    }
    if (path.endsWith('/v1/completions')) {
      counts.completions++;
      const misbehave = counts.completions >= (options.completionsFrom ?? 1);
      const b = JSON.parse(body) as { prompt: string | string[] | number[] | number[][]; echo?: boolean };
      // A server that reads only token ids (as some proxies in front of vLLM do): a text is refused.
      const isText =
        typeof b.prompt === 'string' || (Array.isArray(b.prompt) && typeof b.prompt[0] === 'string');
      if (options.textPrompts === false && isText) {
        json(res, 400, { error: { message: 'prompt must be a list of token ids' } });
        return;
      }
      // As vLLM reads a prompt: token ids, a text (tokenized with the BOS), or a list of either.
      const prompts: (string | number[])[] =
        Array.isArray(b.prompt) && (Array.isArray(b.prompt[0]) || typeof b.prompt[0] === 'string')
          ? (b.prompt as number[][] | string[])
          : [b.prompt as string | number[]];
      let choices = prompts.map((prompt, index) => {
        const ids = typeof prompt === 'string' ? fakeTokenize(prompt, true) : prompt;
        let all = [...ids, 2];
        // One candidate's arrays two tokens short (the last two prompt tokens gone), or one token long.
        if (misbehave && mode === 'short-logprobs' && index === prompts.length - 1 && all.length > 3)
          all = [...all.slice(0, -3), 2];
        if (misbehave && mode === 'extra-logprob' && index === prompts.length - 1)
          all = [...all.slice(0, -1), 150, 2];
        let lp: (number | null)[] = all.map((t, i) =>
          i === 0 ? null : fakeLogprob(all[i - 1] as number, t),
        );
        if (misbehave && mode === 'positive-logprobs') lp = lp.map((v) => (v === null ? v : 240));
        if (misbehave && mode === 'long-logprobs') lp = [...lp, -1, -1, -1];
        // One place late: [null, lp(token 0), …, lp(token n−1)], n + 1 values and no generated token.
        if (misbehave && mode === 'shifted-logprobs')
          lp = [null, ...ids.map((t, i) => fakeLogprob(i === 0 ? 1 : (ids[i - 1] as number), t))];
        if (misbehave && mode === 'zero-logprobs') lp = lp.map((v) => (v === null ? v : 0));
        if (misbehave && mode === 'tiny-logprobs') lp = lp.map((v) => (v === null ? v : -1e300));
        return {
          index,
          text: ' x',
          logprobs: {
            tokens: all.map(fakePiece).slice(0, lp.length),
            token_logprobs: lp,
            top_logprobs: lp.map(() => null),
          },
        };
      });
      // Choices in the order their completions ended, each numbered by its place in that order: every prompt gets
      // another's values (of the same length where the candidates have one).
      if (misbehave && mode === 'permuted-logprobs')
        choices = choices.reverse().map((c, index) => ({ ...c, index }));
      let text = JSON.stringify({ id: 'cmpl', object: 'text_completion', model: 'fake-1', choices });
      // JSON has no Infinity; a server printing a huge float writes 1e999, which JSON.parse reads as Infinity.
      if (misbehave && mode === 'infinite-logprob') text = text.replace(/-\d+(\.\d+)?(?=,|\])/, '-1e999');
      res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      return;
    }
    if (!path.endsWith('/chat/completions')) {
      json(res, 404, { error: { message: 'Not found' } });
      return;
    }
    counts.chat++;
    const request = JSON.parse(body) as { model: string; messages: { role: string; content: string }[] };
    const ok = (
      message: Record<string, unknown>,
      extra: Record<string, unknown> = {},
      finish_reason = 'stop',
    ) =>
      json(res, 200, {
        id: `chatcmpl-${counts.chat}`,
        object: 'chat.completion',
        model: request.model,
        choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason }],
        usage: { prompt_tokens: 20, completion_tokens: 1, total_tokens: 21 },
        ...extra,
      });
    switch (mode) {
      case 'echo':
        // A completion server behind a chat URL: the prompt comes back as the reply.
        ok({ content: request.messages.map((m) => m.content).join('\n') });
        return;
      case 'truncated':
        ok({ content: 'Рассмотрим текст внимательно. Во-первых, в нём' }, {}, 'length');
        return;
      case 'unclosed-think':
        ok({ content: '<think>Нужно понять, о чём спрашивают. Текст говорит, что' }, {}, 'length');
        return;
      case 'filtered':
        ok({ content: '' }, {}, 'content_filter');
        return;
      case 'echo-key-reply': {
        // A debug proxy that puts the request's key into a successful reply: as it is, URL-encoded, form-encoded.
        const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
        ok({
          content: `Ответ: да (${key} ${encodeURIComponent(key)} ${new URLSearchParams({ k: key }).toString()})`,
        });
        return;
      }
      case 'huge-usage':
        ok(
          { content: 'да' },
          { usage: { prompt_tokens: 2 ** 53 - 1, completion_tokens: 2 ** 53 - 1, total_tokens: 0 } },
        );
        return;
      case 'dies':
        ok({ content: 'да' });
        if (counts.chat >= (options.dieAfter ?? 3)) {
          server.close();
          setImmediate(() => server.closeAllConnections());
        }
        return;
      case 'html-502':
        res
          .writeHead(502, { 'content-type': 'text/html' })
          .end(
            '<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>',
          );
        return;
      case 'retry-after-3600':
        json(res, 429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '3600' });
        return;
      case 'hang':
        hanging.add(res);
        return;
      case 'context-length':
        json(res, 400, {
          object: 'error',
          message: "This model's maximum context length is 2048 tokens. However, you requested 4096 tokens.",
          type: 'BadRequestError',
          code: 400,
        });
        return;
      case 'huge-reply': {
        // 50 MiB of a JSON string, written as fast as the client takes it.
        const total = options.hugeBytes ?? 50 << 20;
        const chunk = Buffer.alloc(1 << 20, 'a');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"choices":[{"message":{"content":"');
        let sent = 0;
        const pump = () => {
          while (sent < total) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end('"}}]}');
        };
        res.on('error', () => undefined);
        pump();
        return;
      }
      case 'null-content':
        ok({ content: null });
        return;
      case 'tool-call':
        ok({
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'answer', arguments: '{"a":"да"}' } },
          ],
        });
        return;
      case 'not-json':
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end('<html><body>Welcome to nginx!</body></html>');
        return;
      case 'truncated-json':
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"id":"chatcmpl-1","choices":[{"mess');
        return;
      case 'deep-json':
        // 2,000,000 nested brackets: 4 MB, under the reply cap; it used to take seconds of the main thread to parse.
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(`{"choices":${'['.repeat(2_000_000)}${']'.repeat(2_000_000)}}`);
        return;
      case 'absurd-usage':
        ok({ content: 'да' }, { usage: { prompt_tokens: -5, completion_tokens: 'many' } });
        return;
      case 'other-model':
        ok({ content: 'да' }, { model: 'gpt-3.5-turbo-0125' });
        return;
      default:
        ok({ content: 'да' });
    }
  });
  server.keepAliveTimeout = 5000;
  server.on('connection', () => peak.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    counts,
    headers,
    peak,
    close: () =>
      new Promise<void>((r) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** For a test file: `start(mode)` opens a broken server, and every server opened is closed after each test. */
export function useBrokenServers(): (
  mode: Misbehaviour,
  options?: Parameters<typeof startBrokenServer>[1],
) => Promise<BrokenServer> {
  const servers: BrokenServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return async (mode, options = {}) => {
    const s = await startBrokenServer(mode, options);
    servers.push(s);
    return s;
  };
}
