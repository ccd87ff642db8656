/**
 * At most one batch per set of requests, through any kill or timeout of its creation (issue #43, item 3). A creating
 * call that created the batch and timed out was retried and made a second, billed batch; only the second was recorded.
 * Here loopback providers faithful to OpenAI's Batch API and Anthropic's Message Batches hang, drop or lie about the
 * creating call, and the run is killed with SIGKILL at every step of it; each time the provider ends up holding one
 * batch of the run's requests, and the predictions are those of a clean run.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENV, rumedbench, rumedbenchWith } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type FakeAnthropic, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { type CreateFault, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, killWhen, llmArgs, naiveModel } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI | FakeAnthropic>();
const KEY = 'sk-ant-test-0123456789';

const openaiArgs = (url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data: DATA, tasks: 'RuMedDaNet,RuMedNLI', limit: 4 },
    ...['--batch', '--batch-poll', '0.01', '--timeout-ms', '400', ...more],
  );
const anthropicArgs = (url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data: DATA, tasks: 'RuMedDaNet', limit: 4, model: 'claude-fake' },
    ...['--provider', 'anthropic', '--api-key-env', 'ANTHROPIC_TEST_KEY'],
    ...['--batch', '--batch-poll', '0.01', '--timeout-ms', '400', ...more],
  );
const predictions = (dir: string, tasks: readonly string[]) =>
  tasks.map((t) => readFileSync(join(dir, 'predictions', `${t}.jsonl`), 'utf8'));
const ledger = (dir: string): { event: string }[] => {
  try {
    return readFileSync(join(dir, 'batches.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
};

/** The predictions of a run whose batch was created without a fault: what every attacked run must end with. */
async function cleanOpenAI(): Promise<string[]> {
  const server = await startFakeOpenAI({ reply: naiveModel() });
  track(server);
  const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-clean-'));
  const r = await rumedbench(...openaiArgs(server.url, out));
  expect(r.code, r.stderr).toBe(0);
  return predictions(out, ['RuMedDaNet', 'RuMedNLI']);
}

describe('one batch per set of requests (OpenAI Batch API)', () => {
  it.each<[CreateFault, number]>([
    // [what the first creating call meets, creating calls the provider then sees]
    ['hang-after', 1],
    ['drop-after', 1],
    ['500-after', 1],
    ['hang-before', 2],
    ['drop-before', 2],
  ])(
    'a creating call that meets %s leaves one batch, looked up by its tag before any other is made',
    async (fault, calls) => {
      const clean = await cleanOpenAI();
      const server = await startFakeOpenAI({
        reply: naiveModel(),
        createFault: (n) => (n === 0 ? fault : undefined),
      });
      track(server);
      const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-fault-'));
      const r = await rumedbench(...openaiArgs(server.url, out));
      expect(r.code, r.stderr).toBe(0);
      expect(server.batches()).toHaveLength(1);
      expect(server.createCalls()).toBe(calls);
      expect(server.listCalls()).toBeGreaterThanOrEqual(1);
      expect(r.stderr).toMatch(
        /creating a batch of 8 requests got no answer .*; looking for it at the provider/,
      );
      if (calls === 1)
        expect(r.stderr).toContain(
          'batch batch_1: created by the call that got no answer; found at the provider',
        );
      // The batch carries the tag its intent recorded, and the ledger says which batch the intent became.
      const [intent, submitted] = ledger(out) as unknown as { event: string; tag: string; id?: string }[];
      expect(intent?.event).toBe('creating');
      expect(submitted).toMatchObject({ event: 'submitted', tag: intent?.tag, id: 'batch_1' });
      expect(server.batches()[0]?.metadata).toEqual({ rumedbench_request_set: intent?.tag });
      expect(predictions(out, ['RuMedDaNet', 'RuMedNLI'])).toEqual(clean);
    },
  );

  it.each<[string, CreateFault | undefined, (s: FakeOpenAI, out: string) => boolean, number]>([
    // [the step killed, the first creating call's fault, when to kill, batches made before the resume]
    ['after the intent is recorded', undefined, (_s, out) => ledger(out).length >= 1, -1],
    ['while creating, nothing made yet', 'hang-before', (s) => s.createCalls() >= 1, 0],
    ['while creating, the batch made', 'hang-after', (s) => s.createCalls() >= 1, 1],
  ])('a run killed %s is resumed into one batch, never a second', async (_step, fault, when, before) => {
    const clean = await cleanOpenAI();
    const server = await startFakeOpenAI({
      reply: naiveModel(),
      createFault: (n) => (n === 0 ? fault : undefined),
      holdBatches: () => false,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-kill-'));
    const argv = openaiArgs(server.url, out);
    await killWhen(argv, CLI_ENV, () => when(server, out));
    if (before >= 0) expect(server.batches()).toHaveLength(before);
    expect(ledger(out)[0]?.event).toBe('creating');
    const made = server.batches().length;
    const r = await rumedbench(...argv, '--resume');
    expect(r.code, r.stderr).toBe(0);
    expect(server.batches()).toHaveLength(1);
    expect(r.stderr).toContain(
      made === 1
        ? 'batch batch_1: created by an earlier run that never got the answer; found at the provider, collecting its 8 requests'
        : 'an earlier run was creating a batch of 8 requests when it stopped; the provider has none by its tag, so its requests are sent now',
    );
    expect(predictions(out, ['RuMedDaNet', 'RuMedNLI'])).toEqual(clean);
    // A second resume creates nothing; an intent given up is looked up once more (a late batch of it would be
    // cancelled: below), one found is settled and asks the provider nothing.
    const lists = server.listCalls();
    const again = await rumedbench(...argv, '--resume');
    expect(again.code, again.stderr).toBe(0);
    expect([server.batches().length, server.listCalls() - lists]).toEqual([1, made === 1 ? 0 : 1]);
  });
});

/** A provider whose first creating call gets a gateway's 504 while the batch is made `lateMs` later behind it. */
async function lateServer(lateMs: number): Promise<FakeOpenAI> {
  const server = await startFakeOpenAI({
    reply: naiveModel(),
    createFault: (n) => (n === 0 ? 'late' : undefined),
    lateMs,
  });
  track(server);
  return server;
}

describe('one batch per set of requests, against what a red team found', () => {
  it('a gateway that answers 504 while the batch is made behind it: looked for as long as the call could run', async () => {
    const server = await lateServer(1200);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-late-'));
    // --timeout-ms 1000: the batch is looked for up to 2 s (twice the timeout) before another is made.
    const r = await rumedbench(...openaiArgs(server.url, out), '--timeout-ms', '1000');
    expect(r.code, r.stderr).toBe(0);
    expect([server.createCalls(), server.batches().length]).toEqual([1, 1]);
    expect(r.stderr).toContain('looking for it at the provider for up to 2.0 s before creating it again');
  });

  it('a batch that appears after it was looked for is cancelled when found, named: the requests are paid once', async () => {
    const clean = await cleanOpenAI();
    let server: FakeOpenAI | undefined;
    server = await startFakeOpenAI({
      reply: naiveModel(),
      createFault: (n) => (n === 0 ? 'late' : undefined),
      lateMs: 2500,
      // The run's batch waits until the late one exists: it is found beside it when the run's batch ends.
      holdBatches: () => (server?.batches().length ?? 0) < 2,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-dup-'));
    const r = await rumedbench(...openaiArgs(server.url, out));
    expect(r.code, r.stderr).toBe(0);
    expect(server.batches().map((b) => [b.id, b.status])).toEqual([
      ['batch_1', 'completed'],
      ['batch_2', 'cancelled'],
    ]);
    expect(r.stderr).toMatch(
      /batch batch_2: a second batch of the same 8 requests \(tag rumedbench-[0-9a-f-]+\), made by a creating call that got no answer in time: cancelled, batch batch_1 is this run's/,
    );
    expect(predictions(out, ['RuMedDaNet', 'RuMedNLI'])).toEqual(clean);
  });

  it('a batch made late behind an intent a resume gave up on is cancelled by the next resume, named: paid once', async () => {
    const server = await lateServer(6000);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-abandoned-'));
    const argv = openaiArgs(server.url, out);
    await killWhen(argv, CLI_ENV, () => server.createCalls() >= 1);
    const resumed = await rumedbench(...argv, '--resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('the provider has none by its tag, so its requests are sent now');
    expect(server.batches().map((b) => b.id)).toEqual(['batch_1']);
    while (server.batches().length < 2) await new Promise((r) => setTimeout(r, 50));
    const again = await rumedbench(...argv, '--resume');
    expect(again.code, again.stderr).toBe(0);
    expect(server.batches().map((b) => [b.id, b.status])).toEqual([
      ['batch_1', 'completed'],
      ['batch_2', 'cancelled'],
    ]);
    expect(again.stderr).toMatch(
      /batch batch_2: made late by a creating call an earlier run gave up on \(tag rumedbench-[0-9a-f-]+\), after its 8 requests were sent again: cancelled, so they are not paid twice/,
    );
    // Settled: a later resume asks the provider nothing about it.
    const lists = server.listCalls();
    const third = await rumedbench(...argv, '--resume');
    expect([third.code, server.listCalls() - lists]).toEqual([0, 0]);
  });

  it('a folder whose batch was being created sends nothing online: resumed without --batch it refuses, naming the command', async () => {
    const server = await startFakeOpenAI({
      reply: naiveModel(),
      createFault: (n) => (n === 0 ? 'hang-after' : undefined),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-online-'));
    const argv = openaiArgs(server.url, out);
    await killWhen(argv, CLI_ENV, () => server.createCalls() >= 1);
    const online = await rumedbench(
      ...llmArgs({ url: server.url, out, data: DATA, tasks: 'RuMedDaNet,RuMedNLI', limit: 4 }, '--resume'),
    );
    expect(online.code).toBe(2);
    expect(online.stderr).toContain(
      'records 1 batch(es) being created when the last run stopped (8 requests), which may exist at the provider: nothing is sent online before they are looked up. Continue with the same command and --resume --batch',
    );
    expect(server.requests).toHaveLength(0);
    const r = await rumedbench(...argv, '--resume');
    expect(r.code, r.stderr).toBe(0);
    expect([server.batches().length, server.requests.length]).toEqual([1, 0]);
  });

  it('one process at a time in a run folder: a second is refused at once, naming the first', async () => {
    const server = await startFakeOpenAI({
      reply: naiveModel(),
      createFault: (n) => (n === 0 ? 'hang-after' : undefined),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-two-'));
    const argv = openaiArgs(server.url, out, '--timeout-ms', '60000');
    const first = spawn(process.execPath, [CLI, ...argv], { env: CLI_ENV, stdio: 'ignore' });
    const exited = new Promise((r) => first.once('exit', r));
    try {
      while (server.createCalls() < 1) await new Promise((r) => setTimeout(r, 20));
      const second = await rumedbench(...argv);
      expect(second.code).toBe(2);
      expect(second.stderr).toContain(`is being written by another rumedbench run (process ${first.pid}`);
      const resumed = await rumedbench(...argv, '--resume');
      expect(resumed.code).toBe(2);
    } finally {
      first.kill('SIGKILL');
      await exited;
    }
    // The first killed, its lock is stale: the resume takes the folder over and finds the batch.
    const r = await rumedbench(...argv, '--resume');
    expect(r.code, r.stderr).toBe(0);
    expect(server.batches()).toHaveLength(1);
  });

  it('a 404 to one look is not the end of a batch; a ledger line torn by a kill is passed over', async () => {
    const clean = await cleanOpenAI();
    const server = await startFakeOpenAI({
      reply: naiveModel(),
      notFoundOnce: (n) => n === 0,
      createFault: (n) => (n === 0 ? 'hang-before' : undefined),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-404-'));
    const argv = openaiArgs(server.url, out);
    await killWhen(argv, CLI_ENV, () => server.createCalls() >= 1);
    // The kill cut a line in half as it was written.
    appendFileSync(join(out, 'batches.jsonl'), '{"at":"2026-12-03T08:00:00.000Z","event":"submi');
    const r = await rumedbench(...argv, '--resume');
    expect(r.code, r.stderr).toBe(0);
    expect(server.batches().map((b) => b.status)).toEqual(['completed']);
    expect(predictions(out, ['RuMedDaNet', 'RuMedNLI'])).toEqual(clean);
  });
});

describe('one batch per set of requests (Anthropic Message Batches, which keep no tag)', () => {
  const env = { ANTHROPIC_TEST_KEY: KEY };

  it('a creating call that times out after making the batch is found by its request count, not made again', async () => {
    const server = await startFakeAnthropic({
      key: KEY,
      reply: () => ({ text: 'Ответ: да' }),
      createFault: (n) => (n === 0 ? 'hang-after' : undefined),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-create-'));
    const r = await rumedbenchWith(env, ...anthropicArgs(server.url, out));
    expect(r.code, r.stderr).toBe(0);
    expect([server.createCalls(), server.batches().length]).toEqual([1, 1]);
    expect(r.stderr).toContain(
      'batch msgbatch_1: created by the call that got no answer; found at the provider',
    );
    expect(server.batchLines).toHaveLength(4);
  });

  it('a run killed while creating is resumed into its batch; another run’s batch of the same size is never guessed', async () => {
    const server = await startFakeAnthropic({
      key: KEY,
      reply: () => ({ text: 'Ответ: да' }),
      createFault: (n) => (n === 0 ? 'hang-after' : undefined),
      holdBatches: () => false,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-anthropic-create-kill-'));
    const argv = anthropicArgs(server.url, out);
    await killWhen(argv, { ...CLI_ENV, ...env }, () => server.createCalls() >= 1);
    expect(server.batches()).toHaveLength(1);
    // Another run with the same key creates a batch of as many requests in the meantime.
    const other = await fetch(`${server.url}/messages/batches`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({
        requests: [1, 2, 3, 4].map((i) => ({
          custom_id: `other-${i}`,
          params: { model: 'claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] },
        })),
      }),
    });
    expect(((await other.json()) as { id: string }).id).toBe('msgbatch_2');
    const refused = await rumedbenchWith(env, ...argv, '--resume');
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(
      /2 batches of 4 requests were created at .* \(msgbatch_2, msgbatch_1\), and Anthropic keeps no tag to tell which is this run's: none is collected\. Cancel the ones that are not this run's/,
    );
    // Nothing created by the refused resume: the two creating calls are the killed run's and the other run's.
    expect([server.createCalls(), server.batches().length]).toEqual([2, 2]);
    // The other run's batch cancelled, the resume finds this run's alone and collects it.
    await fetch(`${server.url}/messages/batches/msgbatch_2/cancel`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    });
    const r = await rumedbenchWith(env, ...argv, '--resume');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      'batch msgbatch_1: created by an earlier run that never got the answer; found at the provider, collecting its 4 requests',
    );
    expect([server.createCalls(), server.batches().length]).toEqual([2, 2]);
    expect(server.batchLines).toHaveLength(4);
  });
});
