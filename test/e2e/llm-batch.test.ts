/**
 * `llm --batch` against a loopback server faithful to OpenAI's Batch API (files, batches, output and error files):
 * the same predictions as an online run, a run killed while it waits collected by --resume, failed requests of a
 * batch re-sent alone, the cost at the batch discount.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { resultsCap } from '../../src/llm/batch.js';
import { getTask } from '../../src/tasks/registry.js';
import { CLI_ENV, rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, killWhen, llmArgs } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI>();

/** Answers each DaNet and NLI item with its gold, except every third, which it answers wrongly or not at all. */
async function oracle(): Promise<(body: ChatRequestBody) => string> {
  const answers = new Map<string, string>();
  for (const name of ['RuMedDaNet', 'RuMedNLI']) {
    const task = getTask(name);
    for (const [i, r] of (await loadSplit(task, 'test', { dataDir: DATA })).entries())
      answers.set(
        task.prompt.render(r.raw),
        i % 3 === 2 ? 'Не знаю.' : task.prompt.answer(r.gold as string, r.raw),
      );
  }
  return (body) => {
    const last = body.messages.at(-1)?.content ?? '';
    return answers.get(last.slice(last.indexOf('\n\n') + 2)) ?? '?';
  };
}

const args = (url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data: DATA, tasks: 'RuMedDaNet,RuMedNLI', limit: 6 },
    ...['--price-prompt', '2', '--price-completion', '8', ...more],
  );
const predictions = (dir: string) =>
  ['RuMedDaNet', 'RuMedNLI'].map((t) => readFileSync(join(dir, 'predictions', `${t}.jsonl`), 'utf8'));

describe('llm --batch (OpenAI Batch API, fixture data)', () => {
  it('writes the predictions an online run writes, from one batch, at half the price', async () => {
    const reply = await oracle();
    const online = await startFakeOpenAI({ reply });
    const batched = await startFakeOpenAI({ reply });
    track(online, batched);
    const a = mkdtempSync(join(tmpdir(), 'rumedbench-online-'));
    const b = mkdtempSync(join(tmpdir(), 'rumedbench-batch-'));
    const onlineRun = JSON.parse((await rumedbenchOk(...args(online.url, a, '--json'))).stdout);
    const batchRun = JSON.parse(
      (await rumedbenchOk(...args(batched.url, b, '--batch', '--batch-poll', '0.01', '--json'))).stdout,
    );
    expect(predictions(b)).toEqual(predictions(a));
    // One upload, one batch of the 12 requests, nothing asked online.
    expect(batched.requests).toHaveLength(0);
    expect(batched.uploads()).toBe(1);
    expect(batched.batches().map((x) => [x.status, x.request_counts])).toEqual([
      ['completed', { total: 12, completed: 12, failed: 0 }],
    ]);
    expect(batched.batchLines).toHaveLength(12);
    // The bodies in the batch are the bodies an online run sends.
    expect(batched.batchLines.map((l) => JSON.stringify(l)).sort()).toEqual(
      online.requests.map((r) => JSON.stringify(r.body)).sort(),
    );
    expect(batchRun.llm.batch).toEqual({
      provider: 'openai',
      batches: ['batch_1'],
      discount: 0.5,
      answers: 12,
      cost: batchRun.llm.cost,
    });
    expect(batchRun.llm.usage.prompt_tokens).toBe(onlineRun.llm.usage.prompt_tokens);
    expect(batchRun.llm.cost).toBeCloseTo(onlineRun.llm.cost / 2, 12);
    expect(batchRun.tasks.RuMedNLI.metrics).toEqual(onlineRun.tasks.RuMedNLI.metrics);
  });

  it('a run killed while its batch waits is collected by --resume, never submitted again', async () => {
    let hold = true;
    const server = await startFakeOpenAI({ reply: await oracle(), holdBatches: () => hold });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-kill-'));
    const argv = args(server.url, out, '--batch', '--batch-poll', '0.02');
    await killWhen(argv, CLI_ENV, () => server.batchLooks() >= 3);
    expect(existsSync(join(out, 'batches.jsonl'))).toBe(true);
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
    // Resumed without --batch: the waiting batch is not forgotten, nothing is sent online (each request paid twice,
    // the batch's answers later replacing these).
    const online = await rumedbench(...args(server.url, out, '--resume'));
    expect(online.code).toBe(2);
    expect(online.stderr).toContain('1 batch(es) submitted and not collected (batch_1, 12 requests)');
    expect(online.stderr).toContain('--resume --batch');
    expect(server.requests).toHaveLength(0);
    hold = false;
    const { stderr } = await rumedbenchOk(...argv, '--resume');
    expect(stderr).toContain('batch batch_1: submitted by an earlier run; collecting its 12 requests');
    expect(server.uploads()).toBe(1);
    expect(server.batches()).toHaveLength(1);
    expect(server.requests).toHaveLength(0);
    const clean = mkdtempSync(join(tmpdir(), 'rumedbench-batch-clean-'));
    const other = await startFakeOpenAI({ reply: await oracle() });
    track(other);
    await rumedbenchOk(...args(other.url, clean));
    expect(predictions(out)).toEqual(predictions(clean));
  });

  it('fails a run whose batch failed requests, and --retry-errors sends only those, as a new batch', async () => {
    // The first batch's requests 0, 5 and 10 fail with HTTP 400 (in its error file); later batches are clean.
    const server = await startFakeOpenAI({
      reply: await oracle(),
      behaviour: (n) => (n < 12 && n % 5 === 0 ? { kind: '400', message: 'bad request' } : { kind: 'ok' }),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-fail-'));
    const argv = args(server.url, out, '--batch', '--batch-poll', '0.01');
    const failed = await rumedbench(...argv);
    expect(failed.code).toBe(3);
    expect(failed.stderr).toContain('3 of 12 requests failed');
    expect(failed.stderr).toContain('batch batch_1: HTTP 400: bad request');
    const retried = await rumedbench(...argv, '--resume', '--retry-errors', '--json');
    expect(retried.code, retried.stderr).toBe(0);
    expect(server.batches().map((x) => x.request_counts.total)).toEqual([12, 3]);
    expect(server.batchLines).toHaveLength(15);
    expect(JSON.parse(retried.stdout).llm.batch.batches).toEqual(['batch_1', 'batch_2']);
  });

  it('writes the batch input without sending (--batch-file), and reads a batch run elsewhere back (--batch-results)', async () => {
    const reply = await oracle();
    const online = await startFakeOpenAI({ reply });
    const elsewhere = await startFakeOpenAI({ reply });
    track(online, elsewhere);
    const a = mkdtempSync(join(tmpdir(), 'rumedbench-online-'));
    await rumedbenchOk(...args(online.url, a));
    const b = mkdtempSync(join(tmpdir(), 'rumedbench-batch-file-'));
    const input = join(b, 'input.jsonl');
    const written = await rumedbenchOk(...args(elsewhere.url, join(b, 'run'), '--batch-file', input));
    expect(written.stderr).toContain(`wrote 12 requests to ${input}; nothing was sent`);
    expect(elsewhere.requests).toHaveLength(0);
    expect(elsewhere.uploads()).toBe(0);
    const lines = readFileSync(input, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => JSON.stringify(l.body)).sort()).toEqual(
      online.requests.map((r) => JSON.stringify(r.body)).sort(),
    );
    expect(lines[0]).toMatchObject({ method: 'POST', url: '/v1/chat/completions' });

    // Run by hand through the (fake) Batch API, as a user would upload it; its output file is what vllm run-batch writes.
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([readFileSync(input)]), 'input.jsonl');
    const file = (await (await fetch(`${elsewhere.url}/files`, { method: 'POST', body: form })).json()) as {
      id: string;
    };
    const batch = (await (
      await fetch(`${elsewhere.url}/batches`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          input_file_id: file.id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        }),
      })
    ).json()) as { id: string };
    let state = { status: '', output_file_id: '' };
    while (state.status !== 'completed')
      state = (await (await fetch(`${elsewhere.url}/batches/${batch.id}`)).json()) as typeof state;
    const results = join(b, 'results.jsonl');
    writeFileSync(
      results,
      await (await fetch(`${elsewhere.url}/files/${state.output_file_id}/content`)).text(),
    );

    const read = await rumedbenchOk(
      ...args(elsewhere.url, join(b, 'run'), '--batch-results', results, '--resume'),
    );
    expect(read.stderr).toContain('12 of the 12 requests to send answered');
    expect(elsewhere.requests).toHaveLength(0);
    expect(predictions(join(b, 'run'))).toEqual(predictions(a));
  });

  it('reads the results as they stream: a line past the reply cap fails its request alone, and nothing is left behind', async () => {
    const reply = await oracle();
    let n = 0;
    // The fourth request gets a reply of 300 kB: its results line is longer than --max-reply-bytes allows.
    const server = await startFakeOpenAI({
      reply: (body) => (n++ === 3 ? 'да '.repeat(100_000) : reply(body)),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-long-'));
    const argv = args(server.url, out, '--batch', '--batch-poll', '0.01', '--max-reply-bytes', '65536');
    const failed = await rumedbench(...argv);
    expect(failed.code).toBe(3);
    expect(failed.stderr).toContain('1 of 12 requests failed');
    expect(failed.stderr).toContain('batch batch_1 ended completed without an answer to this request');
    // The results file was saved into the run folder while it was read, then removed.
    expect(readdirSync(out).filter((f) => f.startsWith('batch-results-'))).toEqual([]);
    const retried = await rumedbench(...argv, '--resume', '--retry-errors');
    expect(retried.code, retried.stderr).toBe(0);
    expect(server.batches().map((x) => x.request_counts.total)).toEqual([12, 1]);
  });

  it('fails a request answered twice differently, counts one answered twice alike, whatever the lines’ order', async () => {
    const reply = await oracle();
    const server = await startFakeOpenAI({ reply });
    track(server);
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-batch-dup-'));
    const input = join(dir, 'input.jsonl');
    await rumedbenchOk(...args(server.url, join(dir, 'written'), '--batch-file', input));
    const requests = readFileSync(input, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; body: ChatRequestBody });
    const line = (r: (typeof requests)[number], content: string) =>
      JSON.stringify({
        id: `batch_req_${r.custom_id}`,
        custom_id: r.custom_id,
        response: {
          status_code: 200,
          request_id: 'req',
          body: {
            id: 'chatcmpl-x',
            object: 'chat.completion',
            model: 'fake-model',
            choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
          },
        },
        error: null,
      });
    const [first, second] = requests as [(typeof requests)[number], (typeof requests)[number]];
    const lines = [
      ...requests.map((r) => line(r, reply(r.body))),
      line(first, reply(first.body)), // the same answer again: counted once
      line(second, reply(second.body) === 'Да.' ? 'Нет.' : 'Да.'), // another answer: the request fails
    ];
    const scores: string[] = [];
    for (const [name, order] of [
      ['forward', lines],
      ['reversed', [...lines].reverse()],
    ] as const) {
      const results = join(dir, `${name}.jsonl`);
      writeFileSync(results, `${order.join('\n')}\n`);
      const run = join(dir, name);
      const r = await rumedbench(...args(server.url, run, '--batch-results', results, '--json'));
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain('1 request(s) answered twice, differently: failed, not scored');
      expect(r.stderr).toContain('1 of 12 requests failed');
      expect(r.stderr).toContain(`two different results for this request (custom_id ${second.custom_id})`);
      // The one command that continues: the failed request asked again (online here), nothing else.
      const retried = await rumedbench(...args(server.url, run, '--resume', '--retry-errors'));
      expect(retried.code, retried.stderr).toBe(0);
      scores.push(...predictions(run));
    }
    expect(scores.slice(2)).toEqual(scores.slice(0, 2));
    expect(server.requests.map((r) => JSON.stringify(r.body))).toEqual([
      JSON.stringify(second.body),
      JSON.stringify(second.body),
    ]);
  });

  it('ends non-zero with COST_LIMIT when a batch reports spending past --max-cost, saying what was reported', async () => {
    // Replies that bill a million prompt tokens each, far above what each request was counted at.
    const server = await startFakeOpenAI({ reply: await oracle(), hiddenPromptTokens: 1_000_000 });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-cost-'));
    const r = await rumedbench(
      ...args(server.url, out, '--batch', '--batch-poll', '0.01', '--max-cost', '1'),
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/cost: up to \$0\.0\d+ for 12 requests/);
    // 12 replies × 1,000,0xx prompt tokens at $2 per million, half price in a batch: just over $12.
    expect(r.stderr).toMatch(
      /the run has cost \$12\.\d\d by its batch replies' token counts, past --max-cost \$1\.00 \(12\d{6} prompt \+ \d+ completion tokens; 12 repl\(ies\) report more tokens than their request can explain/,
    );
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
  });

  it('caps the results by the requests it recorded, never by the count the provider claims', async () => {
    // Each reply 40 kB, under --max-reply-bytes 65536; the batch says no count, then 10¹².
    const reply = await oracle();
    for (const counts of ['absent', 'huge'] as const) {
      const server = await startFakeOpenAI({
        reply: (body) => `${reply(body)} ${'.'.repeat(40_000)}`,
        batchCounts: counts,
      });
      track(server);
      const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-cap-'));
      const argv = args(server.url, out, '--batch', '--batch-poll', '0.01', '--max-reply-bytes', '65536');
      const ok = await rumedbench(...argv);
      expect(ok.code, `${counts}: ${ok.stderr}`).toBe(0);
    }
    // Replies the run's cap cannot hold in total (12 × 200 kB against 12 × (64 KiB + 64 KiB)): cut, and said so.
    const big = await startFakeOpenAI({
      reply: (body) => `${reply(body)} ${'.'.repeat(200_000)}`,
      batchCounts: 'huge',
    });
    track(big);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-cap-'));
    const r = await rumedbench(
      ...args(big.url, out, '--batch', '--batch-poll', '0.01', '--max-reply-bytes', '65536'),
    );
    expect(r.code).not.toBe(0);
    // The cap scales with what the requests asked for, and names the settings that make it and the way out.
    expect(r.stderr).toContain(
      "the reply is larger than the batch's 12 requests can take (12 × 73728: 8192 for a result line and 64 for each of the --max-tokens 1024 a reply may have, at most --max-reply-bytes 65536 and 65536), so the replies are longer than --max-tokens allows: continue with --resume and a --max-reply-bytes above its default (4 MiB)",
    );
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
    // That way out collects the same batch: nothing paid again.
    const collected = await rumedbench(
      ...args(big.url, out, '--batch', '--batch-poll', '0.01', '--max-reply-bytes', '8388608'),
      '--resume',
    );
    expect(collected.code, collected.stderr).toBe(0);
    expect(big.batches()).toHaveLength(1);
  });

  it('scales the results cap with the requests asked, not one reply cap per request (#59 item 6)', () => {
    // The 3,608 requests of the public test sets at the defaults: 266 MB, where 4 MiB a request allowed 15 GB.
    expect(resultsCap(4 << 20, 3608, { maxTokens: 1024 }).bytes).toBe(3608 * (8192 + 1024 * 64));
    // Never more than the reply cap and its line's slack a request; a raised --max-reply-bytes taken whole.
    expect(resultsCap(16_384, 10, { maxTokens: 4096 }).bytes).toBe(10 * (16_384 + 65_536));
    expect(resultsCap(8 << 20, 10, { maxTokens: 16, capRaised: true }).bytes).toBe(10 * ((8 << 20) + 65_536));
  });

  it('waits for a batch no longer than its deadline, saying so as it waits, and --resume collects it later', async () => {
    let hold = true;
    const server = await startFakeOpenAI({ reply: await oracle(), holdBatches: () => hold });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-deadline-'));
    // 1.8 s: a batch in progress for ever (a provider that never ends it) stops the run instead of holding it.
    const argv = args(server.url, out, '--batch', '--batch-poll', '0.05', '--batch-deadline', '0.0005');
    const stopped = await rumedbench(...argv);
    expect(stopped.code).toBe(3);
    expect(stopped.stderr).toMatch(
      /batch batch_1 is still in_progress [\d.]+ s after it was submitted, past the deadline of 0\.0005 h \(--batch-deadline\)/,
    );
    expect(stopped.stderr).toContain(
      'continue with the same command and --resume'.replace('continue', 'Continue'),
    );
    // Progress at each doubling of the wait, not one line and then silence.
    expect(
      stopped.stderr.match(/batch batch_1: in_progress.*next look in/g)?.length ?? 0,
    ).toBeGreaterThanOrEqual(3);
    hold = false;
    const resumed = await rumedbench(...argv, '--resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.batches()).toHaveLength(1);
    expect(server.requests).toHaveLength(0);
  });

  it('ends each dead end with the command that continues: a batch the provider forgot, results that fail to download', async () => {
    // A batch recorded by a killed run that the provider no longer knows (404): its requests fail, named, and
    // --retry-errors sends them as a new batch; the folder is never blocked.
    let hold = true;
    let forget = false;
    const server = await startFakeOpenAI({
      reply: await oracle(),
      holdBatches: () => hold,
      forgetBatch: (id) => forget && id === 'batch_1',
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-404-'));
    const argv = args(server.url, out, '--batch', '--batch-poll', '0.02', '--max-retries', '0');
    await killWhen(argv, CLI_ENV, () => server.batchLooks() >= 3);
    forget = true;
    hold = false;
    const gone = await rumedbench(...argv, '--resume');
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain('12 of 12 requests failed');
    expect(gone.stderr).toContain('batch batch_1 ended unknown to the provider (HTTP 404');
    const retried = await rumedbench(...argv, '--resume', '--retry-errors');
    expect(retried.code, retried.stderr).toBe(0);
    expect(server.batches().map((b) => b.id)).toEqual(['batch_1', 'batch_2']);

    // The results' download fails (500): the batch stays recorded, and --resume collects it, once.
    let failing = true;
    const flaky = await startFakeOpenAI({ reply: await oracle(), failFiles: () => failing });
    track(flaky);
    const out2 = mkdtempSync(join(tmpdir(), 'rumedbench-batch-500-'));
    const argv2 = args(flaky.url, out2, '--batch', '--batch-poll', '0.01', '--max-retries', '0');
    const broken = await rumedbench(...argv2);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toMatch(
      /batch batch_1 ended completed, but its results could not be read \(.*HTTP 500/,
    );
    expect(broken.stderr).toContain('Continue with the same command and --resume, which collects them again');
    failing = false;
    const collected = await rumedbench(...argv2, '--resume');
    expect(collected.code, collected.stderr).toBe(0);
    expect(flaky.batches()).toHaveLength(1);
  });

  it('refuses --batch where it cannot go', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-batch-no-'));
    const loglik = await rumedbench(...args('http://127.0.0.1:9/v1', out, '--batch', '--mode', 'loglik'));
    expect(loglik.code).toBe(2);
    expect(loglik.stderr).toContain('--batch: sends chat requests');
    const local = await rumedbench(...args('http://127.0.0.1:9/v1', out, '--batch', '--provider', 'llama'));
    expect(local.code).toBe(2);
    expect(local.stderr).toContain('a local model has none');
  });
});
