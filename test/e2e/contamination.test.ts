/**
 * The order probe (Oren et al., 2023) end to end, on fixture data, against loopback servers that speak vLLM's
 * /v1/completions with echo: one has memorised the test files (their items in the published order), one has not.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { ITEM_SEPARATOR, probeText, splitItem } from '../../src/llm/contamination.js';
import { getTask } from '../../src/tasks/registry.js';
import { CLI_ENV, rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type FakeOpenAI, fakeTokenize, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();

interface Probed {
  tasks: Record<
    string,
    { order: { p_value: number; verdict: string; shards: number; shard_size: number; n: number } }
  >;
}

describe('contamination --probes order (on fixture data the test writes)', () => {
  let memorizing: FakeOpenAI;
  let clean: FakeOpenAI;
  beforeAll(async () => {
    // The model read the test files: each split's items, as the probe writes them, in the file's order.
    const files = await Promise.all(
      ['RuMedDaNet', 'RuMedTop3'].map(async (name) => {
        const task = getTask(name);
        const records = await loadSplit(task, 'test', { dataDir: DATA });
        return records.map((r) => probeText(task, r)).join(ITEM_SEPARATOR);
      }),
    );
    const reply = () => 'Ответ: да';
    memorizing = await startFakeOpenAI({ reply, memorized: files.join(ITEM_SEPARATOR) });
    clean = await startFakeOpenAI({ reply });
  });
  afterAll(async () => {
    await memorizing?.close();
    await clean?.close();
  });
  const probe = (url: string, ...more: string[]) =>
    rumedbenchOk(
      ...[
        'contamination',
        '--base-url',
        url,
        '--model',
        'fake',
        '--data',
        DATA,
        '--tasks',
        'RuMedDaNet,RuMedTop3',
      ],
      ...['--json', ...more],
    );

  it('flags a model that has memorised the published order (p < 0.01), and not one that has not (p > 0.05)', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-contamination-'));
    const seen = JSON.parse((await probe(memorizing.url, '--out', out)).stdout) as Probed;
    for (const task of ['RuMedDaNet', 'RuMedTop3']) {
      const r = seen.tasks[task]?.order;
      expect([task, r?.verdict, r?.n, r?.shards, r?.shard_size]).toEqual([task, 'contaminated', 60, 15, 4]);
      expect(r?.p_value).toBeLessThan(0.01);
    }
    expect(JSON.parse(readFileSync(join(out, 'contamination.json'), 'utf8'))).toEqual(seen);
    const unseen = JSON.parse((await probe(clean.url)).stdout) as Probed;
    for (const task of ['RuMedDaNet', 'RuMedTop3']) {
      expect([task, unseen.tasks[task]?.order.verdict]).toEqual([task, 'no evidence']);
      expect(unseen.tasks[task]?.order.p_value).toBeGreaterThan(0.05);
    }
  });

  it('cuts shards finer until each fits the context the server names', async () => {
    const small = await startFakeOpenAI({ reply: () => '[]', maxModelLen: 300 });
    try {
      const r = JSON.parse(
        (
          await rumedbenchOk(
            ...['contamination', '--base-url', small.url, '--model', 'fake', '--data', DATA],
            ...['--tasks', 'RuMedDaNet', '--shards', '2', '--permutations', '3', '--json'],
          )
        ).stdout,
      ) as {
        tasks: { RuMedDaNet: { order: { shards: number; shard_size: number; context_window: number } } };
      };
      const order = r.tasks.RuMedDaNet.order;
      expect(order.context_window).toBe(300);
      expect(order.shards).toBeGreaterThan(2);
      // Every sequence scored (the prompt with its continuation) fits the 300 tokens.
      // A prompt is token ids or a text (the server tokenizes it, with its BOS): counted as the server reads it.
      const lengths = small.completions.flatMap((c) =>
        (Array.isArray(c.prompt) ? (c.prompt as (string | number[])[]) : [c.prompt]).map((p) =>
          typeof p === 'string' ? fakeTokenize(p, true).length : p.length,
        ),
      );
      expect(lengths.length).toBeGreaterThan(0);
      expect(Math.max(...lengths)).toBeLessThanOrEqual(300);
      // One shard of the fewest items the probe takes that still does not fit is refused, saying so.
      const tiny = await startFakeOpenAI({ reply: () => '[]', maxModelLen: 40 });
      const refused = await rumedbench(
        ...[
          'contamination',
          '--base-url',
          tiny.url,
          '--model',
          'fake',
          '--data',
          DATA,
          '--tasks',
          'RuMedDaNet',
        ],
      );
      await tiny.close();
      expect([refused.code, refused.stderr]).toEqual([
        1,
        expect.stringContaining("over the model's context of 40"),
      ]);
    } finally {
      await small.close();
    }
  });

  it('is reproducible under its seed, and prints a table', async () => {
    const a = JSON.parse((await probe(clean.url, '--seed', '7')).stdout) as Probed;
    const b = JSON.parse((await probe(clean.url, '--seed', '7')).stdout) as Probed;
    expect(a).toEqual(b);
    const text = await rumedbench(
      'contamination',
      '--base-url',
      clean.url,
      '--model',
      'fake',
      '--data',
      DATA,
      '--tasks',
      'RuMedDaNet',
    );
    expect([text.code, text.stdout]).toEqual([
      0,
      expect.stringMatching(/RuMedDaNet\s+order\s+60\s+15 × 4, 25 orders/),
    ]);
    const bad = await rumedbench(
      'contamination',
      '--base-url',
      clean.url,
      '--model',
      'fake',
      '--probes',
      'order,bogus',
    );
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--probes: bogus not available')]);
  });

  it('options: flags a model that writes the hidden wrong option of RuMedTest items it has seen', async () => {
    const task = getTask('RuMedTest');
    // RuMedTest's only split, private_test, has no answers: the probe hides an option the model does not choose.
    const records = await loadSplit(task, 'private_test', { dataDir: DATA });
    const byQuestion = new Map(records.map((r) => [String(r.raw.question), r.raw]));
    const remembering = await startFakeOpenAI({
      reply: (body) => {
        const last = body.messages.at(-1)?.content ?? '';
        if (!last.includes('[MASK]')) return 'Ответ: 1';
        const question = /Вопрос: (.*)/.exec(last)?.[1] ?? '';
        const hidden = /\(вариант (\d)\)/.exec(last)?.[1] ?? '';
        return String(byQuestion.get(question)?.[hidden] ?? 'не помню');
      },
    });
    const guessing = await startFakeOpenAI({
      reply: (body) => ((body.messages.at(-1)?.content ?? '').includes('[MASK]') ? 'Аспирин' : 'Ответ: 2'),
    });
    try {
      const run = async (url: string) =>
        (
          JSON.parse(
            (
              await rumedbenchOk(
                ...['contamination', '--base-url', url, '--model', 'fake', '--data', DATA],
                ...['--tasks', 'RuMedTest,RuMedDaNet', '--split', 'private_test', '--probes', 'options'],
                ...['--items', '40', '--json'],
              )
            ).stdout,
          ) as {
            tasks: Record<
              string,
              {
                options: {
                  n: number;
                  exact_match: number;
                  chance: number;
                  p_value: number;
                  verdict: string;
                  answer_from: string;
                  skipped?: string;
                };
              }
            >;
          }
        ).tasks;
      const seen = await run(remembering.url);
      expect(seen.RuMedTest?.options).toMatchObject({
        n: 40,
        exact_match: 1,
        verdict: 'contaminated',
        answer_from: 'model',
      });
      expect(seen.RuMedTest?.options.chance).toBeLessThan(0.2);
      expect(seen.RuMedTest?.options.p_value).toBeLessThan(0.01);
      // RuMedDaNet has no options to hide: said, not probed.
      expect(seen.RuMedDaNet?.options.skipped).toContain('not a multiple-choice task');
      const unseen = await run(guessing.url);
      expect(unseen.RuMedTest?.options.verdict).toBe('no evidence');
      expect(unseen.RuMedTest?.options.p_value).toBeGreaterThan(0.05);
      // The hidden option is never the one the model chose (its answer "1"), and is shown as [MASK].
      const asked = remembering.requests
        .map((r) => r.body.messages.at(-1)?.content ?? '')
        .filter((t) => t.includes('[MASK]'));
      expect(asked).toHaveLength(40);
      for (const text of asked) {
        const hidden = /\(вариант (\d)\)/.exec(text)?.[1];
        expect(hidden).not.toBe('1');
        expect(text).toContain(`${hidden}. [MASK]`);
      }
    } finally {
      await remembering.close();
      await guessing.close();
    }
  });

  it('resumes probes killed with SIGKILL, asking again only what was in flight; the result is the same', async () => {
    const start = () =>
      startFakeOpenAI({
        reply: (body) => `продолжение ${(body.messages.at(-1)?.content ?? '').length % 7}`,
        behaviour: () => ({ kind: 'ok', delayMs: 150 }),
      });
    const [whole, killed] = [await start(), await start()];
    const distinct = (s: FakeOpenAI) => new Set(s.requests.map((r) => JSON.stringify(r.body.messages))).size;
    try {
      const args = (url: string) => [
        ...['contamination', '--base-url', url, '--model', 'fake', '--data', DATA, '--tasks', 'RuMedDaNet'],
        ...['--probes', 'guided', '--items', '60', '--concurrency', '2'],
      ];
      // One uninterrupted run, for its requests and its numbers.
      const fresh = await rumedbenchOk(
        ...args(whole.url),
        '--out',
        join(mkdtempSync(join(tmpdir(), 'rumedbench-contamination-')), 'whole'),
        '--json',
      );
      const all = distinct(whole);
      expect(all).toBeGreaterThanOrEqual(8);
      const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-contamination-')), 'run');
      const child = spawn(process.execPath, [CLI, ...args(killed.url), '--out', out], {
        env: CLI_ENV,
        stdio: 'ignore',
      });
      const until = Date.now() + 30_000;
      while (killed.requests.length < all / 2 && Date.now() < until)
        await new Promise((r) => setTimeout(r, 10));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect(killed.requests.length).toBeLessThan(all);
      const refused = await rumedbench(...args(killed.url), '--out', out);
      expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('--resume continues them')]);
      const resumed = await rumedbenchOk(...args(killed.url), '--out', out, '--resume', '--json');
      // Every distinct request asked; again only those in flight at the kill (two at most).
      expect(distinct(killed)).toBe(all);
      expect(killed.requests.length - whole.requests.length).toBeLessThanOrEqual(2);
      const result = (t: string) => (JSON.parse(t) as { tasks: unknown }).tasks;
      expect(result(resumed.stdout)).toEqual(result(fresh.stdout));
    } finally {
      await whole.close();
      await killed.close();
    }
  });

  it('guided: flags a model that completes items verbatim only when told where they come from', async () => {
    const task = getTask('RuMedDaNet');
    const records = await loadSplit(task, 'test', { dataDir: DATA });
    const rest = new Map(
      records.map((r) => Object.values(splitItem(probeText(task, r))) as [string, string]),
    );
    const unrelated = 'Пациенту рекомендовано обратиться к врачу для дальнейшего обследования.';
    const recalling = await startFakeOpenAI({
      reply: (body) => {
        const last = body.messages.at(-1)?.content ?? '';
        const first = last.slice(last.indexOf('\n\n') + 2);
        return last.includes('RuMedBench') ? (rest.get(first) ?? unrelated) : unrelated;
      },
    });
    const plain = await startFakeOpenAI({ reply: () => unrelated });
    try {
      const run = async (url: string) =>
        (
          JSON.parse(
            (
              await rumedbenchOk(
                ...[
                  'contamination',
                  '--base-url',
                  url,
                  '--model',
                  'fake',
                  '--data',
                  DATA,
                  '--tasks',
                  'RuMedDaNet',
                ],
                ...['--probes', 'guided', '--items', '30', '--json'],
              )
            ).stdout,
          ) as {
            tasks: Record<
              string,
              {
                guided: {
                  n: number;
                  p_value: number;
                  verdict: string;
                  rouge_guided: number;
                  near_verbatim_guided: number;
                };
              }
            >;
          }
        ).tasks.RuMedDaNet?.guided;
      const seen = await run(recalling.url);
      // (The fixture's items open alike, so a few first halves recall another item's rest: not quite 1.)
      expect([seen?.n, seen?.verdict]).toEqual([30, 'contaminated']);
      expect(seen?.rouge_guided).toBeGreaterThan(0.75);
      expect(seen?.near_verbatim_guided).toBeGreaterThan(0.75);
      expect(seen?.p_value).toBeLessThan(0.01);
      const unseen = await run(plain.url);
      expect(unseen?.verdict).toBe('no evidence');
      expect(unseen?.p_value).toBeGreaterThan(0.05);
    } finally {
      await recalling.close();
      await plain.close();
    }
  });
});
