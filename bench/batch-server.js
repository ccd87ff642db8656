// A minimal server for `npm run bench:batch`: OpenAI's chat completions answered at once, and its Batch API
// (files, batches, output files), a batch completing at its first look after validation. It makes the harness, not
// the model, what is measured. Prints its port on stdout.
import { createServer } from 'node:http';

const completion = (id) => ({
  id,
  object: 'chat.completion',
  created: 0,
  model: 'bench',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Ответ: да' }, logprobs: null, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 100, completion_tokens: 3, total_tokens: 103 },
});
const online = Buffer.from(JSON.stringify(completion('chatcmpl-bench')));
const files = new Map();
const batches = new Map();
const body = async (req) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
};
const json = (res, status, value) => {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json' }).end(text);
};
const server = createServer(async (req, res) => {
  const url = req.url ?? '';
  if (req.method === 'POST' && url === '/v1/chat/completions') {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(online));
    return;
  }
  if (req.method === 'POST' && url === '/v1/files') {
    const form = await new Response(await body(req), {
      headers: { 'content-type': String(req.headers['content-type']) },
    }).formData();
    const text = await form.get('file').text();
    const id = `file-${files.size + 1}`;
    files.set(id, text);
    return json(res, 200, { id, object: 'file', bytes: Buffer.byteLength(text), purpose: 'batch' });
  }
  if (req.method === 'POST' && url === '/v1/batches') {
    const b = JSON.parse(String(await body(req)));
    const id = `batch_${batches.size + 1}`;
    const batch = {
      id,
      object: 'batch',
      status: 'validating',
      input_file_id: b.input_file_id,
      request_counts: null,
    };
    batches.set(id, batch);
    return json(res, 200, batch);
  }
  const look = /^\/v1\/batches\/([^/]+)$/.exec(url);
  if (req.method === 'GET' && look) {
    const batch = batches.get(look[1]);
    if (batch.status === 'validating') batch.status = 'in_progress';
    else if (batch.status === 'in_progress') {
      const lines = files
        .get(batch.input_file_id)
        .split('\n')
        .filter((l) => l !== '');
      const out = lines.map((l, i) =>
        JSON.stringify({
          id: `batch_req_${i}`,
          custom_id: JSON.parse(l).custom_id,
          response: { status_code: 200, request_id: `req_${i}`, body: completion(`chatcmpl-b${i}`) },
          error: null,
        }),
      );
      const fid = `file-${files.size + 1}`;
      files.set(fid, `${out.join('\n')}\n`);
      Object.assign(batch, {
        status: 'completed',
        output_file_id: fid,
        error_file_id: null,
        request_counts: { total: lines.length, completed: lines.length, failed: 0 },
      });
    }
    return json(res, 200, batch);
  }
  const content = /^\/v1\/files\/([^/]+)\/content$/.exec(url);
  if (req.method === 'GET' && content) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(files.get(content[1]));
    return;
  }
  json(res, 404, { error: { message: 'not found' } });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
