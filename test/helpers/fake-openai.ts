/**
 * A loopback server that speaks the OpenAI chat-completions protocol (request and response shapes, `usage`,
 * `logprobs`, error bodies, 429 with Retry-After, 500s, slow replies, dropped connections), for tests of the LLM
 * harness. It records every request it receives.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: string }[];
  temperature?: number;
  max_tokens?: number;
  seed?: number;
  stop?: string[];
}

export type Behaviour =
  | { kind: 'ok'; delayMs?: number }
  | { kind: '429'; retryAfter: string }
  | { kind: '500' }
  | { kind: 'drop' }
  | { kind: '400'; message: string };

export interface FakeOpenAI {
  url: string;
  /** Every request received, in order: the last user message's hash and the body. */
  requests: { key: string; body: ChatRequestBody }[];
  close(): Promise<void>;
}

export const contentKey = (body: ChatRequestBody): string =>
  createHash('sha256').update(JSON.stringify(body.messages)).digest('hex').slice(0, 16);

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeOpenAI(options: {
  reply: (body: ChatRequestBody) => string;
  /** What to do with the n-th request (0-based); ok by default. */
  behaviour?: (n: number, body: ChatRequestBody) => Behaviour;
}): Promise<FakeOpenAI> {
  const requests: FakeOpenAI['requests'] = [];
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: { message: 'Not found', type: 'invalid_request_error', param: null, code: null },
        }),
      );
      return;
    }
    const body = JSON.parse(await readBody(req)) as ChatRequestBody;
    const n = requests.length;
    requests.push({ key: contentKey(body), body });
    const b = options.behaviour?.(n, body) ?? { kind: 'ok' };
    const error = (
      status: number,
      message: string,
      type: string,
      headers: Record<string, string> = {},
    ): void => {
      res
        .writeHead(status, { 'content-type': 'application/json', ...headers })
        .end(JSON.stringify({ error: { message, type, param: null, code: null } }));
    };
    if (b.kind === 'drop') {
      req.socket.destroy();
      return;
    }
    if (b.kind === '429') {
      error(429, 'Rate limit reached', 'rate_limit_error', { 'retry-after': b.retryAfter });
      return;
    }
    if (b.kind === '500') {
      error(500, 'The server had an error while processing your request', 'server_error');
      return;
    }
    if (b.kind === '400') {
      error(400, b.message, 'invalid_request_error');
      return;
    }
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    const content = options.reply(body);
    const promptTokens = body.messages.reduce((s, m) => s + Math.ceil(m.content.length / 4), 0);
    const completionTokens = Math.ceil(content.length / 4);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-${n}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        system_fingerprint: 'fp_fake',
        choices: [
          { index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' },
        ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
