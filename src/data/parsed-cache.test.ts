import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataInvalidError } from '../errors.js';
import { getTask } from '../tasks/registry.js';
import { loadSplit, readGoldLabels } from './load.js';
import { cachedParse, PARSED_CACHE_ENV } from './parsed-cache.js';

const task = getTask('RuMedDaNet');
const line = (id: string, answer: string) =>
  JSON.stringify({ pairID: id, context: 'Контекст.', question: 'Вопрос?', answer });

let cache: string;
let data: string;
let saved: string | undefined;
const file = () => join(data, 'RuMedDaNet', 'test_v1.jsonl');
const entries = () => readdirSync(cache).filter((f) => f.endsWith('.json'));
/** Rewrites the data file and gives it back its size and modification time, as a careless copy (`cp -p`) could. */
function rewrite(text: string): void {
  const before = statSync(file());
  writeFileSync(file(), text);
  expect(statSync(file()).size).toBe(before.size);
  utimesSync(file(), before.atime, before.mtime);
}

beforeEach(() => {
  cache = mkdtempSync(join(tmpdir(), 'rumedbench-parsed-'));
  data = mkdtempSync(join(tmpdir(), 'rumedbench-data-'));
  mkdirSync(join(data, 'RuMedDaNet'));
  writeFileSync(file(), `${line('a', 'да')}\n${line('b', 'нет')}\n`);
  saved = process.env[PARSED_CACHE_ENV];
  process.env[PARSED_CACHE_ENV] = cache;
});
afterEach(() => {
  if (saved === undefined) delete process.env[PARSED_CACHE_ENV];
  else process.env[PARSED_CACHE_ENV] = saved;
});

const golds = async () =>
  (await loadSplit(task, 'test', { dataDir: data })).map((r) => [r.id, r.gold, r.line]);

describe('the parsed-data cache', () => {
  it('a cached value is used only for the very bytes it was computed from, read by the same rules', async () => {
    let computed = 0;
    const how = {
      compute: () => ++computed,
      encode: (v: number) => v,
      decode: (j: unknown) => j as number,
    };
    const kind = { name: 'x', rules: { a: 1 } };
    expect(await cachedParse(Buffer.from('one'), kind, how, cache)).toBe(1);
    expect(await cachedParse(Buffer.from('one'), kind, how, cache)).toBe(1);
    expect(await cachedParse(Buffer.from('two'), kind, how, cache)).toBe(2);
    expect(await cachedParse(Buffer.from('two'), { ...kind, rules: { a: 2 } }, how, cache)).toBe(3);
    expect(await cachedParse(Buffer.from('two'), { ...kind, rules: { a: /x/ } }, how, cache)).toBe(4);
    expect(await cachedParse(Buffer.from('two'), { ...kind, rules: { a: /y/ } }, how, cache)).toBe(5);
    expect(computed).toBe(5);
    // One entry per kind: the older ones are never read again, and are gone.
    expect(entries()).toHaveLength(1);
  });

  it('loads the same records from the cache as from the file', async () => {
    const fresh = await loadSplit(task, 'test', { dataDir: data });
    expect(entries()).toEqual([expect.stringMatching(/^RuMedDaNet\.test\.records\.[0-9a-f]{32}\.json$/)]);
    expect(await loadSplit(task, 'test', { dataDir: data })).toEqual(fresh);
    process.env[PARSED_CACHE_ENV] = 'off';
    expect(await loadSplit(task, 'test', { dataDir: data })).toEqual(fresh);
  });

  it('keeps only the fields asked for, the same from the file and from the cache, apart from the whole records', async () => {
    const whole = await loadSplit(task, 'test', { dataDir: data });
    const fields = ['pairID', 'answer'];
    const fresh = await loadSplit(task, 'test', { dataDir: data, fields });
    expect(fresh).toEqual(whole.map((r) => ({ ...r, raw: { pairID: r.id, answer: r.gold } })));
    expect(await loadSplit(task, 'test', { dataDir: data, fields })).toEqual(fresh);
    expect(entries()).toHaveLength(2);
    process.env[PARSED_CACHE_ENV] = 'off';
    expect(await loadSplit(task, 'test', { dataDir: data, fields })).toEqual(fresh);
    expect(await loadSplit(task, 'test', { dataDir: data })).toEqual(whole);
  });

  it('keeps the entries of two kinds whose names share a prefix: neither evicts the other', async () => {
    const fields = ['pairID', 'answer'];
    const inodes = () => Object.fromEntries(entries().map((f) => [f, statSync(join(cache, f)).ino]));
    await loadSplit(task, 'test', { dataDir: data, fields });
    await loadSplit(task, 'test', { dataDir: data });
    const written = inodes();
    expect(Object.keys(written)).toHaveLength(2);
    await loadSplit(task, 'test', { dataDir: data, fields });
    await loadSplit(task, 'test', { dataDir: data });
    // Read, not written again (a rename would give a new inode).
    expect(inodes()).toEqual(written);
  });

  it('never answers a changed data file from a stale entry, even with its size and time kept', async () => {
    expect(await golds()).toEqual([
      ['a', 'да', 1],
      ['b', 'нет', 2],
    ]);
    rewrite(`${line('a', 'да')}\n${line('c', 'нет')}\n`);
    expect(await golds()).toEqual([
      ['a', 'да', 1],
      ['c', 'нет', 2],
    ]);
  });

  it('checks a damaged data file every time: its errors are never hidden by an entry of the good one', async () => {
    await golds();
    rewrite(`${line('a', 'да')}\n${line('b', 'ну!!')}\n`);
    await expect(loadSplit(task, 'test', { dataDir: data })).rejects.toBeInstanceOf(DataInvalidError);
    await expect(loadSplit(task, 'test', { dataDir: data })).rejects.toBeInstanceOf(DataInvalidError);
  });

  it('passes over a damaged entry (a changed answer, a truncated file) and writes it again', async () => {
    await golds();
    const entry = join(cache, entries()[0] as string);
    const good = readFileSync(entry, 'utf8');
    // Still valid JSON, one answer changed: the payload's digest tells.
    writeFileSync(entry, good.replace('"нет"', '"да"'));
    expect(await golds()).toEqual([
      ['a', 'да', 1],
      ['b', 'нет', 2],
    ]);
    expect(readFileSync(entry, 'utf8')).toBe(good);
    writeFileSync(entry, good.slice(0, good.length - 10));
    expect(await golds()).toEqual([
      ['a', 'да', 1],
      ['b', 'нет', 2],
    ]);
    expect(readFileSync(entry, 'utf8')).toBe(good);
  });

  it('stores no record that JSON would not carry back as it was read', async () => {
    writeFileSync(file(), `${line('a', 'да').replace('}', ',"extra":1e999}')}\n`);
    const records = await loadSplit(task, 'test', { dataDir: data });
    expect(records[0]?.raw.extra).toBe(Number.POSITIVE_INFINITY);
    expect(entries()).toEqual([]);
  });

  it("keeps a train file's labels, and reads them afresh when the file changes", async () => {
    const top3 = getTask('RuMedTop3');
    mkdirSync(join(data, 'RuMedTop3'));
    const train = join(data, 'RuMedTop3', 'train_v1.jsonl');
    const rec = (id: string, code: string) => JSON.stringify({ idx: id, symptoms: 'Боль.', code });
    writeFileSync(train, `${rec('1', 'A01')}\n${rec('2', 'B02')}\n`);
    expect(await readGoldLabels(top3, 'train', { dataDir: data })).toEqual(new Set(['A01', 'B02']));
    expect(await readGoldLabels(top3, 'train', { dataDir: data })).toEqual(new Set(['A01', 'B02']));
    writeFileSync(train, `${rec('1', 'A01')}\n${rec('2', 'C03')}\n`);
    expect(await readGoldLabels(top3, 'train', { dataDir: data })).toEqual(new Set(['A01', 'C03']));
  });

  it('costs nothing but itself where the folder cannot be written', async () => {
    const blocked = join(cache, 'a-file');
    writeFileSync(blocked, '');
    process.env[PARSED_CACHE_ENV] = join(blocked, 'parsed');
    expect(await golds()).toEqual([
      ['a', 'да', 1],
      ['b', 'нет', 2],
    ]);
  });
});
