/** `rumedbench baseline encoder`, `predict` with saved heads and `predict-encoder`, run as a user runs them. */
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk, rumedbenchWith } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import { tinyBert } from '../helpers/tiny-bert.js';

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

const NER_TAGS = [
  'O',
  ...['ADR', 'DI', 'Drugclass', 'Drugform', 'Drugname', 'Finding'].flatMap((t) => [`B-${t}`, `I-${t}`]),
];

describe.skipIf(!DATA_DIR)(`encoders (${DATA_DIR ? 'data found' : NO_DATA_REASON})`, () => {
  it('baseline encoder: every task answered and scored, deterministic, the second run from the cache, saved heads reload', {
    timeout: 300_000,
  }, async () => {
    const model = tinyBert({ quantized: true });
    const work = mkdtempSync(join(tmpdir(), 'rumedbench-encoder-'));
    const run = async (out: string, ...more: string[]) =>
      JSON.parse(
        (
          await rumedbenchOk(
            'baseline',
            'encoder',
            '--model',
            model,
            '--cache',
            join(work, 'cache'),
            '--out',
            out,
            '--bootstrap',
            '0',
            '--threads',
            '2',
            '--json',
            '--quiet',
            ...more,
          )
        ).stdout,
      );
    const first = await run(join(work, 'a'), '--save', join(work, 'heads'));
    expect(first.evaluation.errors).toEqual([]);
    expect(Object.keys(first.evaluation.tasks).sort()).toEqual([
      'RuMedDaNet',
      'RuMedNER',
      'RuMedSymptomRec',
      'RuMedTop3',
    ]);
    // A random encoder scores near chance, but well-formed: every metric a number in range.
    for (const r of Object.values(first.evaluation.tasks) as { metrics: Record<string, number> }[])
      for (const v of Object.values(r.metrics)) expect(v).toBeGreaterThanOrEqual(0);
    expect(first.runs.find((r: { task: string }) => r.task === 'RuMedNLI').skipped).toMatch(
      /train_v1\.jsonl is missing/,
    );
    expect(first.encoder).toMatchObject({ dtype: 'fp32', pooling: 'mean', maxLength: 128, C: 1 });
    expect(first.encoder.embedding.embedded).toBeGreaterThan(10_000);

    // The platform zip validates: RuMedDaNet and RuMedTest private tests.
    const zip = JSON.parse(
      (await rumedbench('eval', join(work, 'a', 'submission.zip'), '--split', 'private_test', '--json'))
        .stdout,
    );
    expect(zip.errors).toEqual([]);
    expect(Object.keys(zip.unscored).sort()).toEqual(['RuMedDaNet', 'RuMedTest']);

    // Another C: no text embedded again; the same C: byte-identical predictions.
    const second = await run(join(work, 'b'));
    expect(second.encoder.embedding).toMatchObject({ embedded: 0 });
    for (const task of ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNER'])
      expect(readFileSync(join(work, 'b', 'predictions', `${task}.jsonl`), 'utf8')).toBe(
        readFileSync(join(work, 'a', 'predictions', `${task}.jsonl`), 'utf8'),
      );
    const third = await run(join(work, 'c'), '--C', '0.1', '--tasks', 'RuMedDaNet');
    expect(third.encoder.embedding.embedded).toBe(0);

    // Saved heads find their encoder and predict what the run predicted.
    const input = join(work, 'danet-test.jsonl');
    writeFileSync(input, readFileSync(join(DATA_DIR as string, 'RuMedDaNet', 'test_v1.jsonl'), 'utf8'));
    const again = (
      await rumedbenchOk('predict', '--model', join(work, 'heads', 'RuMedDaNet'), '--input', input)
    ).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(again.map((r: { prediction: string }) => r.prediction)).toEqual(
      lines(join(work, 'a', 'predictions', 'RuMedDaNet.jsonl')).map(
        (r: { prediction: string }) => r.prediction,
      ),
    );
    const ner = JSON.parse(
      (
        await rumedbenchOk(
          'predict',
          '--model',
          join(work, 'heads', 'RuMedNER'),
          '--text',
          'Принимал нурофен от боли',
        )
      ).stdout,
    );
    expect(ner.tokens).toEqual(['Принимал', 'нурофен', 'от', 'боли']);
    expect(ner.prediction).toHaveLength(4);

    // The report names the encoder a run's numbers come from.
    await rumedbenchOk('report', join(work, 'a'), '--out', join(work, 'report.html'));
    expect(readFileSync(join(work, 'report.html'), 'utf8')).toContain(
      `a: encoder ${model} (fp32, sha256 ${first.encoder.sha256.slice(0, 12)}…); pooling mean; max length 128; C = 1`,
    );

    // A q8 run is its own cache space.
    const q8 = await run(join(work, 'd'), '--dtype', 'q8', '--tasks', 'RuMedDaNet');
    expect(q8.encoder.embedding.embedded).toBeGreaterThan(0);
    expect(q8.encoder.sha256).not.toBe(first.encoder.sha256);
  });

  it('predict-encoder: sequence and token classification models answer and score; mismatched labels are refused', {
    timeout: 120_000,
  }, async () => {
    const work = mkdtempSync(join(tmpdir(), 'rumedbench-finetuned-'));
    const danet = tinyBert({ head: { kind: 'sequence', labels: ['нет', 'да'] } });
    const r = JSON.parse(
      (
        await rumedbenchOk(
          'predict-encoder',
          '--model',
          danet,
          '--task',
          'RuMedDaNet',
          '--out',
          join(work, 'danet'),
          '--bootstrap',
          '0',
          '--json',
          '--quiet',
        )
      ).stdout,
    );
    expect(r.answered).toEqual({ test: 256, private_test: 512 });
    expect(r.evaluation.errors).toEqual([]);
    expect(r.model.labels).toEqual(['нет', 'да']);
    const zip = JSON.parse(
      (await rumedbench('eval', join(work, 'danet', 'submission.zip'), '--split', 'private_test', '--json'))
        .stdout,
    );
    expect(zip.errors).toEqual([]);

    const ner = tinyBert({ head: { kind: 'token', labels: NER_TAGS } });
    const n = JSON.parse(
      (
        await rumedbenchOk(
          'predict-encoder',
          '--model',
          ner,
          '--task',
          'RuMedNER',
          '--out',
          join(work, 'ner'),
          '--bootstrap',
          '0',
          '--json',
          '--quiet',
        )
      ).stdout,
    );
    expect(n.evaluation.errors).toEqual([]);
    for (const p of lines(join(work, 'ner', 'predictions', 'RuMedNER.jsonl')))
      expect(p.prediction).toHaveLength(p.ner_tags.length);

    const codes = ['M54', 'J06', 'I10', 'K29', 'G43'];
    const top3 = tinyBert({ head: { kind: 'sequence', labels: codes } });
    const t = JSON.parse(
      (
        await rumedbenchOk(
          'predict-encoder',
          '--model',
          top3,
          '--task',
          'RuMedTop3',
          '--out',
          join(work, 'top3'),
          '--bootstrap',
          '0',
          '--json',
          '--quiet',
        )
      ).stdout,
    );
    expect(t.evaluation.errors).toEqual([]);
    for (const p of lines(join(work, 'top3', 'predictions', 'RuMedTop3.jsonl'))) {
      expect(p.prediction).toHaveLength(3);
      for (const c of p.prediction) expect(codes).toContain(c);
    }

    const english = tinyBert({ head: { kind: 'sequence', labels: ['yes', 'no'] } });
    const refused = await rumedbench(
      'predict-encoder',
      '--model',
      english,
      '--task',
      'RuMedDaNet',
      '--out',
      join(work, 'x'),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "the model's labels are not RuMedDaNet's; missing: да, нет; not in the task: yes, no",
    );

    const generic = tinyBert({ head: { kind: 'sequence', labels: ['LABEL_0', 'LABEL_1'] } });
    const hinted = await rumedbench(
      'predict-encoder',
      '--model',
      generic,
      '--task',
      'RuMedDaNet',
      '--out',
      join(work, 'y'),
    );
    expect(hinted.stderr).toContain('give them in output order with --labels');
    const renamed = await rumedbenchOk(
      'predict-encoder',
      '--model',
      generic,
      '--task',
      'RuMedDaNet',
      '--labels',
      'нет,да',
      '--out',
      join(work, 'y'),
      '--bootstrap',
      '0',
      '--json',
      '--quiet',
    );
    expect(JSON.parse(renamed.stdout).model.labels).toEqual(['нет', 'да']);

    const tagsShort = tinyBert({ head: { kind: 'token', labels: ['O', 'B-DRUG', 'I-DRUG'] } });
    const tagged = await rumedbench(
      'predict-encoder',
      '--model',
      tagsShort,
      '--task',
      'RuMedNER',
      '--out',
      join(work, 'z'),
    );
    expect(tagged.stderr).toMatch(/missing: B-ADR, I-ADR, .*; not in the task: B-DRUG, I-DRUG/);

    const badCode = tinyBert({ head: { kind: 'sequence', labels: ['M54', 'back pain'] } });
    const wrongForm = await rumedbench(
      'predict-encoder',
      '--model',
      badCode,
      '--task',
      'RuMedTop3',
      '--out',
      join(work, 'w'),
    );
    expect(wrongForm.stderr).toContain('1 of 2 label(s) are not a three-character ICD-10 code');

    // An encoder without a head has no logits to read.
    const bare = await rumedbench(
      'predict-encoder',
      '--model',
      tinyBert(),
      '--task',
      'RuMedDaNet',
      '--labels',
      'нет,да',
      '--out',
      join(work, 'v'),
    );
    expect(bare.stderr).toContain('no "logits" output (outputs: last_hidden_state)');
  });

  it('a hub id: fetched once from $HF_ENDPOINT (a loopback hub here), then read from the download folder', {
    timeout: 120_000,
  }, async () => {
    const model = tinyBert();
    const requests: string[] = [];
    const hub = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      const m = /^\/someone\/tiny-bert\/resolve\/main\/(.+)$/.exec(req.url ?? '');
      const file = m ? join(model, decodeURIComponent(m[1] as string)) : '';
      if (!m || file.includes('..') || !existsSync(file) || statSync(file).isDirectory()) {
        res.writeHead(404).end('Entry not found');
        return;
      }
      const body = readFileSync(file);
      res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
    });
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
    try {
      const cache = mkdtempSync(join(tmpdir(), 'rumedbench-xdg-'));
      const env = {
        HF_ENDPOINT: `http://127.0.0.1:${(hub.address() as AddressInfo).port}`,
        XDG_CACHE_HOME: cache,
      };
      const args = [
        '--tasks',
        'RuMedDaNet',
        '--bootstrap',
        '0',
        '--json',
        '--quiet',
        '--out',
        join(cache, 'out'),
      ];
      const first = await rumedbenchWith(env, 'baseline', 'encoder', '--model', 'someone/tiny-bert', ...args);
      expect(first.stderr).toBe('');
      expect(JSON.parse(first.stdout).encoder.dir).toBe(
        join(cache, 'rumedbench', 'models', 'someone', 'tiny-bert'),
      );
      expect(requests).toContain('GET /someone/tiny-bert/resolve/main/onnx/model.onnx');
      const asked = requests.length;
      const second = await rumedbenchWith(
        env,
        'baseline',
        'encoder',
        '--model',
        'someone/tiny-bert',
        ...args,
      );
      expect(second.code).toBe(0);
      expect(requests.length).toBe(asked);

      const absent = await rumedbenchWith(env, 'baseline', 'encoder', '--model', 'someone/absent', ...args);
      expect(absent.code).toBe(1);
      expect(absent.stderr).toMatch(
        /^error: someone\/absent: cannot fetch it from http:\/\/127\.0\.0\.1:\d+\/: /,
      );
      const offline = await rumedbenchWith(
        env,
        'baseline',
        'encoder',
        '--model',
        'someone/other',
        '--no-download',
        ...args,
      );
      expect(offline.stderr).toContain('downloading hub models is switched off (--no-download)');
    } finally {
      hub.close();
    }
  });
});
