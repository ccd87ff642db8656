/**
 * The real EleutherAI lm-evaluation-harness 0.4.13 runs the tasks `rumedbench tasks export --format lm-eval` writes,
 * against the same loopback vLLM-protocol server as `rumedbench llm --mode loglik`, and its output is read back
 * (src/scoring/lm-eval.ts): the same answer on every item of every exported task, the same scores to the last digit,
 * and its prompts and candidates, as its samples record what it sent, ours byte for byte.
 *
 * lm-eval is taken from LMEVAL_PYTHON, else from the virtual environment `bash bench/lmeval/setup.sh` makes (from the
 * local package index, outside the repository; .ci/run makes one). Where there is none, the suite skips saying why;
 * RUMEDBENCH_REQUIRE_LMEVAL=1 (CI) makes that a failure.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LmEvalLoglikSample, type LmEvalSample, readLmEval } from '../../src/scoring/lm-eval.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { REPO_ROOT } from '../helpers/data.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { writeFixtureData } from '../helpers/fixture-data.js';

const WHEEL = '/opt/pypi-more/files/lm_eval-0.4.13-py3-none-any.whl';
const VENV = join(tmpdir(), 'rumedbench-lmeval-0.4.13');

/** A Python with lm-eval 0.4.13, or why there is none. */
function findLmEval(): { python: string } | { why: string } {
  const given = process.env.LMEVAL_PYTHON;
  const python = given ?? join(VENV, 'bin', 'python');
  const works = () => {
    try {
      return execFileSync(python, ['-c', 'import lm_eval; print(lm_eval.__version__)'], {
        encoding: 'utf8',
      }).trim();
    } catch {
      return undefined;
    }
  };
  // Nothing is installed while the tests are collected: CI installs it first (.ci/run), a developer once by hand.
  if (!existsSync(python))
    return {
      why: `no lm-eval at ${python}: bash bench/lmeval/setup.sh ${VENV} installs it${existsSync(WHEEL) ? '' : ` (its wheel ${WHEEL} is not here)`}, or set LMEVAL_PYTHON`,
    };
  const version = works();
  if (!version) return { why: `${python} cannot import lm_eval` };
  if (version !== '0.4.13') return { why: `${python} has lm_eval ${version}, not 0.4.13` };
  return { python };
}

const found = findLmEval();
const required = process.env.RUMEDBENCH_REQUIRE_LMEVAL === '1';
if ('why' in found && !required) console.warn(`lm-eval suite skipped: ${found.why}`);

/** Runs a command without blocking this process (the fake server answers from it). */
function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${file} exited ${code}:\n${out.slice(-4000)}`)),
    );
  });
}

interface OurSample {
  task: string;
  split: string;
  id: string;
  prompt: string;
  answer: unknown;
  candidates: { label: string; text: string; logprob: number | null }[];
}

describe.skipIf('why' in found && !required)('lm-evaluation-harness 0.4.13 on the exported tasks', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-lmeval-'));
  const data = writeFixtureData(join(dir, 'data'), { n: 8 });
  let server: FakeOpenAI;
  let ours: OurSample[];
  let lmOut: string;
  const TASKS = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedTest'];

  beforeAll(async () => {
    if ('why' in found) throw new Error(`RUMEDBENCH_REQUIRE_LMEVAL=1, and ${found.why}`);
    server = await startFakeOpenAI({ reply: () => '[]', echoTopLogprobs: true });
    const exported = join(dir, 'tasks');
    await rumedbenchOk('tasks', 'export', '--format', 'lm-eval', '--out', exported, '--data', data);
    lmOut = join(dir, 'lm-eval-out');
    await run(
      found.python,
      [
        ...['-m', 'lm_eval', 'run', '--model', 'local-completions', '--tasks', 'rumedbench'],
        ...['--include_path', exported, '--output_path', lmOut, '--log_samples'],
        ...['--model_args', `model=base-1,base_url=${server.url}/completions,tokenizer_backend=remote`],
      ],
      {
        ...process.env,
        // lm-eval imports pytablewriter only to print its table; the local index lacks it (bench/lmeval).
        PYTHONPATH: join(REPO_ROOT, 'bench', 'lmeval'),
        HF_DATASETS_OFFLINE: '1',
        HF_HUB_OFFLINE: '1',
        TOKENIZERS_PARALLELISM: 'false',
      },
    );
    const mine = join(dir, 'ours');
    await rumedbenchOk(
      ...['llm', '--model', 'base-1', '--base-url', server.url, '--mode', 'loglik', '--split', 'both'],
      ...['--tasks', TASKS.join(','), '--data', data, '--out', mine, '--bootstrap', '0', '--no-progress'],
    );
    ours = readFileSync(join(mine, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as OurSample);
  }, 300_000);
  afterAll(async () => {
    await server?.close();
  });

  it('chooses the same answer as llm --mode loglik on every item of every exported task', async () => {
    const read = await readLmEval(lmOut, { dataDir: data });
    expect(read.submission.issues.filter((i) => i.severity === 'error')).toEqual([]);
    expect(read.info?.lm_eval_version).toBe('0.4.13');
    for (const task of TASKS) {
      const theirs = read.samples.filter(
        (s): s is LmEvalLoglikSample => s.task === task && s.mode === 'loglik',
      );
      const split = task === 'RuMedTest' ? 'private_test' : 'test';
      const n = readFileSync(join(data, task, `${split}_v1.jsonl`), 'utf8')
        .trim()
        .split('\n').length;
      expect(theirs.length, task).toBe(n);
      const byId = new Map(ours.filter((s) => s.task === task && s.split === split).map((s) => [s.id, s]));
      for (const s of theirs) {
        const mine = byId.get(s.id);
        expect(mine, `${task} ${s.id}`).toBeDefined();
        expect(s.answer, `${task} ${s.id}`).toEqual(mine?.answer);
        // The same sums, to the bit: the same tokens were scored.
        expect(s.candidates.map((c) => c.logprob)).toEqual(mine?.candidates.map((c) => c.logprob));
      }
    }
  });

  it("sent our prompts and candidates byte for byte (read back from lm-eval's samples)", () => {
    const folder = readdirSync(lmOut).map((d) => join(lmOut, d))[0] as string;
    let checked = 0;
    for (const file of readdirSync(folder).filter((f) => f.startsWith('samples_'))) {
      for (const line of readFileSync(join(folder, file), 'utf8').trim().split('\n')) {
        const s = JSON.parse(line) as {
          doc: Record<string, unknown>;
          arguments: Record<string, { arg_0: string; arg_1: string }>;
        };
        const id = String(s.doc.pairID ?? s.doc.idx);
        const mine = ours.find(
          (o) =>
            o.id === id &&
            file.includes(`_${o.task.toLowerCase()}_`) &&
            o.split === (o.task === 'RuMedTest' ? 'private_test' : 'test'),
        );
        expect(mine, `${file} ${id}`).toBeDefined();
        const args = Object.values(s.arguments);
        expect(args.map((a) => a.arg_0)).toEqual(args.map(() => mine?.prompt));
        expect(args.map((a) => a.arg_1)).toEqual(mine?.candidates.map((c) => c.text));
        checked++;
      }
    }
    expect(checked).toBe(8 * 5);
  });

  it('scores the imported run as ours, to the last digit, through eval', async () => {
    const score = async (path: string) =>
      JSON.parse((await rumedbenchOk('eval', path, '--data', data, '--bootstrap', '0', '--json')).stdout) as {
        tasks: Record<string, { metrics: Record<string, number> }>;
      };
    const theirs = await score(lmOut);
    const mine = await score(join(dir, 'ours', 'predictions'));
    const tested = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI'];
    expect(Object.keys(theirs.tasks).sort()).toEqual([...tested].sort());
    for (const t of tested) expect(theirs.tasks[t]?.metrics, t).toEqual(mine.tasks[t]?.metrics);
  });

  it('becomes a run folder that says where it came from, which rank reads and submit takes', async () => {
    const run = join(dir, 'imported');
    await rumedbenchOk('eval', lmOut, '--data', data, '--bootstrap', '0', '--out', run);
    const manifest = JSON.parse(readFileSync(join(run, 'manifest.json'), 'utf8'));
    expect(manifest.provider).toBe('lm-eval');
    expect(manifest.lm_eval.version).toBe('0.4.13');
    expect(manifest.lm_eval.model_args).toMatchObject({ model: 'base-1', tokenizer_backend: 'remote' });
    expect(manifest.lm_eval.tasks.rumedbench_rumeddanet).toMatchObject({
      version: 1,
      rumedbench_task: 'RuMedDaNet',
      prompt_version: 'danet-v1',
    });
    expect(readdirSync(join(run, 'predictions')).sort()).toEqual([
      'RuMedDaNet.jsonl',
      'RuMedNLI.jsonl',
      'RuMedSymptomRec.jsonl',
      'RuMedTop3.jsonl',
    ]);
    expect(existsSync(join(run, 'submission.zip'))).toBe(true);
    const ranked = JSON.parse(
      (await rumedbenchOk('rank', run, join(dir, 'ours'), '--data', data, '--bootstrap', '0', '--json'))
        .stdout,
    );
    expect(JSON.stringify(ranked)).toContain('imported');
    // `submit` takes the output folder itself, converted as `eval --out` converts it: the board gets the same upload
    // (the Idempotency-Key is a hash of every file and every metadata field), with the run's files in it.
    const uploads: { key: string; body: string }[] = [];
    const board = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        uploads.push({
          key: String(req.headers['idempotency-key']),
          body: Buffer.concat(chunks).toString('latin1'),
        });
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"e1","status":"scored"}');
      });
    });
    await new Promise<void>((r) => board.listen(0, '127.0.0.1', r));
    const server = `http://127.0.0.1:${(board.address() as AddressInfo).port}`;
    try {
      for (const what of [run, lmOut]) await rumedbenchOk('submit', what, '--server', server, '--data', data);
    } finally {
      board.close();
    }
    expect(uploads).toHaveLength(2);
    expect(uploads[1]?.key).toBe(uploads[0]?.key);
    for (const f of ['RuMedDaNet.jsonl', 'RuMedNLI.jsonl', 'RuMedSymptomRec.jsonl', 'RuMedTop3.jsonl'])
      expect(uploads[1]?.body).toContain(`filename="${f}"`);
  });

  /**
   * A chat model's replies, one per prompt (the same for lm-eval and `llm`, which send the same messages): answers in
   * each task's form, synonyms and option numbers only our parsers read, reasoning blocks, an unclosed one, an echo
   * of the system prompt, an empty reply and an unreadable one.
   */
  const chatReply = (codes: string[]) => (body: { messages: { role: string; content: string }[] }) => {
    const user = body.messages.find((m) => m.role === 'user')?.content ?? '';
    const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
    const pick = <T>(xs: T[]) =>
      xs[(createHash('sha256').update(user).digest()[0] as number) % xs.length] as T;
    const odd = ['', system, 'не могу сказать', '<think>Нужно подумать, но лимит кончился'];
    if (user.includes('«Ответ: да»'))
      return pick([
        'Ответ: да',
        'Ответ: нет',
        'Итоговый ответ: верно',
        '<think>да или нет?</think>\nОтвет: нет',
        ...odd,
      ]);
    if (user.includes('entailment'))
      return pick(['Ответ: entailment', 'Ответ: 2', 'Ответ: neutral', 'Ответ: противоречие', ...odd]);
    if (user.includes('симптом1')) {
      const list = (/из списка: (.*?)\. Последняя/.exec(user)?.[1] ?? '').split('; ');
      const h = createHash('sha256').update(user).digest();
      const three = [0, 1, 2].map((k) => list[(h[k + 1] as number) % list.length]);
      return pick([`Ответ: ${three.join('; ')}`, `Ответ: ${list[0]}`, ...odd]);
    }
    if (user.includes('КОД1')) {
      const h = createHash('sha256').update(user).digest();
      const three = [0, 1, 2].map((k) => codes[(h[k + 1] as number) % codes.length]);
      return pick([`Ответ: ${three.join(', ')}`, `Ответ: ${three[0]}`, ...odd]);
    }
    return pick(['Ответ: 1', 'Ответ: 2', 'Правильный вариант — 3.', 'Итоговый ответ: 4', ...odd]);
  };

  it("reads lm-eval's generation samples with our parser: the same answers as llm on every item, the same scores to the last digit, and our prompts on the wire", async () => {
    const codes = [
      ...new Set(
        readFileSync(join(data, 'RuMedTop3', 'train_v1.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).code as string),
      ),
    ].sort();
    const chat = await startFakeOpenAI({ reply: chatReply(codes) });
    try {
      const exported = join(dir, 'tasks');
      const genOut = join(dir, 'lm-eval-gen-out');
      await run(
        (found as { python: string }).python,
        [
          ...['-m', 'lm_eval', 'run', '--model', 'local-chat-completions', '--tasks', 'rumedbench_gen'],
          ...['--include_path', exported, '--output_path', genOut, '--log_samples', '--apply_chat_template'],
          ...['--model_args', `model=chat-1,base_url=${chat.url}/chat/completions`],
        ],
        {
          ...process.env,
          PYTHONPATH: join(REPO_ROOT, 'bench', 'lmeval'),
          HF_DATASETS_OFFLINE: '1',
          HF_HUB_OFFLINE: '1',
          TOKENIZERS_PARALLELISM: 'false',
        },
      );
      const theirs = chat.requests.map((r) => JSON.stringify(r.body.messages));
      chat.requests.length = 0;
      const oursDir = join(dir, 'ours-gen');
      await rumedbenchOk(
        ...[
          'llm',
          '--model',
          'chat-1',
          '--base-url',
          chat.url,
          '--split',
          'both',
          '--tasks',
          TASKS.join(','),
        ],
        ...['--data', data, '--out', oursDir, '--bootstrap', '0', '--no-progress'],
      );
      const mine = new Set(chat.requests.map((r) => JSON.stringify(r.body.messages)));
      // One request per exported item (8 fixture records in each task's test split), each one of ours exactly.
      expect(theirs).toHaveLength(8 * TASKS.length);
      expect(theirs.filter((m) => !mine.has(m))).toEqual([]);
      expect(JSON.parse(theirs[0] as string).map((m: { role: string }) => m.role)).toEqual([
        'system',
        'user',
      ]);

      // Every item: the same answer, read the same way (parsed or not, and why), as llm's own samples.
      type GenSample = {
        task: string;
        split: string;
        id: string;
        answer: unknown;
        status: string;
        flag?: string;
        reply: string | null;
        reasoning?: string;
      };
      const ourSamples = readFileSync(join(oursDir, 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as GenSample);
      const read = await readLmEval(genOut, { dataDir: data });
      expect(read.submission.issues.filter((i) => i.severity === 'error')).toEqual([]);
      expect(read.samples).toHaveLength(8 * TASKS.length);
      const key = (s: { task: string; split: string; id: string }) => `${s.task} ${s.split} ${s.id}`;
      const byKey = new Map(ourSamples.map((s) => [key(s), s]));
      for (const s of read.samples) {
        expect(s.mode).toBe('generate');
        const o = byKey.get(key(s));
        expect(o, key(s)).toBeDefined();
        const pickRead = (x: GenSample | LmEvalSample) => ({
          answer: x.answer,
          status: 'status' in x ? x.status : undefined,
          flag: 'flag' in x ? x.flag : undefined,
          reply: 'reply' in x ? x.reply : undefined,
          reasoning: 'reasoning' in x ? x.reasoning : undefined,
        });
        expect(pickRead(s), key(s)).toEqual(pickRead(o as GenSample));
      }
      // The replies were varied enough to prove something: parsed and unparsed ones, flagged ones, and answers our
      // parser reads where lm-eval's own filter sees another text (a synonym, an option number).
      const gen = read.samples.filter((s) => s.mode === 'generate');
      expect(gen.filter((s) => s.status === 'parsed').length).toBeGreaterThan(8);
      expect(gen.filter((s) => s.status === 'unparsed').length).toBeGreaterThan(4);
      expect(new Set(gen.flatMap((s) => (s.flag ? [s.flag] : []))).size).toBeGreaterThan(1);
      expect(
        gen.some((s) => s.answer !== null && JSON.stringify(s.lm_eval_filtered) !== JSON.stringify(s.answer)),
      ).toBe(true);

      // The same scores, to the last digit, through eval.
      const score = async (path: string) =>
        JSON.parse(
          (await rumedbenchOk('eval', path, '--data', data, '--bootstrap', '0', '--json')).stdout,
        ) as {
          tasks: Record<string, { metrics: Record<string, number> }>;
        };
      const scoredTheirs = await score(genOut);
      const scoredMine = await score(join(oursDir, 'predictions'));
      const tested = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI'];
      expect(Object.keys(scoredTheirs.tasks).sort()).toEqual([...tested].sort());
      for (const t of tested) expect(scoredTheirs.tasks[t]?.metrics, t).toEqual(scoredMine.tasks[t]?.metrics);
      const accuracies = tested.map((t) => scoredTheirs.tasks[t]?.metrics.accuracy as number);
      expect(accuracies.some((a) => a > 0)).toBe(true);

      // The run folder says it came from lm-eval's generation, with llm's counts of unparsed and flagged replies.
      const runDir = join(dir, 'imported-gen');
      await rumedbenchOk('eval', genOut, '--data', data, '--bootstrap', '0', '--out', runDir);
      const manifest = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
      expect(manifest).toMatchObject({ provider: 'lm-eval', mode: 'generate' });
      expect(manifest.lm_eval.tasks.rumedbench_rumeddanet_gen).toMatchObject({
        rumedbench_task: 'RuMedDaNet',
        mode: 'generate',
        generation_kwargs: { max_gen_toks: 1024 },
      });
      // llm asked both splits of each task (RuMedDaNet and RuMedNLI have a private test too), lm-eval the exported
      // one: llm's counts over the items lm-eval answered are the run folder's.
      const asked = new Set(read.samples.map(key));
      const figures = JSON.parse(readFileSync(join(runDir, 'summary.json'), 'utf8')).llm.tasks as Record<
        string,
        {
          mode: string;
          samples: number;
          unparsed: number;
          unparsed_rate: number;
          replies: Record<string, number>;
        }
      >;
      for (const task of TASKS) {
        const same = ourSamples.filter((s) => s.task === task && asked.has(key(s)));
        const unparsed = same.filter((s) => s.status === 'unparsed').length;
        expect(figures[task], task).toMatchObject({
          mode: 'generate',
          samples: same.length,
          unparsed,
          unparsed_rate: (100 * unparsed) / same.length,
          failed: 0,
        });
        for (const [flag, n] of Object.entries(figures[task]?.replies ?? {}))
          expect(n, `${task} ${flag}`).toBe(same.filter((s) => s.flag === flag).length);
      }
      // RuMedTest's private answers: the same submission file as llm's.
      const entry = (folder: string) =>
        execFileSync('unzip', ['-p', join(folder, 'submission.zip'), 'RuMedTest.jsonl'], {
          encoding: 'utf8',
        });
      expect(entry(runDir)).toBe(entry(oursDir));
    } finally {
      await chat.close();
    }
  }, 300_000);

  it('refuses generation samples sent without the chat template, and a task answered by both prompts', async () => {
    const genOut = join(dir, 'lm-eval-gen-out');
    const copy = mkdtempSync(join(dir, 'edited-gen-'));
    cpSync(genOut, copy, { recursive: true });
    const folder = readdirSync(copy).map((d) => join(copy, d))[0] as string;
    const file = join(
      folder,
      readdirSync(folder).find((f) => f.startsWith('samples_rumedbench_rumednli_gen_')) as string,
    );
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    // As lm-eval logs a run without --apply_chat_template: the description and the text as one plain prompt.
    const plain = JSON.parse(lines[1] as string);
    const messages = JSON.parse(plain.arguments.gen_args_0.arg_0[0]) as { content: string }[];
    plain.arguments.gen_args_0.arg_0 = messages.map((m) => m.content).join('\n\n');
    lines[1] = JSON.stringify(plain);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const refused = await evalJson(copy);
    expect(refused.code).toBe(1);
    const e = refused.result.errors.find((x) => x.code === 'LMEVAL_PROMPT_MISMATCH');
    expect(e).toMatchObject({ file, line: 2, id: plain.doc.pairID });
    expect(e?.message).toContain('not chat messages (run it with --apply_chat_template)');

    // Both prompts of RuMedDaNet in one run: two answers per item, refused naming both lm-eval tasks.
    const both = mkdtempSync(join(dir, 'edited-both-'));
    cpSync(lmOut, both, { recursive: true });
    const logFolder = readdirSync(both).map((d) => join(both, d))[0] as string;
    const results = readdirSync(logFolder).find((f) => f.startsWith('results_')) as string;
    const stamp = results.slice('results_'.length, -'.json'.length);
    const genFolder = readdirSync(genOut).map((d) => join(genOut, d))[0] as string;
    const genSamples = readdirSync(genFolder).find((f) =>
      f.startsWith('samples_rumedbench_rumeddanet_gen_'),
    ) as string;
    cpSync(join(genFolder, genSamples), join(logFolder, `samples_rumedbench_rumeddanet_gen_${stamp}.jsonl`));
    const value = JSON.parse(readFileSync(join(logFolder, results), 'utf8'));
    const genResults = readdirSync(genFolder).find((f) => f.startsWith('results_')) as string;
    value.configs.rumedbench_rumeddanet_gen = JSON.parse(
      readFileSync(join(genFolder, genResults), 'utf8'),
    ).configs.rumedbench_rumeddanet_gen;
    writeFileSync(join(logFolder, results), JSON.stringify(value));
    const twice = await evalJson(both);
    expect(twice.code).toBe(1);
    expect(twice.result.errors.map((x) => x.code)).toEqual(['LMEVAL_RUN']);
    expect(twice.result.errors[0]?.message).toContain(
      '"rumedbench_rumeddanet" and "rumedbench_rumeddanet_gen" both answer RuMedDaNet',
    );
  });

  it('runs a task defined in a file (--tasks-dir) the same way', async () => {
    const tasksDir = join(dir, 'user-tasks');
    mkdirSync(join(tasksDir, 'data'), { recursive: true });
    writeFileSync(
      join(tasksDir, 'severity.yaml'),
      [
        'schema: rumedbench.task/1',
        'name: Severity',
        'description: Тяжесть состояния по описанию.',
        'licence: CC BY 4.0',
        'files: {test: data/test.jsonl}',
        'id: id',
        'inputs: [text, age]',
        'gold: label',
        'type: classification',
        'labels: [лёгкая, средняя, тяжёлая]',
        'metrics: [accuracy]',
        'prompts: [{id: p1, version: severity-v1, instruction: Оцени тяжесть состояния., template: "Описание: {text} ({age} лет)"}]',
        '',
      ].join('\n'),
    );
    const labels = ['лёгкая', 'средняя', 'тяжёлая'];
    writeFileSync(
      join(tasksDir, 'data', 'test.jsonl'),
      `${Array.from({ length: 9 }, (_, i) => JSON.stringify({ id: `s${i}`, text: `случай {{ ${i} }}`, age: String(30 + i), label: labels[i % 3] })).join('\n')}\n`,
    );
    const exported = join(dir, 'user-export');
    await rumedbenchOk(
      'tasks',
      'export',
      '--tasks-dir',
      tasksDir,
      '--tasks',
      'Severity',
      '--out',
      exported,
      '--data',
      data,
    );
    const yaml = readFileSync(join(exported, 'rumedbench_severity.yaml'), 'utf8');
    expect(yaml).toContain(`definition_file: ${JSON.stringify(join(tasksDir, 'severity.yaml'))}`);
    const out = join(dir, 'user-lm-eval');
    await run(
      (found as { python: string }).python,
      [
        ...['-m', 'lm_eval', 'run', '--model', 'local-completions', '--tasks', 'rumedbench_severity'],
        ...['--include_path', exported, '--output_path', out, '--log_samples'],
        ...['--model_args', `model=base-1,base_url=${server.url}/completions,tokenizer_backend=remote`],
      ],
      {
        ...process.env,
        PYTHONPATH: join(REPO_ROOT, 'bench', 'lmeval'),
        HF_DATASETS_OFFLINE: '1',
        HF_HUB_OFFLINE: '1',
      },
    );
    const mine = join(dir, 'user-ours');
    await rumedbenchOk(
      ...['llm', '--model', 'base-1', '--base-url', server.url, '--mode', 'loglik', '--tasks-dir', tasksDir],
      ...['--tasks', 'Severity', '--data', data, '--out', mine, '--bootstrap', '0', '--no-progress'],
    );
    const ourSamples = readFileSync(join(mine, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as OurSample);
    const read = await readLmEval(out, { dataDir: data });
    expect(read.submission.issues).toEqual([]);
    const loglik = read.samples.filter((s): s is LmEvalLoglikSample => s.mode === 'loglik');
    expect(loglik).toHaveLength(read.samples.length);
    expect(loglik.map((s) => [s.id, s.prompt, s.answer])).toEqual(
      ourSamples.map((s) => [s.id, s.prompt, s.answer]),
    );
    // Jinja-looking text in the data is data: the prompt carries it as written.
    expect(loglik[0]?.prompt).toContain('Описание: случай {{ 0 }} (30 лет)');
  });

  /** A copy of lm-eval's output folder, its RuMedDaNet samples passed through `edit`. */
  type Results = { configs: Record<string, { metadata?: unknown }> };
  const edited = (edit: (lines: string[]) => string[], results?: (r: Results) => void, rename?: string) => {
    const copy = mkdtempSync(join(dir, 'edited-'));
    cpSync(lmOut, copy, { recursive: true });
    const folder = readdirSync(copy).map((d) => join(copy, d))[0] as string;
    const file = readdirSync(folder).find((f) => f.startsWith('samples_rumedbench_rumeddanet_')) as string;
    const lines = readFileSync(join(folder, file), 'utf8').trim().split('\n');
    rmSync(join(folder, file));
    const name = rename ? file.replace('rumedbench_rumeddanet', rename) : file;
    writeFileSync(join(folder, name), `${edit(lines).join('\n')}\n`);
    if (results) {
      const r = readdirSync(folder).find((f) => f.startsWith('results_')) as string;
      const value = JSON.parse(readFileSync(join(folder, r), 'utf8')) as Results;
      results(value);
      if (rename) {
        value.configs[rename] = value.configs.rumedbench_rumeddanet as Results['configs'][string];
        delete value.configs.rumedbench_rumeddanet;
      }
      writeFileSync(join(folder, r), JSON.stringify(value));
    }
    return { copy, file: join(folder, name) };
  };
  const evalJson = async (path: string) => {
    const r = await rumedbench('eval', path, '--data', data, '--bootstrap', '0', '--json');
    return {
      code: r.code,
      result: JSON.parse(r.stdout) as {
        errors: { code: string; file: string; line?: number; id?: string; message: string }[];
      },
    };
  };

  it('names a missing, a duplicated and a foreign item by id, as for any predictions file', async () => {
    const { copy } = edited((lines) => {
      const foreign = JSON.parse(lines[1] as string);
      foreign.doc.pairID = 'not-an-item';
      // Items out of order: mapped by id, never by position.
      return [
        lines[3] as string,
        lines[0] as string,
        lines[3] as string,
        JSON.stringify(foreign),
        ...lines.slice(4),
      ].reverse();
    });
    const { code, result } = await evalJson(copy);
    expect(code).toBe(1);
    const codes = result.errors
      .filter((e) => e.file.includes('rumeddanet'))
      .map((e) => `${e.code} ${e.id}`)
      .sort();
    const ids = readFileSync(join(data, 'RuMedDaNet', 'test_v1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).pairID as string);
    expect(codes).toEqual(
      [
        `DUPLICATE_ID ${ids[3]}`,
        `MISSING_ITEM ${ids[1]}`,
        `MISSING_ITEM ${ids[2]}`,
        'UNKNOWN_ID not-an-item',
      ].sort(),
    );
  });

  it('refuses a sample whose prompt is not ours, showing the first difference', async () => {
    const { copy, file } = edited((lines) =>
      lines.map((l, i) => {
        if (i !== 2) return l;
        const s = JSON.parse(l);
        for (const a of Object.values(s.arguments) as { arg_0: string }[])
          a.arg_0 = a.arg_0.replace('Вопрос:', 'Question:');
        return JSON.stringify(s);
      }),
    );
    const { code, result } = await evalJson(copy);
    expect(code).toBe(1);
    const e = result.errors.find((x) => x.code === 'LMEVAL_PROMPT_MISMATCH');
    expect(e?.file).toBe(file);
    expect(e?.line).toBe(3);
    expect(e?.message).toMatch(
      /the prompt differs at character \d+: ours ".*Вопрос:.*", theirs ".*Question:.*"/,
    );
  });

  it("reads lm-eval's own task (not exported by us) only where its prompts are ours", async () => {
    // The same samples under another task name, with none of our export's metadata: read, its prompts being ours.
    const strip = (r: Results) => {
      for (const c of Object.values(r.configs) as { metadata?: unknown }[]) delete c.metadata;
    };
    const same = edited((lines) => lines, strip, 'my_ru_med_danet_ru');
    const scored = await evalJson(same.copy);
    expect(scored.result.errors).toEqual([]);
    expect(scored.code).toBe(0);
    const other = edited(
      (lines) =>
        lines.map((l) => {
          const s = JSON.parse(l);
          for (const a of Object.values(s.arguments) as { arg_0: string }[]) a.arg_0 = `Q: ${a.arg_0}`;
          return JSON.stringify(s);
        }),
      strip,
      'my_ru_med_danet_ru',
    );
    const refused = await evalJson(other.copy);
    expect(refused.code).toBe(1);
    expect(refused.result.errors.map((e) => e.code)).toEqual(['LMEVAL_PROMPT_MISMATCH']);
  });
});
