/**
 * `rumedbench llm --mode loglik` against a loopback server that speaks vLLM's protocol (/v1/completions with echo
 * and logprobs over token ids, /tokenize): every candidate's score is the sum the model gives its tokens, the answer
 * is the best one, RuMedNER stays generative, servers without prompt log-probabilities are refused (or scored from
 * their top-k, unscored where a candidate is not listed), and a killed run resumes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_ENV, rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type FakeOpenAI, fakeLogprob, fakeTokenize, startFakeOpenAI } from '../helpers/fake-openai.js';
import { FIXTURE_CODES, FIXTURE_SYMPTOMS, fixtureDataDir } from '../helpers/fixture-data.js';

/** The suite's data: a small folder the tests write (test/helpers/fixture-data.ts), not ../shared. */
const DATA = fixtureDataDir();

const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
const start = async (o: Omit<Parameters<typeof startFakeOpenAI>[0], 'reply'> = {}) => {
  const s = await startFakeOpenAI({ reply: () => '[]', ...o });
  servers.push(s);
  return s;
};
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-loglik-'));
const samplesOf = (dir: string) =>
  readFileSync(join(dir, 'samples.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as {
          task: string;
          id: string;
          mode: string;
          prompt?: string;
          answer: unknown;
          candidates?: { label: string; text: string; logprob: number | null; tokens: number }[];
          status: string;
          gold?: unknown;
        },
    );

/** What the fake model gives a continuation: its tokens' log-probabilities, split by count, summed. */
function expectedScore(prompt: string, continuation: string): number {
  const whole = [1, ...fakeTokenize(prompt + continuation)];
  const n = 1 + fakeTokenize(prompt).length;
  let sum = 0;
  for (let i = n; i < whole.length; i++) sum += fakeLogprob(whole[i - 1] as number, whole[i] as number);
  return sum;
}

const llm = (url: string, out: string, ...more: string[]) => [
  'llm',
  '--model',
  'base-1',
  '--base-url',
  url,
  '--mode',
  'loglik',
  '--out',
  out,
  '--bootstrap',
  '0',
  '--no-progress',
  '--data',
  DATA,
  ...more,
];

describe('llm --mode loglik (on fixture data the test writes)', () => {
  it('scores every candidate of every task by its summed log-probability; RuMedNER stays generative', async () => {
    const server = await start();
    const out = join(tmp(), 'run');
    const { stdout } = await rumedbenchOk(...llm(server.url, out, '--limit', '3', '--json'));
    const summary = JSON.parse(stdout) as {
      llm: { mode: string; tasks: Record<string, { mode: string; acc?: number; acc_norm_char?: number }> };
    };
    expect(summary.llm.mode).toBe('loglik');
    expect(Object.fromEntries(Object.entries(summary.llm.tasks).map(([t, v]) => [t, v.mode]))).toEqual({
      RuMedTop3: 'loglik',
      RuMedSymptomRec: 'loglik',
      RuMedDaNet: 'loglik',
      RuMedNLI: 'loglik',
      RuMedNER: 'generate',
    });
    const samples = samplesOf(out);
    for (const s of samples.filter((x) => x.mode === 'loglik')) {
      const c = s.candidates ?? [];
      for (const cand of c) expect(cand.logprob).toBeCloseTo(expectedScore(s.prompt as string, cand.text), 9);
      const best = [...c].sort((a, b) => (b.logprob as number) - (a.logprob as number));
      if (s.task === 'RuMedTop3' || s.task === 'RuMedSymptomRec') {
        expect(s.answer).toEqual(best.slice(0, 3).map((x) => x.label));
      } else expect(s.answer).toBe(best[0]?.label);
    }
    const counts = Object.fromEntries(
      ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI'].map((t) => [
        t,
        samples.find((s) => s.task === t)?.candidates?.length,
      ]),
    );
    expect(counts).toEqual({
      RuMedTop3: FIXTURE_CODES.length,
      RuMedSymptomRec: FIXTURE_SYMPTOMS.length,
      RuMedDaNet: 2,
      RuMedNLI: 3,
    });
    // The prompt ends in "Ответ:"; the candidates carry the space: " да", " 1", " M54".
    const danet = samples.find((s) => s.task === 'RuMedDaNet');
    expect([danet?.prompt?.endsWith('\nОтвет:'), danet?.candidates?.map((c) => c.text)]).toEqual([
      true,
      [' да', ' нет'],
    ]);
    const nli = samples.find((s) => s.task === 'RuMedNLI');
    expect(nli?.candidates?.map((c) => [c.label, c.text])).toEqual([
      ['entailment', ' 1'],
      ['contradiction', ' 2'],
      ['neutral', ' 3'],
    ]);
    const ner = samples.find((s) => s.task === 'RuMedNER');
    expect([ner?.mode, ner?.candidates]).toEqual(['generate', undefined]);
    // Every log-likelihood reply's token counts are kept (the ledger said "0 prompt + 0 completion" before): the
    // server counted each prompt's tokens and one generated token per candidate.
    const entries = readFileSync(join(out, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { logprobs?: unknown[]; positions?: number; usage?: Record<string, number> },
      );
    const loglik = entries.filter((e) => e.logprobs);
    expect(loglik.length).toBe(12);
    // The server read each item's context once beside its candidates' prompts: one more generated token.
    for (const e of loglik)
      expect(e.usage).toEqual({ promptTokens: e.positions, completionTokens: (e.logprobs?.length ?? 0) + 1 });
    const usage = (summary as unknown as { llm: { usage: { prompt_tokens: number } } }).llm.usage;
    expect(usage.prompt_tokens).toBeGreaterThan(loglik.reduce((n, e) => n + (e.positions ?? 0), 0));
    // One request per item, no /tokenize: the context and each context + candidate, as texts, with echo (the
    // server reads texts as its /tokenize ids, which the capability check saw); only the check's /tokenize calls.
    const batch = server.completions.find(
      (c) => Array.isArray(c.prompt) && (c.prompt as string[]).length === FIXTURE_CODES.length + 1,
    );
    expect([
      batch?.echo,
      batch?.logprobs,
      batch?.max_tokens,
      typeof (batch?.prompt as string[] | undefined)?.[0],
    ]).toEqual([true, 1, 1, 'string']);
    expect(server.tokenizeCalls()).toBeLessThanOrEqual(4);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect([manifest.mode, manifest.loglik_method, manifest.label_words]).toEqual([
      'loglik',
      'prompt-logprobs',
      false,
    ]);
    // The report lists each wrong answer with its best candidates and the gold's score.
    await rumedbenchOk('report', out, '--out', join(out, 'report.html'));
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('Best candidates by log-probability (and the gold)');
    expect(html).toMatch(/<td>нет \(gold\)<\/td>|<td>да \(gold\)<\/td>/);
    // --label-words scores RuMedNLI's label words.
    const words = join(tmp(), 'words');
    await rumedbenchOk(...llm(server.url, words, '--limit', '1', '--tasks', 'RuMedNLI', '--label-words'));
    expect(samplesOf(words)[0]?.candidates?.map((c) => c.text)).toEqual([
      ' entailment',
      ' contradiction',
      ' neutral',
    ]);
  });

  it('scores the same with one request per item as with /tokenize per candidate, where the server takes no list of texts (#47)', async () => {
    const texts = await start();
    const ids = await start({ textLists: false });
    const [a, b] = [join(tmp(), 'texts'), join(tmp(), 'ids')];
    const args = ['--limit', '4', '--tasks', 'RuMedDaNet,RuMedNLI,RuMedTop3'];
    await rumedbenchOk(...llm(texts.url, a, ...args));
    await rumedbenchOk(...llm(ids.url, b, ...args));
    const scores = (dir: string) => samplesOf(dir).map((s) => [s.id, s.answer, s.candidates]);
    expect(scores(a)).toEqual(scores(b));
    // Without lists of texts: every item's candidates as token ids, from /tokenize (the context once, each candidate).
    const items = 12;
    expect(ids.completions.filter((c) => Array.isArray(c.prompt) && Array.isArray(c.prompt[0])).length).toBe(
      items + 2,
    );
    expect(
      texts.completions.filter((c) => Array.isArray(c.prompt) && typeof c.prompt[0] === 'string').length,
    ).toBe(items + 1);
    expect(ids.tokenizeCalls() - texts.tokenizeCalls()).toBeGreaterThanOrEqual(items * 3);
  });

  it('gives each log-likelihood task its calibration, equal to a direct computation from the samples (#17)', async () => {
    const server = await start();
    const out = join(tmp(), 'run');
    await rumedbenchOk(...llm(server.url, out, '--limit', '40', '--tasks', 'RuMedDaNet,RuMedTop3'));
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      llm: {
        tasks: Record<
          string,
          { calibration: { n: number; ece: number; brier: number; nll: number; left_out: number } }
        >;
      };
    };
    for (const task of ['RuMedDaNet', 'RuMedTop3']) {
      // By hand: probabilities from the recorded log-probabilities, 15 bins of width 1/15 over the top probability.
      const items = samplesOf(out).filter((x) => x.task === task);
      const rows = items.map((x) => {
        const lp = (x.candidates ?? []).map((c) => c.logprob as number);
        const m = Math.max(...lp);
        const e = lp.map((v) => Math.exp(v - m));
        const z = e.reduce((a, b) => a + b, 0);
        const p = e.map((v) => v / z);
        const gold = (x.candidates ?? []).findIndex((c) => c.label === x.gold);
        const top = p.indexOf(Math.max(...p));
        return { p, gold, conf: p[top] as number, right: top === gold };
      });
      const bins = new Map<number, typeof rows>();
      for (const r of rows) {
        const b = Math.min(14, Math.max(0, Math.ceil(r.conf * 15) - 1));
        bins.set(b, [...(bins.get(b) ?? []), r]);
      }
      let ece = 0;
      for (const b of bins.values())
        ece +=
          (b.length / rows.length) *
          Math.abs(b.filter((r) => r.right).length / b.length - b.reduce((a, r) => a + r.conf, 0) / b.length);
      const brier =
        rows.reduce((a, r) => a + r.p.reduce((q, v, k) => q + (v - (k === r.gold ? 1 : 0)) ** 2, 0), 0) /
        rows.length;
      const nll = rows.reduce((a, r) => a - Math.log(r.p[r.gold] as number), 0) / rows.length;
      const c = summary.llm.tasks[task]?.calibration;
      expect([task, c?.n, c?.left_out]).toEqual([task, 40, 0]);
      expect(c?.ece).toBeCloseTo(ece, 10);
      expect(c?.brier).toBeCloseTo(brier, 10);
      expect(c?.nll).toBeCloseTo(nll, 8);
      // The reliability diagram's bins hold every item, each bin's accuracy and confidence those of its items.
      type Bin = { lo: number; hi: number; n: number; accuracy: number; confidence: number };
      const drawn = (c as unknown as { bins: Bin[] }).bins;
      expect(drawn.reduce((n, b) => n + b.n, 0)).toBe(40);
      for (const b of drawn) {
        const inBin = rows.filter((r) => r.conf > b.lo && r.conf <= b.hi);
        expect([b.n, b.accuracy]).toEqual([inBin.length, inBin.filter((r) => r.right).length / inBin.length]);
        expect(b.confidence).toBeCloseTo(inBin.reduce((a, r) => a + r.conf, 0) / inBin.length, 10);
      }
    }
    await rumedbenchOk('report', out, '--out', join(out, 'report.html'));
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('id="calibration"');
    // The reliability diagram and the accuracy of the surest answers, drawn.
    expect(html).toContain('Reliability: accuracy against confidence');
    expect(html).toContain('Accuracy of the surest answers');
    expect(html).toContain('bins_marks');
    // compare of two log-likelihood runs: the paired difference in ECE per task, equal to their summaries' ECEs.
    const other = join(tmp(), 'other');
    const memorising = await start({
      memorized: samplesOf(out)
        .map((x) => x.prompt ?? '')
        .join('\n'),
    });
    await rumedbenchOk(...llm(memorising.url, other, '--limit', '40', '--tasks', 'RuMedDaNet,RuMedTop3'));
    const compared = JSON.parse(
      (await rumedbenchOk('compare', out, other, '--json', '--bootstrap', '200', '--file-gold')).stdout,
    ) as {
      calibration: Record<
        string,
        { n: number; a: number; b: number; delta: number; ci: [number, number]; p: number }
      >;
    };
    const eceOf = (dir: string, task: string) =>
      (
        JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as {
          llm: { tasks: Record<string, { calibration: { ece: number } }> };
        }
      ).llm.tasks[task]?.calibration.ece as number;
    for (const task of ['RuMedDaNet', 'RuMedTop3']) {
      const d = compared.calibration[task];
      expect(d?.n).toBe(40);
      expect(d?.a).toBeCloseTo(eceOf(out, task), 12);
      expect(d?.b).toBeCloseTo(eceOf(other, task), 12);
      expect(d?.delta).toBeCloseTo(eceOf(other, task) - eceOf(out, task), 12);
      expect(d?.p).toBeGreaterThan(0);
    }
    const printed = (await rumedbenchOk('compare', out, other, '--bootstrap', '200', '--file-gold')).stdout;
    expect(printed).toMatch(/RuMedDaNet\s+40\s+\d\.\d{3}\s+\d\.\d{3}/);
  });

  it('refuses a server that returns no prompt log-probabilities, naming the limitation', async () => {
    const server = await start({ promptLogprobs: false });
    const r = await rumedbench(...llm(server.url, join(tmp(), 'run'), '--limit', '1'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'cannot score by log-likelihood: a three-token prompt came back without three log-probabilities',
    );
    expect(r.stderr).toContain('llama.cpp server, Ollama and LM Studio do not today');
    const noTokenizer = await start({ tokenize: false });
    const t = await rumedbench(...llm(noTokenizer.url, join(tmp(), 'run'), '--limit', '1'));
    expect(t.stderr).toContain('cannot score by log-likelihood: no usable /tokenize endpoint');
  });

  it('falls back to the top-k of one generated token, leaving unlisted candidates unscored', async () => {
    // The server lists " да" among its top tokens, never " нет".
    const server = await start({
      promptLogprobs: false,
      topLogprobs: () => ({ ' да': -0.7, ' потому': -1.5 }),
    });
    const out = join(tmp(), 'run');
    await rumedbenchOk(...llm(server.url, out, '--limit', '4', '--tasks', 'RuMedDaNet'));
    const samples = samplesOf(out);
    expect(samples.map((s) => [s.answer, s.candidates?.map((c) => c.logprob)])).toEqual(
      samples.map(() => ['да', [-0.7, null]]),
    );
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.loglik_method).toBe('top-k');
  });

  it('refuses, before sending an item, tasks whose candidates a top-k list cannot hold, and fails a run that scores nothing (#18)', async () => {
    const server = await start({
      promptLogprobs: false,
      topLogprobs: () => ({ ' потому': -0.3, ' что': -1.5 }),
    });
    const r = await rumedbench(
      ...llm(
        server.url,
        join(tmp(), 'run'),
        '--limit',
        '2',
        '--tasks',
        'RuMedTop3,RuMedSymptomRec,RuMedDaNet',
      ),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'cannot score these tasks by log-likelihood on this server; nothing was sent:',
    );
    expect(r.stderr).toContain(
      `RuMedTop3: the server gives no prompt log-probabilities, only the top 20 of a generated token: ${FIXTURE_CODES.length} candidates, but the server lists only the 20 most likely next tokens\n`,
    );
    expect(r.stderr).toMatch(
      new RegExp(
        `RuMedSymptomRec: .*${FIXTURE_SYMPTOMS.length} candidates.*; candidates of several tokens \\(" `,
      ),
    );
    // Only the capability probe's requests: no item was asked.
    expect(server.completions.filter((c) => c.prompt !== 'Да нет да' && !Array.isArray(c.prompt))).toEqual(
      [],
    );

    // RuMedDaNet's two candidates fit, but this server never lists them: nothing scored is a failure, not a 0.
    const none = await rumedbench(
      ...llm(server.url, join(tmp(), 'run'), '--limit', '4', '--tasks', 'RuMedDaNet'),
    );
    expect([none.code, none.stderr]).toEqual([
      1,
      expect.stringContaining('no item could be scored by log-likelihood (no candidate could be scored)'),
    ]);
  });

  it('resumes a run killed with SIGKILL without asking a finished item again, and ends as an uninterrupted run', async () => {
    const server = await start({ completionsDelayMs: 30 });
    const args = llm(server.url, '', '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '12', '--concurrency', '2');
    const out = join(tmp(), 'run');
    args[args.indexOf('--out') + 1] = out;
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { env: CLI_ENV, stdio: 'ignore' });
    // An item's request: its context and candidates' prompts as texts (the capability probes are one prompt each).
    const scored = (c: { prompt: unknown }) =>
      Array.isArray(c.prompt) && c.prompt.length >= 2 && typeof c.prompt[0] === 'string';
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (server.completions.filter(scored).length >= 8) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 10);
    });
    await new Promise((r) => child.once('exit', r));
    const journaled = readFileSync(join(out, 'journal.jsonl'), 'utf8').trim().split('\n').length;
    const before = server.completions.filter(scored).length;
    await rumedbenchOk(...args, '--resume');
    const resumedItems = server.completions.filter(scored).length - before;
    expect(resumedItems).toBe(24 - journaled);
    const fresh = join(tmp(), 'fresh');
    await rumedbenchOk(...args.map((a) => (a === out ? fresh : a)));
    const answers = (dir: string) => samplesOf(dir).map((s) => [s.task, s.id, s.answer]);
    expect(answers(out)).toEqual(answers(fresh));
  });
});
