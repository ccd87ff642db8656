// A vLLM-like loopback server for `npm run bench:loglik` (issue #47), that both rumedbench and lm-evaluation-harness's
// `local-completions` (remote tokenizer) can score against: /tokenizer_info, /tokenize, /detokenize and
// /v1/completions with echo, as vLLM serves them, for a model without BOS (as Qwen's). A word with its leading space
// is one token; a token's log-probability is a fixed function of the token and a hash of every token before it, so
// the answer depends on the whole prompt and two harnesses that split tokens the same way get the same sums.
// BENCH_LATENCY_MS adds a fixed delay to every /v1/completions answer (a real server's per-request cost: a forward
// pass), never to /tokenize or /detokenize, which a real vLLM answers from its tokenizer at once; 0 by default.
// The texts of every prompt scored are kept (token ids decoded), so that a bench compares what two harnesses sent
// on the wire: GET /prompts returns them, POST /reset clears them. Prints its port on stdout.
import { createServer } from 'node:http';

const latency = Number(process.env.BENCH_LATENCY_MS ?? 0);
const fnv = (s) => {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
};
/** id → piece, for /detokenize and the echoed token texts. */
const pieces = new Map([[2, '</s>']]);
const PIECE = / ?[^\s]+|\s+/gu;
const tokenize = (text) =>
  [...text.matchAll(PIECE)].map((m) => {
    const id = 100 + (fnv(m[0]) % 1_000_000_000);
    pieces.set(id, m[0]);
    return id;
  });
/** Log-probability of each token given all before it (null for the first), and of one generated token (id 2). */
const logprobs = (ids) => {
  const out = [];
  let h = 0x9e3779b9;
  for (const [i, t] of ids.entries()) {
    out.push(i === 0 ? null : -(0.05 + (Math.imul(h ^ t, 0x85ebca6b) >>> 0) / 2 ** 32 / 0.2));
    h = Math.imul(h ^ t, 0x01000193) >>> 0;
  }
  out.push(-(0.05 + (Math.imul(h ^ 2, 0x85ebca6b) >>> 0) / 2 ** 32 / 0.2));
  return out;
};
let requests = 0;
/** The prompts scored since the last /reset, as texts. */
let prompts = [];

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    // The bench's own questions are not the harnesses' requests.
    if (!['/stats', '/prompts', '/reset'].includes(req.url)) requests++;
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    const json = (value, delay = 0) => {
      const data = Buffer.from(JSON.stringify(value));
      const send = () =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': data.length }).end(data);
      if (delay > 0) setTimeout(send, delay);
      else send();
    };
    if (req.url === '/stats') return json({ requests });
    if (req.url === '/prompts') return json({ prompts });
    if (req.url === '/reset') {
      prompts = [];
      return json({});
    }
    if (req.url === '/tokenizer_info')
      return json({ eos_token: '</s>', bos_token: null, pad_token: null, model_max_length: 32768 });
    if (req.url === '/tokenize') {
      const tokens = tokenize(body.prompt ?? '');
      return json({ tokens, count: tokens.length, max_model_len: 32768 });
    }
    if (req.url === '/detokenize')
      return json({ prompt: body.tokens.map((t) => pieces.get(t) ?? '').join('') });
    if (req.url?.endsWith('/v1/completions')) {
      const list =
        Array.isArray(body.prompt) && (typeof body.prompt[0] === 'string' || Array.isArray(body.prompt[0]))
          ? body.prompt
          : [body.prompt];
      let promptTokens = 0;
      const choices = list.map((prompt, index) => {
        const ids = typeof prompt === 'string' ? tokenize(prompt) : prompt;
        prompts.push(typeof prompt === 'string' ? prompt : prompt.map((t) => pieces.get(t) ?? '').join(''));
        promptTokens += ids.length;
        const all = [...ids, 2];
        const lp = logprobs(ids);
        const texts = all.map((t) => pieces.get(t) ?? '');
        let offset = 0;
        const textOffset = texts.map((t) => {
          const o = offset;
          offset += t.length;
          return o;
        });
        return {
          index,
          text: '</s>',
          logprobs: {
            tokens: texts,
            token_logprobs: lp,
            top_logprobs: lp.map((v, i) => (v === null ? null : { [texts[i]]: v })),
            text_offset: textOffset,
          },
          finish_reason: 'length',
        };
      });
      return json(
        {
          id: 'cmpl',
          object: 'text_completion',
          model: body.model,
          choices,
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: list.length,
            total_tokens: promptTokens + list.length,
          },
        },
        latency,
      );
    }
    res.writeHead(404).end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
