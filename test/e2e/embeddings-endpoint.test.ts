/**
 * `baseline encoder --endpoint`: sentence vectors from an OpenAI-compatible /v1/embeddings server. The loopback
 * server here embeds with the same random BERT that the in-process run uses, so the two runs must predict the same,
 * byte for byte; the vectors land in the embedding cache under the endpoint and model, and a flaky server (429,
 * 500, a dropped connection) costs retries, not answers. RuMedNER needs word vectors and is skipped, saying why.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../src/encoders/embed.js';
import { openEmbedder } from '../../src/encoders/open.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { tinyBert } from '../helpers/tiny-bert.js';

const DATA = fixtureDataDir();
const SINGLE_TEXT_TASKS = 'RuMedTop3,RuMedSymptomRec,RuMedTest';

describe('baseline encoder --endpoint (on fixture data and a random BERT the test writes)', () => {
  const model = tinyBert();
  let embedder: Embedder;
  let server: Server;
  let url = '';
  const seen = { requests: 0, inputs: 0, failures: 0 };
  beforeAll(async () => {
    embedder = await openEmbedder({ model, pooling: 'mean', cacheDir: false });
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', async () => {
        seen.requests++;
        // Every third request fails once in one of the ways servers do; the client retries.
        if (seen.requests % 3 === 0) {
          seen.failures++;
          const how = seen.failures % 3;
          if (how === 0) req.socket.destroy();
          else
            res
              .writeHead(how === 1 ? 429 : 500, { 'content-type': 'application/json', 'retry-after': '0' })
              .end('{"error": {"message": "busy"}}');
          return;
        }
        const { input, model: name } = JSON.parse(body) as { input: string[]; model: string };
        if (name !== 'tiny-bert') {
          res.writeHead(404).end('{"error": "no such model"}');
          return;
        }
        seen.inputs += input.length;
        const vectors = await embedder.embedTexts(input);
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            object: 'list',
            model: name,
            // Out of order on purpose: the index says which input a vector is for.
            data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: [...v] })).reverse(),
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    server?.close();
    await embedder?.close();
  });

  it('predicts as the same vectors computed in process, caches them, and skips RuMedNER saying why', async () => {
    const work = mkdtempSync(join(tmpdir(), 'rumedbench-endpoint-'));
    const common = ['baseline', 'encoder', '--data', DATA, '--bootstrap', '0', '--threads', '2', '--json'];
    await rumedbenchOk(
      ...common,
      '--model',
      model,
      '--tasks',
      SINGLE_TEXT_TASKS,
      '--no-cache',
      '--out',
      join(work, 'here'),
    );
    const cache = join(work, 'cache');
    const remote = await rumedbenchOk(
      ...common,
      ...['--endpoint', url, '--model', 'tiny-bert', '--tasks', `${SINGLE_TEXT_TASKS},RuMedNER`],
      ...['--cache', cache, '--batch-size', '7', '--out', join(work, 'there')],
    );
    const files = (dir: string) => readdirSync(join(dir, 'predictions')).sort();
    expect(files(join(work, 'there'))).toEqual(files(join(work, 'here')));
    for (const f of files(join(work, 'here')))
      expect(readFileSync(join(work, 'there', 'predictions', f), 'utf8')).toBe(
        readFileSync(join(work, 'here', 'predictions', f), 'utf8'),
      );
    expect(readFileSync(join(work, 'there', 'submission.zip'))).toEqual(
      readFileSync(join(work, 'here', 'submission.zip')),
    );
    expect(seen.failures).toBeGreaterThan(0);
    const result = JSON.parse(remote.stdout) as {
      runs: { task: string; skipped?: string }[];
      encoder: { model: string; endpoint: string; embedding: { embedded: number; fromCache: number } };
    };
    expect(result.runs.find((r) => r.task === 'RuMedNER')?.skipped).toContain('heads need one per word');
    expect([result.encoder.model, result.encoder.endpoint]).toEqual(['tiny-bert', url]);
    const summary = JSON.parse(readFileSync(join(work, 'there', 'summary.json'), 'utf8'));
    expect(summary.encoder.endpoint).toBe(url);

    // The second run reads every vector from the cache: nothing is asked of the server.
    const before = seen.inputs;
    const again = await rumedbenchOk(
      ...common,
      ...['--endpoint', url, '--model', 'tiny-bert', '--tasks', SINGLE_TEXT_TASKS, '--cache', cache],
      '--out',
      join(work, 'again'),
    );
    expect(seen.inputs).toBe(before);
    expect(JSON.parse(again.stdout).encoder.embedding.embedded).toBe(0);
  });

  it('refuses what only a model run here takes, and names a model the server does not have', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-endpoint-')), 'x');
    const base = ['baseline', 'encoder', '--data', DATA, '--endpoint', url, '--out', out, '--no-cache'];
    const pooled = await rumedbench(...base, '--model', 'tiny-bert', '--pooling', 'cls');
    expect([pooled.code, pooled.stderr]).toEqual([
      2,
      expect.stringContaining('--pooling: for a model run here'),
    ]);
    const unknown = await rumedbench(...base, '--model', 'other', '--tasks', 'RuMedTest');
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('HTTP 404')]);
  });
});

describe('baseline encoder --endpoint against a busy server (503 and 429 without Retry-After)', () => {
  it('waits longer and longer, the first wait ≥ 0.25 s, and gets its vectors', async () => {
    const times: number[] = [];
    const server = createServer((req, res) => {
      times.push(performance.now());
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        if (times.length <= 3) {
          res.writeHead(times.length === 2 ? 429 : 503, { 'content-type': 'application/json' }).end('{}');
          return;
        }
        const { input } = JSON.parse(body) as { input: string[] };
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: [index + 1, 1] })) }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { EndpointEmbedder } = await import('../../src/encoders/endpoint.js');
      const e = new EndpointEmbedder({
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        model: 'm',
      });
      const v = await e.embedTexts(['а', 'б']);
      expect(v.map((x) => [...x])).toEqual([
        [1, 1],
        [2, 1],
      ]);
      const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
      expect(gaps).toHaveLength(3);
      expect(gaps[0]).toBeGreaterThanOrEqual(245);
      expect(gaps[1]).toBeGreaterThanOrEqual(495);
      expect(gaps[2]).toBeGreaterThanOrEqual(995);
      await e.close();
    } finally {
      server.close();
    }
  });
});

describe('baseline encoder --endpoint against vectors that cannot be paired or are far too wide (#30)', () => {
  type Shape = 'reversed-no-index' | 'all-zero-index' | 'index-plus-1000' | 'wide';
  const cases: { shape: Shape; said: RegExp }[] = [
    {
      shape: 'reversed-no-index',
      said: /vector 0 of 2: no "index"; each vector must say which input it is for \(0…1\)/,
    },
    { shape: 'all-zero-index', said: /two vectors for input 0: the indexes must name each input once/ },
    { shape: 'index-plus-1000', said: /vector 0 of 2: "index" 1000; each vector must say which input/ },
    {
      shape: 'wide',
      said: /input 0: a vector of 200000 dimensions, over --max-dimensions 16384; not read/,
    },
  ];
  it.each(cases)('$shape: exit 1, saying why, nothing predicted', async ({ shape, said }) => {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        const { input } = JSON.parse(body) as { input: string[] };
        const vector = (i: number) => (shape === 'wide' ? new Array(200_000).fill(0.5) : [i + 1, 1]);
        const data = input.map((_, i) =>
          shape === 'reversed-no-index'
            ? { embedding: vector(i) }
            : {
                index: shape === 'all-zero-index' ? 0 : shape === 'index-plus-1000' ? i + 1000 : i,
                embedding: vector(i),
              },
        );
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ data: shape === 'reversed-no-index' ? data.reverse() : data }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const out = join(mkdtempSync(join(tmpdir(), `rumedbench-endpoint-${shape}-`)), 'x');
      const r = await rumedbench(
        ...['baseline', 'encoder', '--data', DATA, '--out', out, '--no-cache', '--tasks', 'RuMedTop3'],
        ...['--endpoint', `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`],
        ...['--model', 'm', '--batch-size', '2', '--bootstrap', '0'],
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(said);
      expect(r.stdout).toBe('');
    } finally {
      server.close();
    }
  });

  it('--max-dimensions is refused for a model run here', async () => {
    const r = await rumedbench(
      ...[
        'baseline',
        'encoder',
        '--data',
        DATA,
        '--model',
        'x',
        '--max-dimensions',
        '10',
        '--tasks',
        'RuMedTop3',
      ],
    );
    expect([r.code, r.stderr]).toEqual([
      2,
      expect.stringContaining('--max-dimensions: for an embeddings endpoint, not a model run here'),
    ]);
  });
});
