// A minimal OpenAI-compatible chat-completions server that answers at once, for `npm run bench:llm`: it makes the
// harness, not the model, the bottleneck; with LATENCY_MS set (`npm run bench:plan`), each answer waits that long,
// as a model would. Prints its port on stdout.
import { createServer } from 'node:http';

const reply = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 0,
    model: 'bench',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Ответ: да' },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 3, total_tokens: 103 },
  }),
);
const latency = Number(process.env.LATENCY_MS ?? 0);
const server = createServer((req, res) => {
  req.resume();
  const answer = () =>
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.length }).end(reply);
  req.on('end', () => (latency > 0 ? setTimeout(answer, latency) : answer()));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
