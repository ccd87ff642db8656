/**
 * The answer writer: an answer's promise resolves only once its row has landed, so a job counts as done only after
 * every one of its answers is in the database, and an answer that was ok is never overwritten. Attacked with a
 * database that is slow, that refuses one row of a batch, and with a key answered twice in one batch; its batching
 * (#64): a batch goes once `flushRows` answers wait, an answer waits no longer than `waitMs`, and a job's last
 * answers go at once (`flushNow`).
 */
import { describe, expect, it } from 'vitest';
import type { JournalEntry } from '../llm/journal.js';
import { AnswerWriter } from './answers.js';

const entry = (key: string, status = 'ok'): JournalEntry => ({ key, status }) as unknown as JournalEntry;
const row = (key: string, status = 'ok') => ({
  plan: 'p',
  cell: 'c',
  entry: entry(key, status),
  worker: 'w',
});

/** A database that holds each statement until told, and records the rows of each. */
function slowDb(refuse?: (keys: string[]) => boolean) {
  const statements: string[][] = [];
  const waiting: (() => void)[] = [];
  const query = (_text: string, values: unknown[]) => {
    const keys = values[2] as string[];
    statements.push(keys);
    return new Promise<void>((resolve, reject) =>
      waiting.push(() =>
        refuse?.(keys) ? reject(Object.assign(new Error('refused'), { code: '22P05' })) : resolve(),
      ),
    );
  };
  const land = () => {
    for (const f of waiting.splice(0)) f();
  };
  return { statements, query, land };
}

const refusedData = (e: unknown) => (e as { code?: string }).code === '22P05';
const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe('AnswerWriter', () => {
  it('an answer resolves only once its statement has landed; what arrives meanwhile shares the next statement', async () => {
    const db = slowDb();
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 5 });
    const landed: string[] = [];
    const first = w.write(row('a')).then(() => landed.push('a'));
    await tick();
    expect(db.statements).toEqual([['a']]);
    const rest = ['b', 'c', 'd'].map((k) => w.write(row(k)).then(() => landed.push(k)));
    await tick();
    // Nothing lands before the database says so; the three wait for the first statement, then go as one.
    expect(landed).toEqual([]);
    expect(db.statements).toEqual([['a']]);
    db.land();
    await first;
    await tick();
    expect(landed).toEqual(['a']);
    expect(db.statements).toEqual([['a'], ['b', 'c', 'd']]);
    db.land();
    await Promise.all(rest);
    expect(landed.sort()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a key answered twice in one batch goes in the next statement (ON CONFLICT touches a row once per statement)', async () => {
    const db = slowDb();
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 5 });
    const all = Promise.all([w.write(row('a', 'error')), w.write(row('b')), w.write(row('a'))]);
    await tick();
    expect(db.statements).toEqual([['a', 'b']]);
    db.land();
    await tick();
    expect(db.statements).toEqual([['a', 'b'], ['a']]);
    db.land();
    await all;
  });

  it('a row the database refuses fails alone: the others of its batch land', async () => {
    const db = slowDb((keys) => keys.includes('bad'));
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 5 });
    const results = ['a', 'bad', 'c'].map((k) =>
      w.write(row(k)).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    for (let i = 0; i < 5; i++) {
      await tick();
      db.land();
    }
    expect(await Promise.all(results)).toEqual(['ok', 'refused', 'ok']);
    expect(db.statements).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });

  it('any other failure (the database gone) fails every answer of the batch: none counts as written', async () => {
    const w = new AnswerWriter(() => Promise.reject(new Error('connection terminated')), refusedData, {
      waitMs: 5,
    });
    const results = ['a', 'b'].map((k) =>
      w.write(row(k)).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    expect(await Promise.all(results)).toEqual(['connection terminated', 'connection terminated']);
  });

  it('a batch goes as soon as flushRows answers wait, not at the end of the wait', async () => {
    const db = slowDb();
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 60_000, flushRows: 3 });
    const all = ['a', 'b', 'c', 'd'].map((k) => w.write(row(k)));
    await tick();
    // The fourth waits for the first statement, then for two more answers or the wait's end.
    expect(db.statements).toEqual([['a', 'b', 'c']]);
    db.land();
    await tick();
    expect(db.statements).toEqual([['a', 'b', 'c']]);
    const more = ['e', 'f'].map((k) => w.write(row(k)));
    await tick();
    expect(db.statements).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e', 'f'],
    ]);
    db.land();
    await Promise.all([...all, ...more]);
  });

  it('an answer waits for others no longer than waitMs', async () => {
    const db = slowDb();
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 500, flushRows: 100 });
    const t0 = performance.now();
    const a = w.write(row('a'));
    await tick(30);
    const b = w.write(row('b'));
    await tick(10);
    expect(db.statements).toEqual([]);
    await tick(600);
    // Both in the statement the first answer's wait ended with; the second waited less.
    expect(db.statements).toEqual([['a', 'b']]);
    db.land();
    await Promise.all([a, b]);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(499);
  });

  it("flushNow (a job's last request sent) writes what waits at once, or as soon as the write on its way lands", async () => {
    const db = slowDb();
    const w = new AnswerWriter(db.query, refusedData, { waitMs: 60_000, flushRows: 100 });
    const a = w.write(row('a'));
    w.flushNow();
    await tick();
    expect(db.statements).toEqual([['a']]);
    const b = w.write(row('b'));
    w.flushNow();
    await tick();
    expect(db.statements).toEqual([['a']]);
    db.land();
    await a;
    await tick();
    expect(db.statements).toEqual([['a'], ['b']]);
    db.land();
    await b;
    // Nothing waits: a flushNow then sends nothing.
    w.flushNow();
    await tick();
    expect(db.statements).toEqual([['a'], ['b']]);
  });
});
