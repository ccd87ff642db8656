/**
 * A queued cell run by the engine (./queued.ts) through its port, with no database and no worker: the chunk planned
 * and checked against the data it was queued with, sent through the one loop into the store, then finished into a run
 * folder by the writer `llm` uses. The queue's own store (../workers/queue-store.ts) is attacked through real workers
 * and PostgreSQL in test/e2e/workers.test.ts, worker-faults.test.ts and budget-doors.test.ts.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fixtureLlmSpec, noBatches } from '../../test/helpers/engine-stores.js';
import { memoryMoney } from '../llm/budget.js';
import type { JournalEntry } from '../llm/journal.js';
import type { Provider } from '../llm/provider.js';
import type { Logger } from '../log.js';
import { llmRunPhases, planLlmSpec } from './llm.js';
import { CellPlans, type ChunkInput, finishCell, type QueuedCellStore, runChunk } from './queued.js';
import type { LlmSpec } from './spec.js';

const quiet: Logger = { info() {}, warn() {}, error() {} } as never;

const specOf = () => fixtureLlmSpec({ limit: 6 });

/** A server that answers "да" (or fails with `error`), and counts what it was asked. */
function server(o: { error?: string } = {}) {
  const asked: string[] = [];
  const p: Provider = {
    describe: () => ({ provider: 'openai', model: 'fake-m' }),
    async chat(messages) {
      asked.push(String(messages.at(-1)?.content));
      if (o.error) throw new Error(o.error);
      return { text: 'да', usage: { promptTokens: 50, completionTokens: 1 } };
    },
  };
  return { p, asked };
}

/** A queued cell kept in memory, saying what was done to it. */
function cell(spec: LlmSpec, dataSha: Record<string, string>) {
  const answers = new Map<string, string>();
  const said: string[] = [];
  const stored: { files: string[]; summary?: unknown; manifest?: unknown } = { files: [] };
  let status = 'queued';
  const store: QueuedCellStore = {
    money: memoryMoney(0),
    batches: noBatches(),
    okKeys: async (keys) => new Set(keys.filter((k) => JSON.parse(answers.get(k) ?? '{}').status === 'ok')),
    jobRow: async (keys) => ({
      spec: JSON.stringify(spec),
      status,
      in_flight: 4,
      data_sha256: JSON.stringify(dataSha),
      undescribed: true,
      plan_status: 'running',
      kind: 'plan',
      answered: keys.filter((k) => JSON.parse(answers.get(k) ?? '{}').status === 'ok'),
    }),
    started: async () => {
      said.push('started');
      status = 'running';
    },
    answers: async () => new Map(answers),
    done: async (dir, summary) => {
      said.push('done');
      stored.files = ['summary.json', 'manifest.json', 'journal.jsonl'].filter((f) =>
        existsSync(join(dir, f)),
      );
      stored.summary = summary;
      stored.manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
      status = 'done';
    },
    total: async (n) => void said.push(`total ${n}`),
    fail: async (message) => {
      said.push(`fail: ${message}`);
      status = 'failed';
    },
    requeue: async (keys, round) => {
      said.push(`requeue ${keys.length} round ${round}`);
      return { rounds: 2, delayS: 1 };
    },
    round: async () => 0,
    finishing: async () =>
      status === 'running'
        ? { spec: JSON.stringify(spec), data_sha256: JSON.stringify(dataSha), described: null, wall: 1 }
        : undefined,
    batchIds: async () => [],
    closePlan: async () => void said.push('closePlan'),
    run: (j) => ({
      answers: j.answers,
      batches: store.batches,
      money: store.money,
      kept: async (keys) =>
        keys.map((k) =>
          answers.has(k) ? (JSON.parse(answers.get(k) as string) as JournalEntry) : undefined,
        ),
      left: async (pending, count) => {
        const e = await count(pending);
        return {
          ceilings: new Map(pending.map((r, n) => [r.key, e.each[n] ?? 0])),
          usd: e.usd,
          said: 'left',
        };
      },
      scratch: j.scratch,
      ...(j.fence ? { fence: j.fence } : {}),
      ...(j.slot ? { slot: j.slot } : {}),
      words: {
        flag: 'max_cost',
        what: j.cell,
        spentBy: 'its workers have spent',
        here: "this worker's",
        rest: 'by its other workers',
        advice: 'Raise max_cost.',
        stopped: async () => 'Raise max_cost in the plan.',
      },
    }),
  };
  return { store, answers, said, stored };
}

/** A job of the whole cell (keys null), its answers written to the store at once. */
function job(c: ReturnType<typeof cell>, plans: CellPlans, o: { fenced?: string[] } = {}): ChunkInput {
  return {
    store: c.store,
    plans,
    plan: 'p',
    cell: 'm/default',
    chunk: 0,
    keys: null,
    round: 0,
    inFlight: 2,
    concurrency: 2,
    connect: async () => ({ allowPrivate: false, open: {} }),
    answers: {
      online: { append: (e) => void c.answers.set(e.key, JSON.stringify(e)) },
      batch: { append: (e) => void c.answers.set(e.key, JSON.stringify(e)) },
      landed: async () => undefined,
    },
    fence: async () => void o.fenced?.push('fence'),
    retryFence: async () => {},
    slot: (send) => send(),
    signal: new AbortController().signal,
    who: 'worker w1',
    log: quiet,
  };
}

/** The cells of one worker, each opening `provider` in place of a server. */
const plansWith = (provider: Provider) =>
  new CellPlans({
    who: 'worker w1',
    log: quiet,
    prepare: async (spec) => ({ ...llmRunPhases(spec, { log: quiet }), provider: async () => provider }),
  });

/** The cell finished by worker w1 in a temporary folder, returned (a failure to finish is thrown). */
async function finish(
  c: ReturnType<typeof cell>,
  plans: CellPlans,
  alone?: () => Promise<() => void>,
): Promise<string> {
  const temp = mkdtempSync(join(tmpdir(), 'rumedbench-queued-test-'));
  await finishCell({
    ...(alone ? { alone } : {}),
    store: c.store,
    plans,
    plan: 'p',
    cell: 'm/default',
    finisher: 'w1',
    tempDir: () => temp,
    failed: async (e) => {
      throw e;
    },
    log: quiet,
  });
  return temp;
}

describe('a queued cell run by the engine (runChunk, finishCell)', () => {
  it('plans the cell, sends what has no answer through the store, and finishes it into a run folder', async () => {
    const spec = specOf();
    const planned = await planLlmSpec(spec);
    const c = cell(spec, planned.dataFiles);
    const { p, asked } = server();
    const plans = plansWith(p);
    const fenced: string[] = [];
    const end = await runChunk(job(c, plans, { fenced }));
    expect(end).toMatchObject({ end: 'ended', chunkDone: true, answered: true });
    expect(asked).toHaveLength(planned.requests.length);
    expect(fenced).toHaveLength(planned.requests.length);
    expect([...c.answers.keys()].sort()).toEqual(planned.requests.map((r) => r.key).sort());
    expect(c.said).toEqual([`total ${planned.requests.length}`, 'started']);

    // A job of the same cell taken over later asks nothing already answered.
    expect(await runChunk(job(c, plans))).toMatchObject({ end: 'ended', answered: true });
    expect(asked).toHaveLength(planned.requests.length);

    const temp = await finish(c, plans);
    expect(c.said.slice(-2)).toEqual(['done', 'closePlan']);
    expect(c.stored.files).toEqual(['summary.json', 'manifest.json', 'journal.jsonl']);
    // The writer `llm` finishes a folder with: the manifest names the plan and the cell.
    expect(c.stored.summary).toMatchObject({ llm: { requests: { total: planned.requests.length } } });
    expect(c.stored.manifest).toMatchObject({ plan_id: 'p', cell: 'm/default', spec: { kind: 'llm' } });
    expect(existsSync(temp)).toBe(false);
  });

  it('refuses a cell whose data differ from those it was queued with, before any request', async () => {
    const spec = specOf();
    const planned = await planLlmSpec(spec);
    const [first] = Object.keys(planned.dataFiles);
    const c = cell(spec, { ...planned.dataFiles, [first as string]: '0'.repeat(64) });
    const { p, asked } = server();
    const end = await runChunk(job(c, plansWith(p)));
    expect(end).toMatchObject({ end: 'ended', chunkDone: false, answered: false });
    expect(asked).toEqual([]);
    expect(c.said).toHaveLength(1);
    expect(c.said[0]).toMatch(
      new RegExp(
        `^fail: worker w1: its data differ from those the plan was queued with \\(${first}; data folder `,
      ),
    );
  });

  it('puts what failed for a reason that passes back for another round instead of finishing', async () => {
    const spec = specOf();
    const planned = await planLlmSpec(spec);
    const c = cell(spec, planned.dataFiles);
    const plans = plansWith(server({ error: 'HTTP 503 from the server' }).p);
    await runChunk(job(c, plans));
    await finish(c, plans);
    expect(c.said).toContain(`requeue ${planned.requests.length} round 1`);
    expect(c.said).not.toContain('done');
  });

  it('lets the worker claim nothing while it scores a cell: `alone` once the cell is taken, before its answers are read, ended after (#64)', async () => {
    const spec = specOf();
    const planned = await planLlmSpec(spec);
    for (const error of [undefined, 'HTTP 503 from the server']) {
      const c = cell(spec, planned.dataFiles);
      const read = c.store.answers;
      c.store.answers = () => {
        c.said.push('answers');
        return read();
      };
      const plans = plansWith(server(error ? { error } : {}).p);
      await runChunk(job(c, plans));
      const alone = async () => {
        c.said.push('alone');
        return () => void c.said.push('alone ended');
      };
      await finish(c, plans, alone);
      // Finished into a run folder, or its failures put back for another round: the hold ends either way.
      expect(c.said.slice(2)).toEqual(
        error
          ? ['alone', 'answers', `requeue ${planned.requests.length} round 1`, 'alone ended']
          : ['alone', 'answers', 'done', 'alone ended', 'closePlan'],
      );
    }
    // A cell another worker finished (or with jobs left) is not taken: nothing is held.
    const c = cell(spec, planned.dataFiles);
    const said: string[] = [];
    await finish(c, plansWith(server().p), async () => {
      said.push('alone');
      return () => {};
    });
    expect(said).toEqual([]);
  });

  it('is what the worker calls: worker.ts neither plans, sends nor finishes a cell itself', () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const worker = readFileSync(join(here, '../workers/worker.ts'), 'utf8');
    expect(worker).toMatch(/runChunk\(/);
    expect(worker).toMatch(/finishCell\(/);
    expect(worker).not.toMatch(
      /sendRun\(|\.requests\(|\.finish\(|finishRun|Journal\.open|batchSettingsOf|pricesOf|llmRunPhases|specOfRow/,
    );
    // The Worker class was 1,195 lines when issue #58 was filed: a thin caller is under half of it.
    const lines = worker.split('\n');
    const from = lines.findIndex((l) => l.startsWith('export class Worker'));
    const to = lines.findIndex((l, n) => n > from && l === '}');
    expect(to - from + 1).toBeLessThan(598);
  });
});
