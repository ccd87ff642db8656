/**
 * The embedding cache: one SQLite file of vectors, keyed by a "space" (model file sha256, pooling, max length,
 * what kind of input) and the sha256 of the input itself. A second run with another head, C or seed embeds
 * nothing; a changed model file, pooling or max length is another space and embeds afresh.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import envPaths from 'env-paths';

/** The embedding cache's folder unless one is given: the user cache folder. */
export function defaultCacheDir(): string {
  return join(envPaths('rumedbench', { suffix: '' }).cache, 'embeddings');
}

export interface EmbeddingCache {
  /** Vectors found for `keys` (by position); undefined where absent. */
  getMany(space: string, keys: readonly Buffer[]): (Float32Array | undefined)[];
  putMany(space: string, entries: readonly { key: Buffer; vector: Float32Array }[]): void;
  close(): void;
}

/** The key of an input, given as its JSON. */
export function cacheKey(json: string): Buffer {
  return createHash('sha256').update(json).digest();
}

export function openEmbeddingCache(file: string): EmbeddingCache {
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL,
    key BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (space, key)
  ) WITHOUT ROWID`);
  const get = db.prepare<[string, Buffer], { vector: Buffer }>(
    'SELECT vector FROM vectors WHERE space = ? AND key = ?',
  );
  const put = db.prepare('INSERT OR REPLACE INTO vectors (space, key, vector) VALUES (?, ?, ?)');
  const putAll = db.transaction(
    (space: string, entries: readonly { key: Buffer; vector: Float32Array }[]) => {
      for (const e of entries)
        put.run(space, e.key, Buffer.from(e.vector.buffer, e.vector.byteOffset, e.vector.byteLength));
    },
  );
  const getAll = db.transaction((space: string, keys: readonly Buffer[]) =>
    keys.map((k) => {
      const row = get.get(space, k);
      if (!row) return undefined;
      // A copy in an aligned buffer of its own (the row's Buffer may sit at any offset of a shared pool).
      const out = new Float32Array(row.vector.byteLength / 4);
      new Uint8Array(out.buffer).set(row.vector);
      return out;
    }),
  );
  return {
    getMany: (space, keys) => getAll(space, keys),
    putMany: (space, entries) => {
      putAll(space, entries);
    },
    close: () => db.close(),
  };
}
