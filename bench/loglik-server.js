// A minimal vLLM-like server for `npm run bench:contamination`: /tokenize (a word with its leading space is one
// token) and /v1/completions with echo, answering each prompt token's log-probability at once (a fixed function of
// the token and the one before). It makes the harness, not a model, the cost. Prints its port on stdout.
import { createServer } from 'node:http';

const hash = (s) => {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
};
const tokenize = (text) => [...text.matchAll(/ ?[^\s]+|\s+/gu)].map((m) => 100 + (hash(m[0]) % 50_000));
const logprob = (prev, token) => -(1 + ((prev * 31 + token * 17) % 97) / 10);
let requests = 0;

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    requests++;
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    const json = (value) => {
      const data = Buffer.from(JSON.stringify(value));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': data.length }).end(data);
    };
    if (req.url === '/stats') return json({ requests });
    if (req.url === '/tokenize') {
      const tokens = [...(body.add_special_tokens === false ? [] : [1]), ...tokenize(body.prompt)];
      return json({ tokens, count: tokens.length, max_model_len: 1_000_000 });
    }
    if (req.url?.endsWith('/v1/completions')) {
      const prompts =
        Array.isArray(body.prompt) && Array.isArray(body.prompt[0]) ? body.prompt : [body.prompt];
      const choices = prompts.map((prompt, index) => {
        const ids = typeof prompt === 'string' ? [1, ...tokenize(prompt)] : prompt;
        const all = [...ids, 2];
        return {
          index,
          text: ' x',
          logprobs: {
            tokens: all.map(String),
            token_logprobs: all.map((t, i) => (i === 0 ? null : logprob(all[i - 1], t))),
            top_logprobs: all.map(() => null),
            text_offset: all.map((_, i) => i),
          },
          finish_reason: 'length',
        };
      });
      return json({
        id: 'cmpl',
        object: 'text_completion',
        model: body.model,
        choices,
        usage: { prompt_tokens: 1, completion_tokens: 1 },
      });
    }
    res.writeHead(404).end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
