/** `rumedbench llm` against a loopback OpenAI-compatible server: outputs, retries, and a killed run resumed. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { getTask } from '../../src/tasks/registry.js';
import type { Split, TaskRecord } from '../../src/tasks/types.js';
import { CLI_ENV, rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { FIXTURE_CODES, FIXTURE_SYMPTOMS, fixtureDataDir } from '../helpers/fixture-data.js';

/** The suite's data: a small folder the tests write (test/helpers/fixture-data.ts), not ../shared. */
const DATA = fixtureDataDir();

const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Answers every item with its gold answer, written as the prompt asks, except the ids in `garble`. */
async function oracle(
  tasks: [string, Split][],
  garble: (id: string) => boolean,
): Promise<(body: ChatRequestBody) => string> {
  const answers = new Map<string, string>();
  for (const [name, split] of tasks) {
    const task = getTask(name);
    const records: TaskRecord[] = await loadSplit(task, split, { dataDir: DATA });
    for (const r of records) {
      const text = garble(r.id)
        ? 'Затрудняюсь ответить.'
        : r.gold === undefined
          ? 'Ответ: 2'
          : task.prompt.answer(r.gold as string, r.raw);
      answers.set(task.prompt.render(r.raw), text);
    }
  }
  return (body) => {
    const last = body.messages[body.messages.length - 1]?.content ?? '';
    return answers.get(last.slice(last.indexOf('\n\n') + 2)) ?? 'нет такого вопроса';
  };
}

/** `rumedbench llm` with the fake model, and no progress bar. */
const llm = (...args: string[]) => ['llm', '--model', 'fake-1', '--no-progress', '--data', DATA, ...args];
const cli = (args: string[]) => rumedbenchOk(...llm(...args));

const garbleEvery5th = (id: string) => id.charCodeAt(id.length - 1) % 5 === 0;

describe('llm harness (on fixture data the test writes)', () => {
  it('asks every task, reads the replies, and writes the run folder; unreadable replies are unparsed, not defaulted', async () => {
    const reply = await oracle(
      [
        ['RuMedTop3', 'test'],
        ['RuMedSymptomRec', 'test'],
        ['RuMedDaNet', 'test'],
        ['RuMedNLI', 'test'],
        ['RuMedNER', 'test'],
        ['RuMedDaNet', 'private_test'],
        ['RuMedTest', 'private_test'],
      ],
      garbleEvery5th,
    );
    const server = await startFakeOpenAI({ reply });
    servers.push(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-llm-'));
    const { stdout } = await cli([
      '--base-url',
      server.url,
      '--out',
      out,
      '--split',
      'both',
      '--limit',
      '12',
      '--bootstrap',
      '0',
      '--json',
      '--price-prompt',
      '1',
      '--price-completion',
      '2',
    ]);
    const summary = JSON.parse(stdout);
    const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // 12 items for each task and split: 5 test sets, 3 private tests.
    expect(samples).toHaveLength(12 * 8);
    expect(server.requests).toHaveLength(12 * 8);
    expect(server.requests[0]?.body).toMatchObject({
      model: 'fake-1',
      temperature: 0,
      max_tokens: 1024,
      seed: 0,
    });
    for (const s of samples) {
      if (s.gold === undefined) continue;
      // The oracle is right except where it garbles; a garbled reply is unparsed and wrong.
      expect({ id: s.id, status: s.status, correct: s.correct }).toEqual(
        garbleEvery5th(s.id)
          ? { id: s.id, status: 'unparsed', correct: false }
          : { id: s.id, status: 'parsed', correct: true },
      );
    }
    const garbled = (task: string) =>
      samples.filter((s) => s.task === task && s.split === 'test' && garbleEvery5th(s.id)).length;
    expect(summary.tasks.RuMedDaNet.metrics.accuracy).toBeCloseTo(
      (100 * (12 - garbled('RuMedDaNet'))) / 12,
      6,
    );
    expect(summary.tasks.RuMedDaNet.unanswered).toBe(
      samples.filter((s) => s.task === 'RuMedDaNet' && s.split === 'test' && s.status === 'unparsed').length,
    );
    // The oracle knows no private-test gold and answers "Ответ: 2", which is no NLI label: unparsed, never defaulted.
    const nli = samples.filter((s) => s.task === 'RuMedNLI');
    expect(nli.filter((s) => s.split === 'private_test').map((s) => [s.status, s.answer])).toEqual(
      Array(12).fill(['unparsed', null]),
    );
    expect(summary.llm.tasks.RuMedNLI.unparsed).toBe(12 + garbled('RuMedNLI'));
    // What the chance row of the text summary divides by: the train inventory of the open label spaces.
    expect(summary.llm.label_space).toEqual({
      RuMedTop3: FIXTURE_CODES.length,
      RuMedSymptomRec: FIXTURE_SYMPTOMS.length,
      RuMedDaNet: 2,
      RuMedNLI: 3,
      RuMedTest: 4,
    });
    const { prompt_tokens, completion_tokens } = summary.llm.usage;
    expect(prompt_tokens).toBeGreaterThan(0);
    expect(summary.llm.cost).toBeCloseTo((prompt_tokens * 1 + completion_tokens * 2) / 1e6, 12);
    expect(summary.llm.latency_ms.p95).toBeGreaterThanOrEqual(summary.llm.latency_ms.median);

    const predictions = readFileSync(join(out, 'predictions', 'RuMedNLI.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(predictions.filter((p) => p.prediction === null)).toHaveLength(garbled('RuMedNLI'));
    const zip = unzipSync(readFileSync(join(out, 'submission.zip')));
    expect(Object.keys(zip).sort()).toEqual(['RuMedDaNet.jsonl', 'RuMedNLI.jsonl', 'RuMedTest.jsonl']);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      provider: 'openai',
      model: 'fake-1',
      seed: 0,
      shots: 0,
      prompt_versions: { RuMedNLI: 'nli-v2' },
    });
    expect(manifest.data_sha256['RuMedDaNet/test']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('retries 429 (honouring Retry-After), 500, dropped connections and timeouts, and loses nothing', async () => {
    const reply = await oracle([['RuMedDaNet', 'test']], () => false);
    // A 429 asking for a one-second pause, a 500, a dropped connection, and a reply slower than --timeout-ms.
    const plan = [
      { kind: '429', retryAfter: '1' },
      { kind: '500' },
      { kind: 'drop' },
      { kind: 'ok', delayMs: 3000 },
    ] as const;
    const server = await startFakeOpenAI({ reply, behaviour: (n) => plan[n] ?? { kind: 'ok' } });
    servers.push(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-llm-retry-'));
    const t0 = Date.now();
    const { stdout } = await cli([
      '--base-url',
      server.url,
      '--out',
      out,
      '--tasks',
      'RuMedDaNet',
      '--limit',
      '5',
      '--concurrency',
      '1',
      '--timeout-ms',
      '1000',
      '--bootstrap',
      '0',
      '--json',
    ]);
    expect(Date.now() - t0).toBeGreaterThan(1000);
    expect(JSON.parse(stdout).tasks.RuMedDaNet.metrics.accuracy).toBe(100);
    // Four failed attempts, each retried: every one of the five items was answered once in the end.
    expect(server.requests).toHaveLength(5 + 4);
  });

  it('a run killed with SIGKILL resumes without asking a finished sample again, and ends as an uninterrupted run', async () => {
    const reply = await oracle([['RuMedNLI', 'test']], garbleEvery5th);
    const server = await startFakeOpenAI({ reply, behaviour: () => ({ kind: 'ok', delayMs: 40 }) });
    servers.push(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-llm-kill-'));
    const args = llm(
      ...['--base-url', server.url, '--out', out, '--tasks', 'RuMedNLI', '--limit', '60'],
      ...['--concurrency', '2', '--bootstrap', '0'],
    );
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { env: CLI_ENV, stdio: 'ignore' });
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (server.requests.length >= 20) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 5);
    });
    await new Promise((r) => child.once('exit', r));
    const journaled = new Set(
      readFileSync(join(out, 'journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).key as string),
    );
    expect(journaled.size).toBeGreaterThan(10);
    expect(journaled.size).toBeLessThan(60);
    const before = server.requests.length;

    await rumedbenchOk(...args, '--resume');
    const resumed = server.requests.slice(before).map((r) => r.key);
    // Each remaining sample exactly once; nothing journaled is sent again.
    expect(new Set(resumed).size).toBe(resumed.length);
    expect(resumed.length).toBe(60 - journaled.size);

    const clean = mkdtempSync(join(tmpdir(), 'rumedbench-llm-clean-'));
    await rumedbenchOk(...args.map((a) => (a === out ? clean : a)));
    const read = (dir: string) => readFileSync(join(dir, 'predictions', 'RuMedNLI.jsonl'), 'utf8');
    expect(read(out)).toBe(read(clean));
    expect(read(out).trim().split('\n')).toHaveLength(60);
  });

  it('refuses to overwrite a run without --resume', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    servers.push(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-llm-again-'));
    const args = [
      '--base-url',
      server.url,
      '--out',
      out,
      '--tasks',
      'RuMedDaNet',
      '--limit',
      '2',
      '--bootstrap',
      '0',
    ];
    const first = await cli(args);
    // The text summary puts the run beside uniform chance (for the tasks asked) and the paper's Naive and Human rows.
    expect(first.stdout).toMatch(/Chance\s+–\s+–\s+50\.00\s+–\s+–/);
    expect(first.stdout).toMatch(/Human \(paper\)/);
    expect(first.stdout).toMatch(/fake-1\s+–\s+–\s+\d+\.\d\d\s+–/);
    expect(existsSync(join(out, 'journal.jsonl'))).toBe(true);
    expect(await rumedbench(...llm(...args))).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('already holds a run; --resume continues it'),
    });
  });
});
