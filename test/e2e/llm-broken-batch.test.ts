/**
 * `llm --batch` against a Batch API that lies about its results (issue #59): a results file declared gzip over a plain
 * body, a gzip stream cut half-way, a body cut at half its length, a file without its final newline, a completed
 * batch that names no output file. Each row: the built CLI, spawned as a user runs it, never exits 0 having written
 * nothing; the batch is not recorded collected; `--resume --batch` against the healthy provider downloads the results
 * again and the requests are paid once.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI_ENV, rumedbench, rumedbenchWith } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type FakeOpenAI, type ResultsFault, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import {
  batchArgs,
  closedAfterEach,
  keyFormsIn,
  killWhen,
  ledgerEvents,
  llmArgs,
} from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI>();

const args = (url: string, out: string, ...more: string[]) => batchArgs(DATA, url, out, ...more);

/** The built CLI as a user runs it: the process's own exit code, not a promise's. */
function spawned(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...argv], {
    env: { ...CLI_ENV, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((r) => child.once('close', (code) => r({ code, stderr })));
}

/** A key with the characters that encodings change: / + = & and a quote. */
const KEY = 'sk-te/st+Kq9=x&y"z-secret';

describe('llm --batch against lying results files', () => {
  const rows: (ResultsFault | 'null-output')[] = [
    'gzip-plain',
    'br-plain',
    'gzip-cut',
    'short',
    'cut-line',
    'null-output',
  ];
  for (const fault of rows)
    it(`${fault}: exits non-zero naming --resume, the batch not collected; --resume collects it, paid once`, async () => {
      let lying = true;
      const server = await startFakeOpenAI({
        reply: () => 'Ответ: да',
        ...(fault === 'null-output'
          ? { nullOutput: () => lying }
          : { resultsFault: () => (lying ? fault : undefined) }),
      });
      track(server);
      const out = mkdtempSync(join(tmpdir(), `rumedbench-lying-${fault}-`));
      const keyed = ['--api-key-env', 'RB_BATCH_KEY'];
      const first = await spawned(args(server.url, out, ...keyed), { RB_BATCH_KEY: KEY });
      expect(first.code, first.stderr).toBe(3);
      expect(first.stderr).toContain('--resume');
      expect(first.stderr).toContain('batch batch_1 ended completed, but its results could not be read');
      // A body that does not decode as it says is a broken answer, not a server that is down (red team).
      if (fault === 'gzip-plain' || fault === 'br-plain') {
        const encoding = fault === 'gzip-plain' ? 'gzip' : 'br';
        expect(first.stderr).toContain(
          `the answer is broken: its body does not decode as its declared Content-Encoding ${encoding}`,
        );
        expect(first.stderr).not.toMatch(/is down|broke off/);
      }
      expect(existsSync(join(out, 'summary.json'))).toBe(false);
      expect(existsSync(join(out, '.rumedbench.lock'))).toBe(false);
      expect(ledgerEvents(out)).toEqual(['creating', 'submitted']);
      lying = false;
      const resumed = await rumedbenchWith(
        { RB_BATCH_KEY: KEY },
        ...args(server.url, out, '--resume', ...keyed),
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stderr).toContain(
        'batch batch_1: submitted by an earlier run; collecting its 12 requests',
      );
      // The key, in none of its encodings, in any file of the run or on the terminal (#59 item 8).
      expect(keyFormsIn(out, KEY, first.stderr, resumed.stderr, resumed.stdout)).toEqual([]);
      // Paid once: one batch of 12 lines, nothing online.
      expect(server.batches()).toHaveLength(1);
      expect(server.batchLines).toHaveLength(12);
      expect(server.requests).toHaveLength(0);
      expect(ledgerEvents(out)).toEqual(['creating', 'submitted', 'collected']);
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
      expect(summary.tasks.RuMedDaNet.n).toBe(6);
      expect(summary.tasks.RuMedNLI.n).toBe(6);
    });
});

describe('a command that ends before its work', () => {
  it('exits 3 with the --resume hint when its promise is still pending as the event loop empties, never 0', async () => {
    // The bin's own guard, loaded from the built files as the bin loads it, watching a promise that never settles:
    // what a download dropped without an error left behind (Node.js itself would exit 0).
    const guard = pathToFileURL(join(dirname(CLI), '..', 'cli', 'pending-exit.js')).href;
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { failIfUnfinished } from ${JSON.stringify(guard)}; failIfUnfinished(new Promise(() => {}), (t) => process.stderr.write(t));`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const code = await new Promise((r) => child.once('close', r));
    expect({ code, stderr }).toEqual({
      code: 3,
      stderr:
        'rumedbench: error: the command ended before its work did (an operation it was waiting for never finished, and nothing was left to wait on); nothing after that point was written. Continue with the same command and --resume, which keeps every answer journaled so far\n',
    });
  });
});

describe('append-only files with a torn last line (a kill while a line was written)', () => {
  it('the journal: the torn line is set aside in journal.jsonl.torn before anything is appended; nothing is paid twice', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-torn-journal-'));
    const online = (...more: string[]) =>
      rumedbench(...llmArgs({ url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit: 6 }, ...more));
    expect((await online()).code).toBe(0);
    const file = join(out, 'journal.jsonl');
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    const last = lines.at(-1) as string;
    // Killed in the middle of writing its last answer: half a line, no newline.
    writeFileSync(file, `${lines.slice(0, -1).join('\n')}\n${last.slice(0, 40)}`);
    const second = await online('--resume');
    expect(second.code, second.stderr).toBe(0);
    expect(server.requests).toHaveLength(7);
    const third = await online('--resume');
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).toContain('6 requests in the run, 6 already answered, 0 to send');
    expect(third.stderr).not.toContain('unreadable');
    expect(server.requests).toHaveLength(7);
    expect(readFileSync(`${file}.torn`, 'utf8')).toBe(`${last.slice(0, 40)}\n`);
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });

  it('the batch ledger: the torn line is set aside; its own records are never called damaged', async () => {
    let hold = true;
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', holdBatches: () => hold });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-torn-ledger-'));
    await killWhen(args(server.url, out), CLI_ENV, () => server.batchLooks() >= 3);
    const file = join(out, 'batches.jsonl');
    expect(ledgerEvents(out)).toEqual(['creating', 'submitted']);
    const torn = `{"at":"${new Date().toISOString()}","event":"seen","id":"batch_1","sta`;
    appendFileSync(file, torn);
    hold = false;
    const resumed = await rumedbench(...args(server.url, out, '--resume'));
    expect(resumed.code, resumed.stderr).toBe(0);
    const again = await rumedbench(...args(server.url, out, '--resume'));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('damaged');
    expect(ledgerEvents(out)).toEqual(['creating', 'submitted', 'collected']);
    expect(readFileSync(`${file}.torn`, 'utf8')).toBe(`${torn}\n`);
    expect(server.batchLines).toHaveLength(12);
  });
});

describe('--resume with a setting that changes the requests', () => {
  it('online: refuses in one line naming which setting changed, old → new, asking nothing, paying nothing twice', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-changed-online-'));
    const online = (...more: string[]) =>
      rumedbench(...llmArgs({ url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit: 5 }, ...more));
    expect((await online()).code).toBe(0);
    const changed = await online('--resume', '--temperature', '0.7');
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(
      /journal\.jsonl holds 5 paid answer\(s\) for 5 of this run's items that these settings would not use \(changed since they were asked: --temperature 0 → 0\.7\): continuing would ask them again and pay twice\. Resume with the settings they were asked with, give a new --out, or add --reask/,
    );
    expect(changed.stderr).not.toContain('--max-tokens');
    const two = await online('--resume', '--max-tokens', '512', '--system', 'Отвечай кратко.');
    expect(two.code).toBe(2);
    expect(two.stderr).toContain(
      '(changed since they were asked: --max-tokens 1024 → 512, --system null → "Отвечай кратко.")',
    );
    expect(server.requests).toHaveLength(5);
  });

  it('online --reask: says what it asks again, asks only the changed items, keeps the paid answers; then resumes quietly', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-reask-'));
    const online = (limit: number, ...more: string[]) =>
      rumedbench(...llmArgs({ url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit }, ...more));
    expect((await online(3)).code).toBe(0);
    const journal = () => readFileSync(join(out, 'journal.jsonl'), 'utf8').trim().split('\n');
    const paid = journal();
    expect(paid).toHaveLength(3);
    // Two more items at the new temperature: the three old ones are asked again, the two new ones once.
    const reask = await online(5, '--resume', '--reask', '--temperature', '0.7');
    expect(reask.code, reask.stderr).toBe(0);
    expect(reask.stderr).toContain(
      '--reask: 3 item(s) answered under other settings (--temperature 0 → 0.7) are asked again and paid again; their 3 old answer(s) stay in',
    );
    expect(server.requests).toHaveLength(8);
    expect(server.requests.slice(3).every((r) => r.body.temperature === 0.7)).toBe(true);
    expect(journal().slice(0, 3)).toEqual(paid);
    expect(journal()).toHaveLength(8);
    // Whole under the new settings: a plain --resume asks nothing and refuses nothing.
    const again = await online(5, '--resume', '--temperature', '0.7');
    expect(again.code, again.stderr).toBe(0);
    expect(server.requests).toHaveLength(8);
    expect(readFileSync(join(out, 'settings.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('--reask without --resume is refused', async () => {
    const r = await rumedbench(
      ...llmArgs(
        {
          url: 'http://127.0.0.1:9',
          out: mkdtempSync(join(tmpdir(), 'rumedbench-reask-alone-')),
          data: DATA,
          tasks: 'RuMedDaNet',
          limit: 1,
        },
        '--reask',
      ),
    );
    expect([r.code, r.stderr.trim()]).toEqual([2, expect.stringContaining('--reask goes with --resume')]);
  });

  it('batch: a waiting batch of other requests is refused before it is collected, its paid answers kept', async () => {
    let hold = true;
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', holdBatches: () => hold });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-changed-batch-'));
    await killWhen(args(server.url, out), CLI_ENV, () => server.batchLooks() >= 3);
    hold = false;
    const changed = await rumedbench(...args(server.url, out, '--resume', '--max-tokens', '512'));
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(
      /batch batch_1 holds 12 request\(s\) this run would not ask \(changed since they were asked: --max-tokens 1024 → 512\): collecting it would drop its paid answers\. Resume with the settings it was made with \(they collect it\), or give a new --out/,
    );
    expect(ledgerEvents(out)).toEqual(['creating', 'submitted']);
    expect(server.batches()).toHaveLength(1);
    const same = await rumedbench(...args(server.url, out, '--resume'));
    expect(same.code, same.stderr).toBe(0);
    expect(server.batchLines).toHaveLength(12);
  });
});

describe('a batch status in another provider’s words', () => {
  for (const word of ['COMPLETED', 'succeeded'])
    it(`${word}: read as done at once, not waited on until the deadline`, async () => {
      const server = await startFakeOpenAI({
        reply: () => 'Ответ: да',
        statusWord: (s) => (s === 'completed' ? word : s),
      });
      track(server);
      const out = mkdtempSync(join(tmpdir(), `rumedbench-status-${word}-`));
      const r = await rumedbench(...args(server.url, out, '--batch-deadline', '0.001'));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`batch batch_1: ${word}`);
      expect(server.batchLines).toHaveLength(12);
    });
});

describe('a batch status word no provider documents (red team)', () => {
  it('paused, with every request done: said once, and read as ended from the request counts, not waited on to the deadline', async () => {
    // The same unknown word while the batch runs (its counts not done) and once it is done.
    const server = await startFakeOpenAI({
      reply: () => 'Ответ: да',
      statusWord: (s) => (s === 'in_progress' || s === 'completed' ? 'paused' : s),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-status-paused-'));
    const r = await rumedbench(...args(server.url, out, '--batch-deadline', '0.002'));
    expect(r.code, r.stderr).toBe(0);
    const said = r.stderr
      .split('\n')
      .filter((l) => l.includes('"paused", a status word this client does not know'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      /batch batch_1: the provider says "paused", a status word this client does not know/,
    );
    expect(r.stderr).toMatch(
      /batch batch_1: "paused", but its request counts show every request done \(12 of 12\): read as ended/,
    );
    expect(server.batchLines).toHaveLength(12);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.tasks.RuMedDaNet.n).toBe(6);
  });
});

describe('costs at the rate paid (#59 item 5)', () => {
  it('45 answers online, then 15 by --resume --batch: llm.cost, its parts and --max-cost count each at its own rate', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-rate-paid-'));
    const prices = ['--price-prompt', '10', '--price-completion', '30'];
    const run = (limit: number, ...more: string[]) =>
      rumedbench(
        ...llmArgs({ url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit }, ...prices, ...more),
      );
    expect((await run(45)).code).toBe(0);
    const batched = await run(60, '--resume', '--batch', '--batch-poll', '0.01');
    expect(batched.code, batched.stderr).toBe(0);
    expect(server.requests).toHaveLength(45);
    expect(server.batchLines).toHaveLength(15);
    // What was paid, by hand from the journal's token counts: online at the list prices, the batch's at half.
    type Line = {
      status: string;
      usage: { promptTokens: number; completionTokens: number };
      bought?: { via: string };
    };
    const lines = readFileSync(join(out, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const list = (l: Line) => (l.usage.promptTokens * 10 + l.usage.completionTokens * 30) / 1e6;
    const online = lines.filter((l) => l.bought?.via === 'online');
    const batch = lines.filter((l) => l.bought?.via === 'batch');
    expect([online.length, batch.length]).toEqual([45, 15]);
    const onlineUsd = online.reduce((a, l) => a + list(l), 0);
    const batchUsd = batch.reduce((a, l) => a + list(l), 0) / 2;
    const summary = () => JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    const parts = {
      cost: expect.closeTo(onlineUsd + batchUsd, 12),
      online: { answers: 45, cost: expect.closeTo(onlineUsd, 12) },
      batch: {
        provider: 'openai',
        batches: ['batch_1'],
        discount: 0.5,
        answers: 15,
        cost: expect.closeTo(batchUsd, 12),
      },
    };
    expect(summary().llm).toMatchObject(parts);
    // Before: the whole run at the batch discount, and the batch part gone after an online resume.
    expect(summary().llm.cost).toBeGreaterThan((onlineUsd + 2 * batchUsd) / 2 + 1e-9);
    // An online resume keeps both parts; its budget counts the past at what was paid.
    const usd = (x: number) => `$${x >= 1 ? x.toFixed(2) : String(Number(x.toPrecision(3)))}`;
    const resumed = await run(60, '--resume', '--max-cost', '100');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`after ${usd(onlineUsd + batchUsd)} spent; --max-cost $100.00`);
    expect(summary().llm).toMatchObject(parts);
    expect(server.requests).toHaveLength(45);
  });
});

describe('downloads and waits (#59 item 6)', () => {
  it('a results file slower than --timeout-ms is downloaded once, on a deadline that grows with the batch', async () => {
    const server = await startFakeOpenAI({
      reply: () => 'Ответ: да',
      resultsFault: () => 'slow',
      slowResultsMs: 2500,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-slow-results-'));
    const r = await rumedbench(...args(server.url, out, '--timeout-ms', '1500'));
    expect(r.code, r.stderr).toBe(0);
    expect(server.downloads()).toBe(1);
    expect(server.batchLines).toHaveLength(12);
    expect(ledgerEvents(out)).toEqual(['creating', 'submitted', 'collected']);
  });

  it('a 429 on creating is waited out as its Retry-After asks, then created once, never looked up first', async () => {
    const server = await startFakeOpenAI({
      reply: () => 'Ответ: да',
      createFault: (n) => (n === 0 ? '429' : undefined),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-create-429-'));
    const t0 = Date.now();
    const r = await rumedbench(...args(server.url, out, '--timeout-ms', '1000'));
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
    expect(r.stderr).toContain('creating a batch of 12 requests was refused for now (http://127.0.0.1');
    expect(r.stderr).toContain('creating it again in 2.0 s, as the provider asks (Retry-After)');
    expect([server.createCalls(), server.batches().length, server.batchLines.length]).toEqual([2, 1, 12]);
    // The one look at the list is the one after the batch ended (for a late second batch), not a lookup before.
    expect(server.listCalls()).toBe(1);
  });

  it('a provider without the list of batches: the completed batch is collected, warned once', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', noList: true });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-no-list-'));
    const r = await rumedbench(...args(server.url, out));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/the provider has no list of batches/g)).toHaveLength(1);
    expect(ledgerEvents(out).at(-1)).toBe('collected');
    expect(server.batchLines).toHaveLength(12);
    expect(existsSync(join(out, 'summary.json'))).toBe(true);
  });

  it('500s from the status endpoint are backed off; past the patience the run stops with --resume, which collects', async () => {
    let failing: (n: number) => boolean = (n) => n < 3;
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', statusFault: (n) => failing(n) });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-status-500-'));
    // Patience: five creating windows of two --timeout-ms each (10 s here, 2 s below).
    const passing = await rumedbench(...args(server.url, out, '--max-retries', '0', '--timeout-ms', '1000'));
    expect(passing.code, passing.stderr).toBe(0);
    expect(passing.stderr).toContain('looking at batch batch_1 failed (');
    const out2 = mkdtempSync(join(tmpdir(), 'rumedbench-status-500-stuck-'));
    failing = () => true;
    const stuck = await rumedbench(...args(server.url, out2, '--max-retries', '0', '--timeout-ms', '200'));
    expect(stuck.code).toBe(3);
    expect(stuck.stderr).toMatch(
      /looking at batch batch_2 failed again and again for [\d.]+ s \(the last: .*HTTP 500.*\); the batch is recorded and waits at the provider: continue with the same command and --resume, which collects it/,
    );
    expect(ledgerEvents(out2)).toEqual(['creating', 'submitted']);
    failing = () => false;
    const resumed = await rumedbench(...args(server.url, out2, '--resume'));
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(server.batchLines).toHaveLength(24);
    expect(server.batches()).toHaveLength(2);
  });
});

describe('a results download that breaks off half-way, from a server that offers ranges (#59 item 6)', () => {
  /** The predictions a run folder holds, by file. */
  const predictionsOf = (out: string): Record<string, string> =>
    Object.fromEntries(
      readdirSync(join(out, 'predictions'))
        .sort()
        .map((f) => [f, readFileSync(join(out, 'predictions', f), 'utf8')]),
    );
  let clean: Record<string, string> | undefined;
  /** The same run against a server whose download never breaks. */
  const cleanRun = async (): Promise<Record<string, string>> => {
    if (clean) return clean;
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-ranges-clean-'));
    const r = await rumedbench(...args(server.url, out));
    expect(r.code, r.stderr).toBe(0);
    clean = predictionsOf(out);
    return clean;
  };
  const broken = async (mode: 'honour' | 'ignore' | 'etag-changes' | 'gzip') => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да', resultRanges: mode });
    track(server);
    const out = mkdtempSync(join(tmpdir(), `rumedbench-ranges-${mode}-`));
    const r = await rumedbenchWith(
      { RB_BATCH_KEY: KEY },
      ...args(server.url, out, '--api-key-env', 'RB_BATCH_KEY'),
    );
    expect(r.code, r.stderr).toBe(0);
    // Paid once: one batch of 12 lines, nothing online; its answers those of an unbroken download.
    expect([server.batches().length, server.batchLines.length, server.requests.length]).toEqual([1, 12, 0]);
    expect(ledgerEvents(out)).toEqual(['creating', 'submitted', 'collected']);
    expect(predictionsOf(out)).toEqual(await cleanRun());
    expect(keyFormsIn(out, KEY, r.stderr, r.stdout)).toEqual([]);
    const answers = server.rangeAnswers;
    const total = (answers[0] as { total: number }).total;
    return { answers, total };
  };

  it('honoured: the rest asked from the byte reached (206), under twice the body served, answers as a clean run', async () => {
    const { answers, total } = await broken('honour');
    const half = Math.floor(total / 2);
    const from = Number(/^bytes=(\d+)-$/.exec(answers[1]?.range ?? '')?.[1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThanOrEqual(half);
    expect(answers).toEqual([
      { range: null, status: 200, sent: half, total },
      { range: `bytes=${from}-`, status: 206, sent: total - from, total },
    ]);
    expect(answers.reduce((a, x) => a + x.sent, 0)).toBeLessThan(2 * total);
  });

  it('ignored (a 200 to the range): the file is written again from its first byte', async () => {
    const { answers, total } = await broken('ignore');
    expect(answers.map((a) => [a.range?.replace(/\d+/, 'N') ?? null, a.status, a.sent])).toEqual([
      [null, 200, Math.floor(total / 2)],
      ['bytes=N-', 200, total],
    ]);
  });

  it('another version (its ETag changed): the 206 is let go and the whole file asked again', async () => {
    const { answers, total } = await broken('etag-changes');
    expect(answers.map((a) => [a.range?.replace(/\d+/, 'N') ?? null, a.status])).toEqual([
      [null, 200],
      ['bytes=N-', 206],
      [null, 200],
    ]);
    expect(answers[2]?.sent).toBe(total);
  });

  it('gzip-encoded: never resumed (the range would be of compressed bytes), asked again whole', async () => {
    const { answers, total } = await broken('gzip');
    expect(answers.map((a) => [a.range, a.status, a.sent])).toEqual([
      [null, 200, Math.floor(total / 2)],
      [null, 200, total],
    ]);
  });
});

describe('keys in batch ids (#59 item 8)', () => {
  it('a batch id that carries the key, as it is or encoded, reaches no file of the run and not the terminal', async () => {
    const key = KEY;
    const server = await startFakeOpenAI({
      reply: () => 'Ответ: да',
      batchIdOf: (n) => `batch_${key}_${n + 1}`,
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-key-batch-id-'));
    const r = await rumedbenchWith(
      { RB_BATCH_KEY: key },
      ...args(server.url, out, '--api-key-env', 'RB_BATCH_KEY'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(server.batches().map((b) => b.id)).toEqual([`batch_${key}_1`]);
    expect(keyFormsIn(out, key, r.stderr, r.stdout)).toEqual([]);
    expect(readFileSync(join(out, 'batches.jsonl'), 'utf8')).toContain('batch_***_1');
  });
});
