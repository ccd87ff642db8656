/**
 * The embedded engine end to end: a tiny random GGUF written by the test, every task, through node-llama-cpp. The
 * built CLI runs as a child process here, as a user runs it (the native engine stays out of the test process).
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getTask } from '../../src/tasks/registry.js';
import { CLI_ENV } from '../helpers/cli.js';
import { rumedbenchProcessOk as rumedbenchOk, rumedbenchProcess } from '../helpers/cli-process.js';
import { CLI } from '../helpers/data.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { writeTinyGguf } from '../helpers/tiny-gguf.js';

/** The suite's data: the fixture folder the tests write (its prompts in the real shapes), not ../shared. */
const DATA = fixtureDataDir();

describe('llm --provider llama (on fixture data the test writes)', () => {
  it('runs a few samples of every task through a local GGUF model: plumbing, not accuracy', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-llama-'));
    const gguf = join(dir, 'tiny.gguf');
    writeTinyGguf(gguf);
    const out = join(dir, 'run');
    const { stdout } = await rumedbenchOk(
      ...[
        'llm',
        '--provider',
        'llama',
        '--model',
        gguf,
        '--context-size',
        '2048',
        '--split',
        'both',
        '--limit',
        '2',
      ],
      ...['--data', DATA, '--max-tokens', '24', '--out', out, '--bootstrap', '0', '--no-progress', '--json'],
    );
    const summary = JSON.parse(stdout);
    const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(samples).toHaveLength(2 * 8);
    // Every request got a reply; a random model's replies are mostly unreadable, and are counted so.
    expect(samples.every((s) => s.status !== 'failed' && typeof s.reply === 'string')).toBe(true);
    expect(Object.keys(summary.llm.tasks).sort()).toEqual([
      'RuMedDaNet',
      'RuMedNER',
      'RuMedNLI',
      'RuMedSymptomRec',
      'RuMedTest',
      'RuMedTop3',
    ]);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ provider: 'llama', model: 'tiny.gguf', context_size: 2048 });
    expect(manifest.gguf_sha256).toBe(createHash('sha256').update(readFileSync(gguf)).digest('hex'));
    // RuMedNER decodes under its JSON schema: whatever the model says starts as a JSON list.
    for (const s of samples.filter((x) => x.task === 'RuMedNER'))
      expect(s.reply.trimStart().startsWith('[')).toBe(true);
  });

  const loglik = (gguf: string, out: string, ...more: string[]) => [
    'llm',
    '--provider',
    'llama',
    '--model',
    gguf,
    '--mode',
    'loglik',
    '--context-size',
    '4096',
    '--out',
    out,
    '--bootstrap',
    '0',
    '--no-progress',
    '--data',
    DATA,
    ...more,
  ];
  const answers = (dir: string) =>
    readFileSync(join(dir, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as { task: string; id: string; answer: unknown; candidates?: { logprob: number }[] },
      );

  it('scores all five public tasks by log-likelihood; four parallel sequences give the same answers', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-llama-loglik-'));
    const gguf = join(dir, 'tiny.gguf');
    writeTinyGguf(gguf);
    const { stdout } = await rumedbenchOk(...loglik(gguf, join(dir, 'one'), '--limit', '2', '--json'));
    const summary = JSON.parse(stdout);
    expect(Object.keys(summary.tasks).sort()).toEqual([
      'RuMedDaNet',
      'RuMedNER',
      'RuMedNLI',
      'RuMedSymptomRec',
      'RuMedTop3',
    ]);
    expect(summary.llm.loglik.positions).toBeGreaterThan(0);
    const one = answers(join(dir, 'one'));
    for (const s of one.filter((x) => x.candidates))
      expect(s.candidates?.every((c) => Number.isFinite(c.logprob) && c.logprob < 0)).toBe(true);
    await rumedbenchOk(...loglik(gguf, join(dir, 'four'), '--limit', '2', '--concurrency', '4'));
    const four = answers(join(dir, 'four'));
    expect(four.map((s) => [s.task, s.id])).toEqual(one.map((s) => [s.task, s.id]));
    // The provider scores one request at a time (side by side, the trie walks drifted by up to 13 nats), so the
    // sums match exactly here; generation (RuMedNER) still runs in parallel and may share a batch, whose f16 KV
    // cache can move a sum in its last digits. Scores must agree within 1% (+0.02 nats); answers wherever no two
    // candidates that decide them are within twice that.
    const tol = (x: number) => 0.02 + 0.01 * Math.abs(x);
    let decided = 0;
    for (const [i, a] of one.entries()) {
      const b = four[i] as (typeof four)[number];
      if (!a.candidates) {
        expect(b.answer).toEqual(a.answer);
        continue;
      }
      const lp = (s: typeof a) => (s.candidates ?? []).map((c) => c.logprob);
      for (const [j, x] of lp(b).entries())
        expect(Math.abs(x - (lp(a)[j] as number))).toBeLessThan(tol(lp(a)[j] as number));
      const sorted = lp(a).sort((x, y) => y - x);
      const deciding = getTask(a.task).kind === 'ranking' ? 4 : 2;
      const gaps = sorted.slice(0, deciding - 1).map((x, j) => x - (sorted[j + 1] as number));
      if (gaps.every((g, j) => g > 2 * tol(sorted[j] as number))) {
        decided++;
        expect([b.task, b.id, b.answer]).toEqual([a.task, a.id, a.answer]);
      }
    }
    expect(decided).toBeGreaterThan(0);
  });

  it('refuses to score a prompt longer than the context, instead of shifting it away', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-llama-short-'));
    const gguf = join(dir, 'tiny.gguf');
    writeTinyGguf(gguf);
    const r = await rumedbenchProcess(
      ...loglik(gguf, join(dir, 'run'), '--tasks', 'RuMedDaNet', '--limit', '1', '--context-size', '256'),
    );
    expect([r.code, r.stderr]).toEqual([
      3,
      expect.stringContaining('do not fit the context of 256 tokens; raise --context-size'),
    ]);
  });

  it('resumes a log-likelihood run killed with SIGKILL, ending as an uninterrupted run', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-llama-kill-'));
    const gguf = join(dir, 'tiny.gguf');
    writeTinyGguf(gguf);
    const out = join(dir, 'run');
    const args = loglik(gguf, out, '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '20');
    const child = spawn(process.execPath, [CLI, ...args], { env: CLI_ENV, stdio: 'ignore' });
    const journal = join(out, 'journal.jsonl');
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (existsSync(journal) && readFileSync(journal, 'utf8').split('\n').length > 6) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 5);
    });
    await new Promise((r) => child.once('exit', r));
    const done = readFileSync(journal, 'utf8').trim().split('\n').length;
    expect(done).toBeLessThan(40);
    await rumedbenchOk(...args, '--resume');
    expect(readFileSync(journal, 'utf8').trim().split('\n')).toHaveLength(40);
    await rumedbenchOk(
      ...loglik(gguf, join(dir, 'fresh'), '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '20'),
    );
    expect(answers(out).map((s) => [s.id, s.answer])).toEqual(
      answers(join(dir, 'fresh')).map((s) => [s.id, s.answer]),
    );
  });
});
