import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';
import { chatPromptTokens, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { query, startWorker, type WorkerProcess, waitFor } from '../helpers/workers.js';

const DATA = fixtureDataDir();
const PRICES = { prompt: 10, completion: 30 };
/**
 * Each request's ceiling is its counted prompt (a few hundred tokens at $10 per million) and 64 completion tokens
 * at $30: under half a cent. The server adds 5,000 prompt tokens it never counted: $0.05 more, ten times that.
 */
const HIDDEN = 5_000;
const MAX_TOKENS = 64;
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function pricedServer(delayMs: number): Promise<FakeOpenAI> {
  const s = await startFakeOpenAI({
    reply: (body) => (/«да» или «нет»/.test(body.messages.at(-1)?.content ?? '') ? 'Ответ: да' : 'Ответ: 1'),
    behaviour: () => ({ kind: 'ok', delayMs }),
    hiddenPromptTokens: HIDDEN,
    prices: PRICES,
  });
  servers.push(s);
  return s;
}

/** The most any one request of `s` was billed: what one request in flight may add past the budget. */
const dearest = (s: FakeOpenAI): number =>
  Math.max(
    ...s.requests.map(
      (r) => ((chatPromptTokens(r.body.messages) + HIDDEN) * PRICES.prompt + 8 * PRICES.completion) / 1e6,
    ),
  );

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-budget-'));

function writePlan(url: string, maxCost: number, extra = ''): string {
  const file = join(tmp(), 'plan.yaml');
  writeFileSync(
    file,
    [
      'name: budget',
      'split: test',
      'tasks: [RuMedDaNet, RuMedNLI]',
      `data: ${DATA}`,
      `defaults: {temperature: 0, max_tokens: ${MAX_TOKENS}, concurrency: 2, bootstrap: 0}`,
      'models:',
      `  - {name: m, provider: openai, base_url: "${url}", model: fake-m, prices: {prompt: ${PRICES.prompt}, completion: ${PRICES.completion}}, max_cost: ${maxCost}${extra}}`,
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * What every door says once the budget stopped a run: the engine's one loop (src/engine/loop.ts), in its store's words
 * (the run and `--max-cost` for a folder, the cell and `max_cost` for the queue).
 */
const stoppedBy = (what: string, flag: string, max: string) =>
  new RegExp(
    `${what} has cost \\$[\\d.]+ by the server's token counts, reaching ${flag} \\$${max}: nothing more was sent \\(\\d+ prompt \\+ \\d+ completion tokens`,
  );

describe('max_cost on the doors of one process (fixture data)', () => {
  it('llm, run and plan run each stop at the budget, the server billing at most the budget and what was in flight', async () => {
    const max = 1;
    // llm: 2 requests in flight.
    const a = await pricedServer(20);
    const out = tmp();
    const llm = await rumedbench(
      'llm',
      ...['--model', 'fake-m', '--base-url', a.url, '--data', DATA, '--no-progress', '--out', out],
      ...['--tasks', 'RuMedDaNet,RuMedNLI', '--bootstrap', '0', '--max-tokens', String(MAX_TOKENS)],
      ...[
        '--price-prompt',
        '10',
        '--price-completion',
        '30',
        '--max-cost',
        String(max),
        '--concurrency',
        '2',
      ],
    );
    expect(llm.code, llm.stderr).toBe(3);
    expect(llm.stderr).toMatch(stoppedBy('the run', '--max-cost', '1\\.00'));
    expect(a.billed()).toBeGreaterThanOrEqual(max);
    expect(a.billed()).toBeLessThanOrEqual(max + 2 * dearest(a));
    expect(a.requests.length).toBeLessThan(120);

    // run: the same run from a spec file.
    const b = await pricedServer(20);
    const spec = join(tmp(), 'spec.json');
    writeFileSync(
      spec,
      JSON.stringify({
        schema: 'rumedbench.run/1',
        kind: 'llm',
        provider: { name: 'openai', model: 'fake-m', base_url: b.url },
        tasks: ['RuMedDaNet', 'RuMedNLI'],
        data: DATA,
        max_tokens: MAX_TOKENS,
        concurrency: 2,
        bootstrap: 0,
        prices: PRICES,
        max_cost: max,
      }),
    );
    const run = await rumedbench('run', spec, '--out', tmp(), '--no-progress');
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toMatch(/reaching --max-cost \$1/);
    expect(b.billed()).toBeGreaterThanOrEqual(max);
    expect(b.billed()).toBeLessThanOrEqual(max + 2 * dearest(b));

    // plan run: the cell fails with the reason; 2 requests in flight.
    const c = await pricedServer(20);
    const planOut = tmp();
    const plan = await rumedbench('plan', 'run', writePlan(c.url, max), '--out', planOut);
    expect(plan.code).not.toBe(0);
    expect(plan.stderr).toMatch(/m\/default/);
    expect(plan.stderr).toMatch(/reaching --max-cost \$1/);
    expect(c.billed()).toBeGreaterThanOrEqual(max);
    expect(c.billed()).toBeLessThanOrEqual(max + 2 * dearest(c));
  });
});

describe.skipIf(!PG_URL)('max_cost on queue workers (PostgreSQL)', () => {
  it('4 workers, one SIGKILLed mid-run: the server bills at most the budget and what was in flight; the cell fails naming what was spent', async () => {
    const db = await freshDatabase('postgres');
    const s = await pricedServer(150);
    const max = 2;
    const file = writePlan(s.url, max);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '10')).stdout.trim();
    const concurrency = 2;
    const workers = ['b1', 'b2', 'b3', 'b4'].map((n) =>
      startWorker(db, n, ['--exit-when-idle', '--concurrency', String(concurrency)]),
    );
    // A worker that has written answers and holds a job: killed with its requests in flight.
    const victim = await waitFor('a worker mid-job', async () => {
      const rows = await query<{ name: string }>(
        db,
        `SELECT w.name FROM rumedbench_runs.claims c JOIN rumedbench_runs.workers w ON w.id = c.worker_id
         JOIN rumedbench_runs.answers a ON a.worker = w.name
         WHERE c.job_id IS NOT NULL GROUP BY w.name HAVING count(*) >= 2 LIMIT 1`,
      );
      return rows[0]?.name;
    });
    const killed = workers.find((w) => w.name === victim) as WorkerProcess;
    killed.child.kill('SIGKILL');
    expect((await killed.exited).signal).toBe('SIGKILL');
    const others = workers.filter((w) => w !== killed);
    const exits = await Promise.all(others.map((w) => w.exited));
    expect(
      exits.map((e) => e.code),
      others.map((w) => w.log()).join('\n'),
    ).toEqual([0, 0, 0]);

    // At most every worker's requests in flight when the budget was reached, each at the most one was billed.
    const inFlight = workers.length * concurrency;
    expect(s.billed()).toBeGreaterThanOrEqual(max);
    expect(s.billed()).toBeLessThanOrEqual(max + inFlight * dearest(s));
    expect(s.requests.length).toBeLessThan(120);

    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { cell: string; status: string; error?: string }[];
    };
    expect(status.status).toBe('failed');
    expect(status.cells.map((c) => [c.cell, c.status])).toEqual([['m/default', 'failed']]);
    // Stopped as a request's reservation was refused, or as a job found the rest could not fit what was left.
    expect(status.cells[0]?.error).toMatch(
      /^m\/default (has cost \$[\d.]+ by the server's token counts, reaching max_cost \$2\.00: nothing more was sent \((\$[\d.]+ of it for this worker's )?\d+ prompt \+ \d+ completion tokens|would cost up to \$[\d.]+ for the \d+ request\(s\) of m\/default not answered yet .*, after the \$[\d.]+ the cell's workers have spent: more than max_cost \$2\.00)/,
    );
    // One picture: the cell's dollars, and the share of them this worker's tokens are, adding up.
    const share =
      /has cost \$([\d.]+) .*\(\$([\d.]+) of it for this worker's (\d+) prompt \+ (\d+) completion tokens, the other \$([\d.]+) by the cell's other jobs and workers/.exec(
        status.cells[0]?.error ?? '',
      );
    if (share) {
      const [cellUsd = 0, mine = 0, prompt = 0, completion = 0, others = 0] = share.slice(1).map(Number);
      expect(mine + others).toBeCloseTo(cellUsd, 2);
      expect(mine).toBeCloseTo((prompt * PRICES.prompt + completion * PRICES.completion) / 1e6, 2);
    }
    // The queue's ledger says what the server billed, less what the killed worker had in flight.
    const [money] = await query<{ spent: number }>(
      db,
      'SELECT spent_usd AS spent FROM rumedbench_runs.cells WHERE plan_id = $1',
      [id],
    );
    expect(money?.spent).toBeLessThanOrEqual(s.billed() + 1e-9);
    expect(money?.spent).toBeGreaterThan(s.billed() - concurrency * dearest(s) - 1e-9);
  });
});

describe.skipIf(!PG_URL)('max_cost on a batch cell run by a worker (PostgreSQL)', () => {
  it('a batch whose replies report more than the budget: the cell fails naming what was spent, and is not scored', async () => {
    const db = await freshDatabase('postgres');
    const s = await pricedServer(0);
    // The estimate at the batch price (half) is about $0.25: within $1; the replies report ten times as much.
    const file = writePlan(s.url, 1, ', batch: true, batch_poll: 0.05');
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const w = startWorker(db, 'b1', ['--exit-when-idle']);
    expect((await w.exited).code, w.log()).toBe(0);
    expect(s.batches()).toHaveLength(1);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      cells: { cell: string; status: string; error?: string }[];
    };
    expect(status.cells.map((c) => [c.cell, c.status])).toEqual([['m/default', 'failed']]);
    expect(status.cells[0]?.error).toMatch(
      /^m\/default has cost \$[\d.]+ by its batch replies' token counts, past max_cost \$1\.00/,
    );
    const [money] = await query<{ spent: number }>(
      db,
      'SELECT spent_usd AS spent FROM rumedbench_runs.cells WHERE plan_id = $1',
      [id],
    );
    // What the replies reported, at the batch price.
    expect(money?.spent).toBeCloseTo(s.billed() / 2, 9);
  });
});

if (!PG_URL) describe('max_cost on queue workers', () => it.skip(NO_PG_REASON, () => {}));
