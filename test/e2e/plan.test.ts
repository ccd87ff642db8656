/**
 * Evaluation plans end to end, on fixture data and loopback OpenAI-compatible servers: a plan of 2 models × 2 shot
 * settings whose cells are byte for byte the single `llm` commands; invalid plans named by line and column; a plan
 * run killed with SIGKILL and finished with --resume, re-asking at most what was in flight; `plan check`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { plannedMde } from '../../src/metrics/ranking.js';
import { CLI_ENV, rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A model that answers in the tasks' format, its choice a function of the model and the whole prompt. */
const reply = (body: ChatRequestBody): string => {
  const text = body.messages.map((m) => m.content).join('\n');
  const h = createHash('sha256').update(`${body.model}\n${text}`).digest()[0] as number;
  const last = body.messages.at(-1)?.content ?? '';
  if (/«да» или «нет»/.test(last)) return `Ответ: ${h % 2 ? 'да' : 'нет'}`;
  return `Ответ: ${['entailment', 'contradiction', 'neutral'][h % 3]}`;
};

async function serve(options: Partial<Parameters<typeof startFakeOpenAI>[0]> = {}): Promise<FakeOpenAI> {
  const s = await startFakeOpenAI({ reply, ...options });
  servers.push(s);
  return s;
}

function writePlan(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-plan-'));
  const file = join(dir, 'plan.yaml');
  writeFileSync(file, text);
  return file;
}

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-plan-out-'));
const read = (...p: string[]) => readFileSync(join(...p), 'utf8');

describe('plan (on fixture data the test writes)', () => {
  it('runs 2 models × 2 shot settings into run folders that equal the single llm commands', async () => {
    const a = await serve();
    const b = await serve();
    const file = writePlan(
      [
        'name: two-by-two',
        'split: test',
        'tasks: [RuMedDaNet, RuMedNLI]',
        `data: ${DATA}`,
        'defaults: {temperature: 0, max_tokens: 64, concurrency: 2, limit: 6, bootstrap: 0}',
        'models:',
        `  - {name: model-a, provider: openai, base_url: "${a.url}", model: fake-a}`,
        `  - {name: model-b, provider: openai, base_url: "${b.url}", model: fake-b, seed: 3}`,
        'matrix: {shots: [0, 2]}',
        '',
      ].join('\n'),
    );
    const out = tmp();
    const r = await rumedbenchOk('plan', 'run', file, '--out', out);
    expect(r.stdout).toMatch(/model-a\/shots=0\s+done/);
    const summary = JSON.parse(read(out, 'summary.json')) as {
      kind: string;
      cells: { cell: string; status: string; overall: number; tasks: Record<string, { score: number }> }[];
    };
    expect(summary.kind).toBe('plan');
    expect(summary.cells.map((c) => [c.cell, c.status])).toEqual([
      ['model-a/shots=0', 'done'],
      ['model-a/shots=2', 'done'],
      ['model-b/shots=0', 'done'],
      ['model-b/shots=2', 'done'],
    ]);
    expect(existsSync(join(out, 'report.html'))).toBe(true);
    // Each cell is the command one would type: the same predictions, byte for byte, and the same scores.
    const single = async (url: string, model: string, shots: string, seed: string) => {
      const dir = tmp();
      await rumedbenchOk(
        ...['llm', '--provider', 'openai', '--base-url', url, '--model', model, '--data', DATA],
        ...['--tasks', 'RuMedDaNet,RuMedNLI', '--split', 'test', '--temperature', '0', '--max-tokens', '64'],
        ...['--concurrency', '2', '--limit', '6', '--bootstrap', '0', '--shots', shots, '--seed', seed],
        ...['--out', dir],
      );
      return dir;
    };
    const expected: [string, string, string, string, string][] = [
      ['model-a/shots=0', a.url, 'fake-a', '0', '0'],
      ['model-a/shots=2', a.url, 'fake-a', '2', '0'],
      ['model-b/shots=0', b.url, 'fake-b', '0', '3'],
      ['model-b/shots=2', b.url, 'fake-b', '2', '3'],
    ];
    for (const [cell, url, model, shots, seed] of expected) {
      const dir = await single(url, model, shots, seed);
      const files = (d: string) => readdirSync(join(d, 'predictions')).sort();
      expect([cell, files(join(out, cell))]).toEqual([cell, files(dir)]);
      for (const f of files(dir)) expect(read(out, cell, 'predictions', f)).toBe(read(dir, 'predictions', f));
      const alone = JSON.parse(read(dir, 'summary.json')) as { overall: number };
      expect(summary.cells.find((c) => c.cell === cell)?.overall).toBe(alone.overall);
    }
    // The shots changed the prompts, so the cells differ.
    expect(read(out, 'model-a/shots=0', 'samples.jsonl')).not.toBe(
      read(out, 'model-a/shots=2', 'samples.jsonl'),
    );
    // A second run into the same folder is refused; --resume finds every cell done and asks nothing.
    const again = await rumedbench('plan', 'run', file, '--out', out);
    expect([again.code, again.stderr]).toEqual([2, expect.stringContaining('--resume finishes it')]);
    const before = a.requests.length + b.requests.length;
    await rumedbenchOk('plan', 'run', file, '--out', out, '--resume');
    expect(a.requests.length + b.requests.length).toBe(before);
  });

  it('refuses an invalid plan, naming each problem with its line and column', async () => {
    const file = writePlan(
      [
        'name: broken', //                                        line 1
        'tasks: [RuMedDaNet, RuMedQA]', //                         line 2
        'defaults: {max_tokens: many, temprature: 0}', //          line 3
        'colour: blue', //                                         line 4
        'models:', //                                              line 5
        '  - {name: a, provider: openai, base_url: "http://127.0.0.1:9/v1", model: m, api_key: sk-123}',
        '  - {name: a, provider: vllm, model: m}', //              line 7
        '  - {name: b, provider: encoder, model: ./enc, shots: 2}', // line 8
        'matrix: {mode: [generate, guess]}', //                   line 9
        '',
      ].join('\n'),
    );
    const r = await rumedbench('plan', 'check', file);
    expect(r.code).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(`error: ${file}: 9 problems:`);
    expect(lines.slice(1).map((l) => l.trim())).toEqual([
      `${file}:4:1: unknown key "colour"; a plan takes name, split, tasks, tasks_dir, data, defaults, models, matrix, max_in_flight, retry_rounds, retry_delay_s`,
      `${file}:2:21: unknown task "RuMedQA"; the tasks are RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI, RuMedNER, RuMedTest`,
      `${file}:3:24: max_tokens: Invalid input: expected number, received string`,
      `${file}:3:30: unknown setting "temprature" in defaults`,
      `${file}:6:78: "api_key": a secret in the plan file; put it in an environment variable and name that with api_key_env`,
      `${file}:7:12: duplicate model name "a" (first at ${file}:6:12)`,
      `${file}:7:25: provider: one of openai, anthropic, llama, encoder, got "vllm"`,
      `${file}:8:48: "shots" is not a setting of provider encoder`,
      `${file}:9:27: mode: Invalid option: expected one of "generate"|"loglik"`,
    ]);
    // JSON plans are read by the same parser, with the same positions.
    const json = writePlan(
      '{"name": "j", "models": [{"name": "x", "provider": "openai", "model": "m", "shots": -1}]}',
    );
    const j = await rumedbench('plan', 'check', json);
    expect(j.stderr.trim()).toBe(`error: ${json}:1:85: shots: Too small: expected number to be >=0`);
  });

  it('refuses a plan file over 1 MiB before parsing it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-bigplan-')), 'plan.yaml');
    writeFileSync(file, `name: big\nnote: ${'x'.repeat(2 << 20)}\n`);
    const r = await rumedbench('plan', 'check', file);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('a plan file is at most 1048576 bytes')]);
  });

  it('an --out it cannot write to is one line and exit 2, not a stack trace (plan run, llm)', async () => {
    const s = await serve();
    const file = writePlan(
      [
        'name: nowhere',
        'split: test',
        'tasks: [RuMedDaNet]',
        `data: ${DATA}`,
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`,
        '',
      ].join('\n'),
    );
    // A file where the folder should go: the same refusal as a read-only folder, whoever runs the test (root too).
    const blocker = join(tmp(), 'a-file');
    writeFileSync(blocker, 'x\n');
    const out = join(blocker, 'runs');
    const plan = await rumedbench('plan', 'run', file, '--out', out);
    expect([plan.code, plan.stderr.trim().split('\n').at(-1)]).toEqual([
      2,
      `error: plan run: cannot write into ${out} (a part of the path is a file, not a folder: ${blocker}); choose another --out, or make it writable`,
    ]);
    expect(plan.stderr).not.toMatch(/internal error|\n\s+at /);
    const llm = await rumedbench(
      'llm',
      '--base-url',
      s.url,
      '--model',
      'fake-m',
      '--data',
      DATA,
      '--out',
      out,
    );
    expect([llm.code, llm.stderr.trim().split('\n').at(-1)]).toEqual([
      2,
      `error: llm: cannot write into ${out} (a part of the path is a file, not a folder: ${blocker}); choose another --out, or make it writable`,
    ]);
    expect(s.requests).toHaveLength(0);
  });

  it('checks a plan without sending anything: cells, requests, prompt tokens and cost', async () => {
    const s = await serve();
    const file = writePlan(
      [
        'name: priced',
        'tasks: RuMedDaNet',
        `data: ${DATA}`,
        'defaults: {limit: 5, max_tokens: 100, prices: {prompt: 1, completion: 2}}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake}`,
        '  - {name: enc, provider: encoder, model: ./rubert}',
        'matrix: {shots: [0, 1], mode: [generate, loglik]}',
      ].join('\n'),
    );
    const r = await rumedbenchOk('plan', 'check', file, '--json');
    const checked = JSON.parse(r.stdout) as {
      cells: {
        cell: string;
        requests: number | null;
        cost_estimate: { min: number; max: number } | null;
        spec: { kind: string; method?: string; encoder?: { model: string } };
        command: string;
      }[];
      cost_estimate: { min: number; max: number; cells: number } | null;
      notes: string[];
    };
    expect(checked.cells.map((c) => [c.cell, c.requests])).toEqual([
      ['m/shots=0,mode=generate', 5],
      ['m/shots=0,mode=loglik', 5],
      ['m/shots=1,mode=generate', 5],
      ['m/shots=1,mode=loglik', 5],
      ['enc/default', null],
    ]);
    const gen = checked.cells[0];
    expect(gen?.cost_estimate?.max).toBeCloseTo((gen?.cost_estimate?.min ?? 0) + (5 * 100 * 2) / 1e6, 12);
    // The plan's cost: the priced cells' bounds summed (the encoder cell has no price).
    const sum = (k: 'min' | 'max') => checked.cells.reduce((n, c) => n + (c.cost_estimate?.[k] ?? 0), 0);
    expect(checked.cost_estimate).toEqual({ min: sum('min'), max: sum('max'), cells: 4 });
    expect(checked.notes).toEqual([
      'enc: "shots" is not a encoder setting; its cells do not vary by it',
      'enc: "mode" is not a encoder setting; its cells do not vary by it',
      'enc: defaults not taken by encoder: limit, max_tokens, prices',
    ]);
    expect(checked.cells[4]?.spec).toMatchObject({ kind: 'baseline', method: 'encoder' });
    expect(checked.cells[4]?.command).toMatch(
      /^rumedbench baseline encoder --tasks RuMedDaNet --data \S+ --model \//,
    );
    expect(s.requests).toHaveLength(0);
  });

  it('plan check says which tasks a cell’s settings leave out (shots on RuMedNLI without its train file)', async () => {
    const s = await serve();
    const file = writePlan(
      [
        'name: dropped',
        'tasks: [RuMedDaNet, RuMedNLI]',
        `data: ${DATA}`,
        'defaults: {limit: 5}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake}`,
        'matrix: {shots: [0, 2]}',
      ].join('\n'),
    );
    const r = await rumedbenchOk('plan', 'check', file);
    expect(r.stdout).toMatch(
      /m\/shots=2 +openai +5 .*RuMedNLI left out: 2-shot prompts need .*RuMedNLI\/train_v1\.jsonl, which is missing/,
    );
    expect(r.stderr).toMatch(/m\/shots=2: RuMedNLI is left out \(2-shot prompts need/);
    const j = JSON.parse((await rumedbenchOk('plan', 'check', file, '--json')).stdout) as {
      cells: { cell: string; requests: number; skipped?: Record<string, string> }[];
    };
    expect(j.cells.map((c) => [c.cell, c.requests, Object.keys(c.skipped ?? {})])).toEqual([
      ['m/shots=0', 10, []],
      ['m/shots=2', 5, ['RuMedNLI']],
    ]);
  });

  it('plan check says, before anything is spent, how far apart two systems must be for its items to tell', async () => {
    const s = await serve();
    const file = writePlan(
      [
        'name: small',
        'tasks: [RuMedDaNet, RuMedNLI]',
        `data: ${DATA}`,
        'defaults: {limit: 25}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake}`,
      ].join('\n'),
    );
    const r = await rumedbenchOk('plan', 'check', file);
    // 25 items: (1.96 + 0.84) · 100 · sqrt(0.2 / 25) = 25.1 points, sqrt(0.4 / 25) → 35.4.
    expect(r.stdout).toMatch(/RuMedDaNet +25 +25\.1 +35\.4/);
    expect(r.stdout).toMatch(/RuMedNLI +25 +25\.1 +35\.4 +items share clusters/);
    const j = JSON.parse((await rumedbenchOk('plan', 'check', file, '--json')).stdout) as {
      cells: { mde: Record<string, { n: number; at_20: number; at_40: number }> }[];
    };
    expect(j.cells[0]?.mde.RuMedDaNet?.n).toBe(25);
    expect(j.cells[0]?.mde.RuMedDaNet?.at_20).toBeCloseTo(plannedMde(25, 0.2), 12);
    expect(s.requests).toHaveLength(0);
  });

  it('takes --jobs as the old name of --cells-at-once, saying so once on stderr; both at once is exit 2', async () => {
    const s = await serve();
    const file = writePlan(
      [
        'name: alias',
        'tasks: [RuMedDaNet]',
        `data: ${DATA}`,
        'defaults: {limit: 2, bootstrap: 0}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake}`,
        'matrix: {shots: [0, 1]}',
      ].join('\n'),
    );
    const old = await rumedbenchOk('plan', 'run', file, '--out', tmp(), '--jobs', '2');
    const notes = old.stderr.split('\n').filter((l) => l.includes('--jobs'));
    expect(notes).toEqual([
      'warning: --jobs is deprecated: it is --cells-at-once now (a job is a queue chunk); --jobs still works',
    ]);
    expect(s.requests).toHaveLength(4);
    const now = await rumedbenchOk('plan', 'run', file, '--out', tmp(), '--cells-at-once', '2');
    expect(now.stderr).not.toContain('--jobs');
    const both = await rumedbench('plan', 'run', file, '--out', tmp(), '--jobs', '2', '--cells-at-once', '3');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--jobs is the old name of --cells-at-once: give only --cells-at-once');
  });

  it('resumes a plan run killed with SIGKILL, re-asking at most the requests that were in flight', async () => {
    const s = await serve({ behaviour: () => ({ kind: 'ok', delayMs: 25 }) });
    const file = writePlan(
      [
        'name: killed',
        'tasks: [RuMedDaNet]',
        `data: ${DATA}`,
        'defaults: {concurrency: 2, limit: 40, bootstrap: 0}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${s.url}", model: fake}`,
        'matrix: {shots: [0, 1, 2]}',
      ].join('\n'),
    );
    const out = tmp();
    const args = ['plan', 'run', file, '--out', out, '--cells-at-once', '3'];
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { env: CLI_ENV, stdio: 'ignore' });
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (s.requests.length >= 40) {
          clearInterval(timer);
          child.kill('SIGKILL');
          resolve();
        }
      }, 5);
    });
    await new Promise((r) => child.once('exit', r));
    const beforeResume = s.requests.length;
    await rumedbenchOk(...args, '--resume');
    const keys = s.requests.map((q) => `${q.body.model}|${JSON.stringify(q.body.messages)}`);
    const unique = new Set(keys).size;
    // 3 cells × 40 items; each asked once, except what was in flight at the kill: 3 cells × 2 at most.
    expect(unique).toBe(3 * 40);
    expect(keys.length - unique).toBeLessThanOrEqual(3 * 2);
    expect(beforeResume).toBeLessThan(keys.length);
    const summary = JSON.parse(read(out, 'summary.json')) as { cells: { status: string }[] };
    expect(summary.cells.map((c) => c.status)).toEqual(['done', 'done', 'done']);
  });
});
