/**
 * `rumedbench submit` and `plan run --submit` against `rumedbench serve` as a process, on fixture data: a run folder
 * scored and shown on the board with its metadata, a repeat landing once, a broken file answered with every problem
 * as `eval` prints them, an unreachable server named (exit 2).
 */

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd } from '../../src/llm/cost.js';
import { writeContamination } from '../../src/scoring/trust-files.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';
import { elements, parseHtml, tableRows } from '../helpers/html.js';
import { type ServerProcess, startServe } from '../helpers/server.js';

const DATA = fixtureDataDir();
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-submit-'));

describe('submit (on fixture data the test writes)', () => {
  let board: ServerProcess;
  let model: FakeOpenAI;
  beforeAll(async () => {
    // Every test of this file uploads to one board from one address: more than the default 20 a minute.
    board = await startServe(['--db', join(tmp(), 'board.sqlite'), '--anonymous-per-minute', '200'], {
      RUMEDBENCH_DATA: DATA,
    });
    model = await startFakeOpenAI({ reply: () => 'Ответ: да' });
  });
  afterAll(async () => {
    await board?.stop();
    await model?.close();
  });
  const entries = async () =>
    ((await (await fetch(`${board.url}/api/boards/public`)).json()) as { entries: Record<string, unknown>[] })
      .entries;

  it('sends a run folder: scored, on the board with its model and settings; a repeat lands once', async () => {
    const llm = [
      'llm',
      '--base-url',
      model.url,
      '--model',
      'org/fake-7b',
      '--data',
      DATA,
      '--bootstrap',
      '0',
    ];
    const quick = join(tmp(), 'quick');
    await rumedbenchOk(...llm, '--tasks', 'RuMedDaNet', '--limit', '10', '--out', quick);
    const refused = await rumedbench('submit', quick, '--server', board.url);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringContaining('(--limit) is a quick look')]);
    const run = join(tmp(), 'run');
    await rumedbenchOk(...llm, '--tasks', 'RuMedDaNet,RuMedNLI', '--out', run);
    const first = await rumedbench('submit', run, '--server', board.url);
    // Without a team token it says so: an anonymous upload is never a surprise.
    expect([first.code, first.stderr]).toEqual([
      0,
      'warning: RUMEDBENCH_TOKEN is not set: the upload goes in anonymously, under no team\n',
    ]);
    const id = /scored on the public board: (\S+)/.exec(first.stdout)?.[1] as string;
    expect(first.stdout).toContain(`${board.url}/submissions/${id}`);
    expect(first.stdout).toMatch(/RuMedDaNet\s+\d+\.\d\d/);
    const listed = await entries();
    expect(listed.map((e) => [e.id, e.model, e.kind])).toEqual([[id, 'fake-7b', 'LLM']]);
    const entry = (await (await fetch(`${board.url}/api/submissions/${id}`)).json()) as {
      description: string;
    };
    expect(entry.description).toMatch(/^rumedbench \S+ llm: mode="generate", shots=0, seed=0/);

    const again = await rumedbench('submit', run, '--server', board.url, '--json');
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as { id: string }).id).toBe(id);
    expect((await entries()).map((e) => e.id)).toEqual([id]);
  });

  it('sends what the run’s trust files say: the board marks contamination and shows the formulations’ spread', async () => {
    const run = join(tmp(), 'trusted');
    await rumedbenchOk(
      ...['llm', '--base-url', model.url, '--model', 'org/checked-7b', '--data', DATA, '--bootstrap', '0'],
      ...['--tasks', 'RuMedDaNet', '--prompts', 'p1,p2', '--out', run],
    );
    // What `contamination --out RUN` writes, through its one writer.
    const guided = {
      probe: 'guided',
      n: 30,
      p_value: 0.0005,
      alpha: 0.01,
      verdict: 'contaminated' as const,
      rouge_guided: 0.9,
      rouge_general: 0.1,
    };
    writeContamination(run, {
      model: 'org/checked-7b',
      split: 'test',
      settings: { probes: ['guided'] },
      tasks: { RuMedDaNet: { guided } },
    });
    const variants = JSON.parse(readFileSync(join(run, 'prompt-variants.json'), 'utf8')) as {
      tasks: { RuMedDaNet: { mean: number; sd: number } };
    };
    const sent = await rumedbenchOk('submit', run, '--server', board.url, '--json');
    const id = (JSON.parse(sent.stdout) as { id: string }).id;
    const entry = (await (await fetch(`${board.url}/api/submissions/${id}`)).json()) as {
      trust: {
        contamination: { RuMedDaNet: { guided: { verdict: string } } };
        formulations: Record<string, unknown>;
      };
    };
    expect(entry.trust.contamination.RuMedDaNet.guided.verdict).toBe('contaminated');
    const v = variants.tasks.RuMedDaNet;
    expect(entry.trust.formulations.RuMedDaNet).toEqual({
      variants: 2,
      mean: v.mean,
      sd: v.sd,
      min: expect.any(Number),
      max: expect.any(Number),
    });
    const html = await (await fetch(`${board.url}/`)).text();
    expect(html).toContain('contamination found');
    const { mean, sd } = variants.tasks.RuMedDaNet;
    expect(html).toContain(`2 wordings: ${mean.toFixed(2)} ± ${sd.toFixed(2)}`);
    // Sent by hand, the field is checked like any other: JSON, known tasks and probes, p-values in [0, 1].
    for (const [trust, why] of [
      ['{not json', 'trust: not JSON'],
      [
        JSON.stringify({
          contamination: { RuMedQA: { order: { n: 1, p_value: 0.5, alpha: 0.01, verdict: 'no evidence' } } },
        }),
        'a RuMedBench task',
      ],
      [
        JSON.stringify({
          contamination: { RuMedDaNet: { order: { n: 1, p_value: 7, alpha: 0.01, verdict: 'no evidence' } } },
        }),
        'p_value',
      ],
      [JSON.stringify({ extra: 1 }), 'trust'],
      // Contradictions: p = 0 with "no evidence", a negative spread, min above max, a task not uploaded.
      [
        JSON.stringify({
          contamination: { RuMedDaNet: { order: { n: 9, p_value: 0, alpha: 0.01, verdict: 'no evidence' } } },
        }),
        'the verdict disagrees with p and α',
      ],
      [
        JSON.stringify({ formulations: { RuMedDaNet: { variants: 2, mean: 50, sd: -1, min: 40, max: 60 } } }),
        'sd must not be negative',
      ],
      [
        JSON.stringify({ formulations: { RuMedDaNet: { variants: 2, mean: 50, sd: 1, min: 60, max: 40 } } }),
        'min ≤ mean ≤ max',
      ],
      [
        JSON.stringify({ formulations: { RuMedNLI: { variants: 2, mean: 50, sd: 1, min: 40, max: 60 } } }),
        'names RuMedNLI, which the upload does not include',
      ],
    ] as const) {
      const fd = new FormData();
      fd.append(
        'file',
        new Blob([readFileSync(join(run, 'predictions', 'RuMedDaNet.jsonl'))]),
        'RuMedDaNet.jsonl',
      );
      fd.append('model', 'hand-made');
      fd.append('kind', 'LLM');
      fd.append('trust', trust);
      const res = await fetch(`${board.url}/api/submissions`, { method: 'POST', body: fd });
      const body = (await res.json()) as { code: string; error: string };
      expect([res.status, body.code]).toEqual([400, 'INVALID_METADATA']);
      expect(body.error).toContain(why);
    }
  });

  it('a run bought partly online, partly by batch: the board and the report show the sum at the rates paid (#59 item 5)', async () => {
    const run = join(tmp(), 'mixed');
    const llm = (...more: string[]) =>
      rumedbench(
        ...['llm', '--base-url', model.url, '--model', 'org/mixed-7b', '--data', DATA, '--bootstrap', '0'],
        ...['--no-progress', '--tasks', 'RuMedDaNet', '--price-prompt', '10', '--price-completion', '30'],
        ...['--out', run, ...more],
      );
    const first = await llm('--limit', '45');
    expect(first.code, first.stderr).toBe(0);
    // The other 15 of the 60 test items, by the provider's batch API, at half the list prices.
    const batched = await llm('--resume', '--batch', '--batch-poll', '0.01');
    expect(batched.code, batched.stderr).toBe(0);
    type Line = { usage: { promptTokens: number; completionTokens: number }; bought?: { via: string } };
    const lines = readFileSync(join(run, 'journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const list = (ls: Line[]) =>
      ls.reduce((a, l) => a + (l.usage.promptTokens * 10 + l.usage.completionTokens * 30) / 1e6, 0);
    const online = lines.filter((l) => l.bought?.via === 'online');
    const batch = lines.filter((l) => l.bought?.via === 'batch');
    expect([online.length, batch.length]).toEqual([45, 15]);
    const paid = list(online) + list(batch) / 2;
    const summary = JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')) as {
      llm: { cost: number; online: { answers: number }; batch: { answers: number } };
    };
    expect([summary.llm.cost, summary.llm.online.answers, summary.llm.batch.answers]).toEqual([
      expect.closeTo(paid, 12),
      45,
      15,
    ]);
    const sent = await rumedbenchOk('submit', run, '--server', board.url, '--json');
    const id = (JSON.parse(sent.stdout) as { id: string }).id;
    const entry = (await (await fetch(`${board.url}/api/submissions/${id}`)).json()) as {
      usage: { cost_usd: number; batch?: boolean };
    };
    // The sum; not tagged as a batch run priced at the discount, which only 15 of its 60 answers were.
    expect([entry.usage.cost_usd, entry.usage.batch]).toEqual([summary.llm.cost, undefined]);
    const page = await (await fetch(`${board.url}/submissions/${id}`)).text();
    expect(page).toContain(`<strong>${formatUsd(summary.llm.cost)}</strong>`);
    expect(page).not.toContain('priced at its discount');
    const csv = (await (await fetch(`${board.url}/board/public.csv`)).text()).split('\r\n');
    const header = (csv[0] as string).split(',');
    const row = (csv.find((l) => l.includes(id)) as string).split(',');
    expect(row[header.indexOf('cost_usd')]).toBe(String(summary.llm.cost));
    // The static report's usage table (system, requests, tokens in and out, cost, …): the same sum.
    const html = join(tmp(), 'mixed.html');
    await rumedbenchOk('report', run, '--name', 'mixed', '--data', DATA, '--out', html);
    const doc = parseHtml(readFileSync(html, 'utf8'));
    const usage = elements(doc, (e) => e.tagName === 'table')
      .map(tableRows)
      .filter((rows) => rows[0]?.[4] === 'cost, USD');
    expect(usage.map((rows) => rows.slice(1).map((r) => [r[0], r[1], r[4]]))).toEqual([
      [['mixed', '60', summary.llm.cost.toFixed(4)]],
    ]);
  });

  it('sends what the run spent: the board shows its cost and tokens, and cost against score once two are priced', async () => {
    const priced = async (name: string, pricePrompt: string) => {
      const run = join(tmp(), name);
      await rumedbenchOk(
        ...['llm', '--base-url', model.url, '--model', `org/${name}`, '--data', DATA, '--bootstrap', '0'],
        // All five public tasks: a board places an entry by its overall score.
        ...['--price-prompt', pricePrompt, '--price-completion', '2', '--out', run],
      );
      const summary = JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')) as {
        llm: {
          cost: number;
          usage: { prompt_tokens: number; completion_tokens: number };
          requests: { total: number };
        };
      };
      const sent = await rumedbenchOk('submit', run, '--server', board.url, '--json');
      return { id: (JSON.parse(sent.stdout) as { id: string }).id, llm: summary.llm, run };
    };
    const cheap = await priced('cheap-7b', '0.5');
    const entry = (await (await fetch(`${board.url}/api/submissions/${cheap.id}`)).json()) as {
      usage: unknown;
    };
    // The board holds what the run's summary says, no more: tokens as the server reported them, the cost as priced.
    expect(cheap.llm.usage.prompt_tokens).toBeGreaterThan(0);
    expect(entry.usage).toEqual({
      prompt_tokens: cheap.llm.usage.prompt_tokens,
      completion_tokens: cheap.llm.usage.completion_tokens,
      requests: cheap.llm.requests.total,
      cost_usd: cheap.llm.cost,
    });
    const page = await (await fetch(`${board.url}/submissions/${cheap.id}`)).text();
    expect(page).toContain(`${cheap.llm.usage.prompt_tokens.toLocaleString('en-US')} prompt tokens`);
    let html = await (await fetch(`${board.url}/`)).text();
    expect(html).toContain('>Cost</a></th>');
    // One priced entry: a column, no chart yet.
    expect(html).not.toContain('id="llm-cost"');
    const dear = await priced('dear-7b', '50');
    expect(dear.llm.cost).toBeGreaterThan(cheap.llm.cost);
    html = await (await fetch(`${board.url}/`)).text();
    const figure = /<figure id="llm-cost"[^>]*>([\s\S]*?)<\/figure>/.exec(html)?.[1] ?? '';
    expect(figure).toContain('<svg');
    // Both score alike (the same replies): the cheaper one is the front, the dearer one dominated.
    expect(figure).toContain(`cheap-7b: `);
    expect(figure).toMatch(/cheap-7b: [\d.]+, \$[\d.e-]+ \(on the Pareto front\)/);
    expect(figure).not.toMatch(/dear-7b: [\d.]+, \$[\d.e-]+ \(on the Pareto front\)/);
    const csv = (await (await fetch(`${board.url}/board/public.csv`)).text()).split('\r\n');
    const header = (csv[0] as string).split(',');
    const row = (csv.find((l) => l.includes(dear.id)) as string).split(',');
    expect(row[header.indexOf('cost_usd')]).toBe(String(dear.llm.cost));
    expect(row[header.indexOf('prompt_tokens')]).toBe(String(dear.llm.usage.prompt_tokens));

    // Sent by hand, the field is checked: JSON, whole non-negative counts, parts no larger than their whole.
    for (const [usage, why] of [
      ['{not json', 'usage: not JSON'],
      [JSON.stringify({ prompt_tokens: -1, completion_tokens: 1 }), 'prompt_tokens'],
      [JSON.stringify({ prompt_tokens: 1.5, completion_tokens: 1 }), 'prompt_tokens'],
      [JSON.stringify({ prompt_tokens: 1, completion_tokens: 1, cost_usd: '1' }), 'cost_usd'],
      [JSON.stringify({ prompt_tokens: 1, completion_tokens: 1, cost_usd: 1e12 }), 'cost_usd'],
      [JSON.stringify({ prompt_tokens: 1, completion_tokens: 1, evil: '<script>' }), 'evil'],
      [
        JSON.stringify({ prompt_tokens: 1, completion_tokens: 2, reasoning_tokens: 3 }),
        'more than completion_tokens',
      ],
      [`{"prompt_tokens":1,"completion_tokens":1,"x":"${'a'.repeat(2000)}"}`, 'at most 1000 characters'],
    ] as const) {
      const fd = new FormData();
      const file = readFileSync(join(cheap.run, 'predictions', 'RuMedDaNet.jsonl'));
      fd.append('file', new Blob([file]), 'RuMedDaNet.jsonl');
      fd.append('model', 'hand-made');
      fd.append('kind', 'LLM');
      fd.append('usage', usage);
      const res = await fetch(`${board.url}/api/submissions`, { method: 'POST', body: fd });
      const body = (await res.json()) as { code: string; error: string };
      expect([res.status, body.code, body.error]).toEqual([
        400,
        'INVALID_METADATA',
        expect.stringContaining(why),
      ]);
    }
  });

  it('answers a broken upload with every problem, as eval prints them, and exit 1', async () => {
    const dir = writeFixturePredictions(DATA, tmp());
    writeFileSync(join(dir, 'RuMedNLI.jsonl'), '{"pairID": "nope", "prediction": "entailment"}\n{"pairID": ');
    const r = await rumedbench(
      'submit',
      dir,
      '--server',
      board.url,
      '--model',
      'broken',
      '--kind',
      'baseline',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('RuMedNLI.jsonl:1 (id nope)');
    expect(r.stderr).toContain('[UNKNOWN_ID]');
    expect(r.stderr).toContain('[MALFORMED_JSON]');
  });

  it('names a server it cannot reach (exit 2), and one that is not a leaderboard', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => closed.once('listening', r));
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const dir = writeFixturePredictions(DATA, tmp());
    const r = await rumedbench('submit', dir, '--server', `http://127.0.0.1:${port}`);
    expect([r.code, r.stderr]).toEqual([
      2,
      expect.stringContaining('could not reach the leaderboard after 5 attempts'),
    ]);
    const html = createServer((_, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hi</h1>'),
    );
    html.listen(0, '127.0.0.1');
    await new Promise((res) => html.once('listening', res));
    const h = await rumedbench(
      'submit',
      dir,
      '--server',
      `http://127.0.0.1:${(html.address() as AddressInfo).port}`,
    );
    html.close();
    expect([h.code, h.stderr]).toEqual([2, expect.stringContaining("not the leaderboard's JSON")]);
  });

  it('prints a hostile server answer as text (no terminal escapes), and never a password given in --server', async () => {
    const hostile = createServer((_, res) =>
      res.writeHead(201, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'x\u001b[2J',
          status: 'scored\u001b[1A\rscored 99.9',
          board: 'public',
          overall: 12.5,
          result: { tasks: {} },
        }),
      ),
    );
    hostile.listen(0, '127.0.0.1');
    await new Promise((res) => hostile.once('listening', res));
    const port = (hostile.address() as AddressInfo).port;
    const dir = writeFixturePredictions(DATA, tmp());
    const r = await rumedbench('submit', dir, '--server', `http://127.0.0.1:${port}`);
    expect(r.code).toBe(0);
    expect([r.stdout.includes('\u001b'), r.stdout.includes('\r')]).toEqual([false, false]);
    expect(r.stdout).toContain('scored\uFFFD[1A\uFFFDscored 99.9 on the public board');
    const secret = await rumedbench('submit', dir, '--server', `http://team:hunter2-pass@127.0.0.1:${port}`);
    hostile.close();
    expect([secret.code, secret.stderr]).toEqual([
      2,
      expect.stringContaining('must not carry a user name or password'),
    ]);
    expect(`${secret.stdout}${secret.stderr}`).not.toContain('hunter2-pass');
  });

  it('prints scores on hidden gold as the Ladder released them, and the six-task overall', async () => {
    // The answer a board holding ECG2Pathology gives (src/server/submissions/service.ts), as the protocol has it.
    const board = createServer((_, res) =>
      res.writeHead(201, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'e1',
          status: 'scored',
          board: 'public',
          overall: 55.27,
          result: {
            tasks: { RuMedDaNet: { score: 50, metrics: { accuracy: 50 } } },
            overall_six: { score: 46.47, ci: null },
          },
          ladder: { mechanism: 'ladder', improved: false, tasks: ['ECG2Pathology'], released: 2.5 },
        }),
      ),
    );
    board.listen(0, '127.0.0.1');
    await new Promise((res) => board.once('listening', res));
    const port = (board.address() as AddressInfo).port;
    const r = await rumedbench(
      'submit',
      writeFixturePredictions(DATA, tmp()),
      '--server',
      `http://127.0.0.1:${port}`,
    );
    board.close();
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "ECG2Pathology 2.50 (released by the Ladder: the team's best so far)\noverall 55.27\n",
    );
    expect(r.stdout).toContain("overall of six tasks (MedBench's, with ECG2Pathology) 46.47");
  });

  it('plan run --submit sends each finished cell', async () => {
    const dir = tmp();
    const plan = join(dir, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'name: submitted',
        'tasks: [RuMedDaNet]',
        `data: ${DATA}`,
        'defaults: {bootstrap: 0}',
        'models:',
        `  - {name: planned, provider: openai, base_url: "${model.url}", model: planned-1}`,
        'matrix: {seed: [1, 2]}',
      ].join('\n'),
    );
    const out = join(dir, 'out');
    await rumedbenchOk('plan', 'run', plan, '--out', out, '--submit', board.url);
    const summary = (await import(join(out, 'summary.json'), { with: { type: 'json' } })).default as {
      cells: { cell: string; submission?: { status: string; id: string } }[];
    };
    expect(summary.cells.map((c) => [c.cell, c.submission?.status])).toEqual([
      ['planned/seed=1', 'scored'],
      ['planned/seed=2', 'scored'],
    ]);
    const ids = (await entries()).filter((e) => e.model === 'planned-1').map((e) => e.id);
    expect(ids.sort()).toEqual(summary.cells.map((c) => c.submission?.id).sort());
  });
});

describe('submit against a busy board (a loopback server answering 503 and 429 without Retry-After)', () => {
  it.each([503, 429])(
    'waits longer and longer on %i, the first wait ≥ 0.25 s, then lands',
    async (status) => {
      const times: number[] = [];
      const busy = createServer((req, res) => {
        times.push(performance.now());
        req.resume();
        req.on('end', () => {
          if (times.length <= 3) res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
          else
            res
              .writeHead(200, { 'content-type': 'application/json' })
              .end('{"status":"scored","id":"s-1","board":"public"}');
        });
      });
      await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
      try {
        const dir = writeFixturePredictions(DATA, tmp());
        const r = await rumedbench(
          'submit',
          dir,
          '--server',
          `http://127.0.0.1:${(busy.address() as AddressInfo).port}`,
        );
        expect(r.code).toBe(0);
        const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
        expect(gaps).toHaveLength(3);
        expect(gaps[0]).toBeGreaterThanOrEqual(245);
        expect(gaps[1]).toBeGreaterThanOrEqual(495);
        expect(gaps[2]).toBeGreaterThanOrEqual(995);
        expect(r.stderr).toContain(`HTTP ${status}; retrying in`);
      } finally {
        busy.close();
      }
    },
  );
});
