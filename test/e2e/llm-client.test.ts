/**
 * The LLM client's second round (#30), each case against a real loopback server, through the CLI in process: a dead,
 * hanging or dying endpoint stops the run (the circuit breaker); echoes, cut-off and filtered replies are never
 * scored as answers; no secret reaches a run folder or stderr; impossible log-probabilities fail with the real reason;
 * absurd usage counts for nothing; the contamination probe refuses a context too small before tokenizing everything.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Misbehaviour, useBrokenServers } from '../helpers/broken-openai.js';
import { rumedbenchWith } from '../helpers/cli.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { keyForms } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();

const start = useBrokenServers();

const KEY = 'sk-test-Zq81-very-secret-key';
const HEADER_SECRET = 'azure-key-Xw77-also-secret';
const ENV = { RB_TEST_KEY: KEY, RB_TEST_HEADER: HEADER_SECRET };

const cli = (...args: string[]) => rumedbenchWith(ENV, ...args);
const tempDir = (label: string) => mkdtempSync(join(tmpdir(), `rumedbench-client-${label}-`));

/** A plan file of these lines in a folder of its own. */
function planFile(label: string, lines: string[]): { dir: string; file: string } {
  const dir = tempDir(label);
  const file = join(dir, 'plan.yaml');
  writeFileSync(file, [...lines, ''].join('\n'));
  return { dir, file };
}

/** An `llm` run on the fixture data; settings are the defaults unless `more` says otherwise. */
const llm = (url: string, out: string, ...more: string[]) =>
  cli(
    'llm',
    ...['--model', 'fake-1', '--base-url', url, '--out', out, '--data', DATA],
    ...['--bootstrap', '0', '--no-progress'],
    ...more,
  );

/** Every file of a folder, as text. */
function folderText(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile())
    .map((f) => readFileSync(f, 'latin1') + readFileSync(f, 'utf8'))
    .join('\n');
}

const samplesOf = (out: string) =>
  readFileSync(join(out, 'samples.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { flag?: string; finish_reason?: string; status: string; reason?: string });

/** A port where nothing listens: a server is opened, its port noted, and closed again. */
async function deadUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}/v1`;
}

describe('a dead or hanging endpoint stops the run (the circuit breaker)', () => {
  it('64 items against nothing listening: exit 5 in seconds, one line on the endpoint, nothing scored', async () => {
    const out = tempDir('dead');
    const t0 = performance.now();
    const r = await llm(await deadUrl(), out, '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '32');
    const seconds = (performance.now() - t0) / 1000;
    expect(r.code).toBe(5);
    expect(seconds).toBeLessThan(30);
    expect(r.stderr).toMatch(
      /is down: 5 requests in a row could not reach it or timed out \(the last: .*cannot reach 127\.0\.0\.1:\d+: nothing listens there \(ECONNREFUSED\)\); nothing more is sent to it\nThe run stopped\. 0 of 64 requests are answered in .*journal\.jsonl; once the server is back, continue with the same command and --resume/,
    );
    expect(r.stderr.split('\n').filter((l) => l !== '').length).toBeLessThan(12);
    expect(r.stdout).toBe('');
    expect(existsSync(join(out, 'summary.json'))).toBe(false);
  });

  it('a hanging endpoint is found down by the first wave of timeouts, not after every item’s retries', async () => {
    const hang = await start('hang');
    const out = tempDir('hang');
    const t0 = performance.now();
    // 258 requests, 8 in flight, 6 retries each (the defaults); a 1 s timeout stands for the default 120 s, so
    // that the run's length in timeouts is what it would be: one wave, where 7 × 258 / 8 ≈ 226 waves were spent.
    const r = await llm(
      hang.url,
      out,
      ...['--tasks', 'RuMedDaNet,RuMedNLI,RuMedTop3,RuMedSymptomRec', '--split', 'both', '--limit', '43'],
      ...['--timeout-ms', '1000'],
    );
    const seconds = (performance.now() - t0) / 1000;
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(
      /is down: 5 requests in a row could not reach it or timed out \(the last: .*timed out after 1 s\)/,
    );
    expect(r.stderr).toMatch(/0 of 258 requests are answered/);
    // One timeout and a little: at the default 120 s, about two minutes for the whole run.
    expect(seconds).toBeLessThan(3);
    expect(hang.counts.chat).toBeLessThanOrEqual(8);
  });

  it('dies after 3 answers: the run stops at once, keeps the 3, and --resume asks exactly the rest', async () => {
    const dying = await start('dies', { dieAfter: 3 });
    const out = tempDir('dies');
    const args = ['--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '32', '--concurrency', '1'];
    const t0 = performance.now();
    const r = await llm(dying.url, out, ...args);
    expect(r.code).toBe(5);
    expect((performance.now() - t0) / 1000).toBeLessThan(30);
    expect(r.stderr).toMatch(/The run stopped\. 3 of 64 requests are answered/);
    const healthy = await start('healthy');
    const again = await llm(healthy.url, out, ...args, '--resume');
    expect(again.code).toBe(0);
    expect(healthy.counts.chat).toBe(61);
  });
});

describe('replies are judged before they are read', () => {
  const cases: {
    mode: Misbehaviour;
    flag: string;
    said: RegExp;
    finish?: string;
  }[] = [
    { mode: 'echo', flag: 'echo', said: /10 of 10 replies repeat the prompt's instruction/ },
    {
      mode: 'truncated',
      flag: 'truncated',
      finish: 'length',
      said: /10 of 10 replies were cut off by the token limit \(finish_reason length\), 10 of them before an answer; raise --max-tokens \(now 1024\)/,
    },
    {
      mode: 'unclosed-think',
      flag: 'truncated_in_reasoning',
      finish: 'length',
      said: /10 of 10 replies were cut off by the token limit inside their reasoning; raise --max-tokens/,
    },
    {
      mode: 'filtered',
      flag: 'filtered',
      finish: 'content_filter',
      said: /10 of 10 replies were withheld by the server \(finish_reason content_filter\)/,
    },
  ];
  it.each(cases)(
    '$mode: exit 3, named, never scored; scored as wrong only under --allow-failures',
    async (c) => {
      const server = await start(c.mode);
      const out = tempDir(c.mode);
      const args = ['--tasks', 'RuMedDaNet', '--limit', '10'];
      const r = await llm(server.url, out, ...args);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(c.said);
      expect(r.stderr).toMatch(
        new RegExp(
          `10 of 10 replies could not be read as answers \\(10 ${c.flag.replace(/_/g, ' ')}\\): more than half, so the run was not scored`,
        ),
      );
      expect(r.stdout).toBe('');
      expect(existsSync(join(out, 'summary.json'))).toBe(false);
      const samples = samplesOf(out);
      expect(samples.map((s) => [s.status, s.flag, s.finish_reason])).toEqual(
        Array(10).fill(['unparsed', c.flag, c.finish ?? 'stop']),
      );
      // Accepted as wrong: the run is scored (0 correct), the flags counted in the summary.
      const again = await llm(
        server.url,
        tempDir(`${c.mode}-allowed`),
        ...args,
        '--allow-failures',
        '10',
        '--json',
      );
      expect(again.code).toBe(0);
      const summary = JSON.parse(again.stdout) as {
        tasks: { RuMedDaNet: { metrics: { accuracy: number } } };
        llm: {
          tasks: { RuMedDaNet: { replies: Record<string, number> } };
          finish_reasons: Record<string, number>;
        };
      };
      expect(summary.tasks.RuMedDaNet.metrics.accuracy).toBe(0);
      expect(summary.llm.tasks.RuMedDaNet.replies[c.flag]).toBe(10);
      expect(summary.llm.finish_reasons).toEqual({ [c.finish ?? 'stop']: 10 });
    },
  );

  it('a healthy run keeps each reply’s finish_reason and flags nothing', async () => {
    const server = await start('healthy');
    const out = tempDir('healthy');
    const r = await llm(server.url, out, '--tasks', 'RuMedDaNet', '--limit', '4', '--json');
    expect(r.code).toBe(0);
    expect(samplesOf(out).map((s) => [s.status, s.flag, s.finish_reason])).toEqual(
      Array(4).fill(['parsed', undefined, 'stop']),
    );
    const summary = JSON.parse(r.stdout);
    expect(summary.llm.tasks.RuMedDaNet.replies).toEqual({
      echo: 0,
      filtered: 0,
      empty: 0,
      truncated_in_reasoning: 0,
      truncated: 0,
    });
  });
});

describe('no secret reaches the disk or the terminal', () => {
  it.each(['echo-headers-401', 'echo-headers-502'] as const)(
    '%s: the key and header values are redacted from the journal, the run folder and stderr',
    async (mode) => {
      const server = await start(mode);
      const out = tempDir(mode);
      const r = await llm(
        server.url,
        out,
        ...['--tasks', 'RuMedDaNet', '--limit', '4', '--max-retries', '0'],
        ...[
          '--api-key-env',
          'RB_TEST_KEY',
          '--header-env',
          'Api-Key: RB_TEST_HEADER',
          '--header',
          'X-Title: rb',
        ],
      );
      // The server did get them: they were sent, and echoed.
      expect(server.headers[0]?.authorization).toBe(`Bearer ${KEY}`);
      expect(server.headers[0]?.['api-key']).toBe(HEADER_SECRET);
      expect(r.code).toBe(mode === 'echo-headers-401' ? 4 : 3);
      expect(r.stderr).toMatch(/\*\*\*/);
      const everything = `${r.stderr}${r.stdout}${folderText(out)}`;
      expect(everything).not.toContain(KEY);
      expect(everything).not.toContain(HEADER_SECRET);
      expect(everything).not.toContain('Zq81');
      // --resume keeps nothing of them either.
      const again = await llm(
        server.url,
        out,
        ...['--tasks', 'RuMedDaNet', '--limit', '4', '--max-retries', '0', '--resume'],
        ...['--api-key-env', 'RB_TEST_KEY', '--header-env', 'Api-Key: RB_TEST_HEADER'],
      );
      expect(`${again.stderr}${folderText(out)}`).not.toContain(KEY);
    },
  );

  it('a key echoed in successful replies, as it is, URL-encoded, form-encoded and JSON-escaped, is in no file of the run (#59)', async () => {
    // A key with the characters that encodings change: / + = & and a quote.
    const key = 'sk-te/st+Kq9=x&y"z-secret';
    const server = await start('echo-key-reply');
    const out = tempDir('echo-key');
    const r = await rumedbenchWith(
      { RB_ODD_KEY: key },
      'llm',
      ...['--model', 'fake-1', '--base-url', server.url, '--out', out, '--data', DATA],
      ...['--bootstrap', '0', '--no-progress', '--tasks', 'RuMedDaNet', '--limit', '4'],
      ...['--api-key-env', 'RB_ODD_KEY', '--allow-failures', '4'],
    );
    expect(server.headers[0]?.authorization).toBe(`Bearer ${key}`);
    expect(r.code, r.stderr).toBe(0);
    const everything = `${r.stderr}${r.stdout}${folderText(out)}`;
    const forms = keyForms(key);
    expect(Object.entries(forms).filter(([, f]) => everything.includes(f))).toEqual([]);
    expect(everything).toContain('***');
  });

  it('refuses a key in the base URL’s query, and credential headers given as literal values, before sending', async () => {
    const server = await start('healthy');
    const out = tempDir('literal');
    const query = await llm(`${server.url}?api-key=${KEY}`, out, '--tasks', 'RuMedDaNet', '--limit', '2');
    expect(query.code).toBe(2);
    expect(query.stderr).toMatch(/--base-url must not carry a query or a fragment/);
    expect(query.stderr).not.toContain(KEY);
    for (const name of [
      'Api-Key',
      'Authorization',
      'X-Api-Key',
      'Ocp-Apim-Subscription-Key',
      'X-Auth-Token',
    ]) {
      const r = await llm(server.url, out, '--tasks', 'RuMedDaNet', '--header', `${name}: ${KEY}`);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`the header "${name}" carries a credential`);
      expect(r.stderr).not.toContain(KEY);
    }
    expect(server.counts.chat).toBe(0);
    expect(existsSync(join(out, 'manifest.json'))).toBe(false);
  });

  it('plan check refuses a credential header written in the plan, naming its line', async () => {
    const { file } = planFile('plan', [
      'tasks: [RuMedDaNet]',
      'models:',
      '  - name: azure',
      '    provider: openai',
      '    model: gpt',
      '    base_url: https://example.openai.azure.com/openai/v1',
      `    header: "api-key: ${KEY}"`,
    ]);
    const r = await cli('plan', 'check', file);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/plan\.yaml:7:\d+: the header "api-key" carries a credential/);
    expect(r.stderr).not.toContain(KEY);
  });
});

describe('log-probabilities are checked as a whole', () => {
  const loglik = (url: string, out: string, ...more: string[]) =>
    llm(url, out, '--mode', 'loglik', '--tasks', 'RuMedDaNet', '--limit', '4', '--max-retries', '0', ...more);

  it('all-zero log-probabilities: every request fails, saying why; nothing is scored', async () => {
    const server = await start('zero-logprobs', { completionsFrom: 2 });
    const r = await loglik(server.url, tempDir('zero'));
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /4× .*every one of the 2 candidates has the same log-probability \(0\): the server's log-probabilities do not depend on the text/,
    );
  });

  it('−1e300 per token: refused before the run, for that reason (not for lacking top-k)', async () => {
    const server = await start('tiny-logprobs');
    const r = await loglik(server.url, tempDir('tiny'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /cannot score by log-likelihood: the server returns prompt log-probabilities that cannot be right \(.*log-probability -1e\+300 at token 1 is below -10000 for one token, which no model gives/,
    );
    expect(r.stderr).not.toMatch(/top 20/);
  });

  it('a /tokenize that drops a token never makes every answer the first candidate', async () => {
    const server = await start('drop-token');
    const out = tempDir('drop');
    const r = await llm(
      server.url,
      out,
      ...['--mode', 'loglik', '--tasks', 'RuMedNLI', '--limit', '6', '--max-retries', '0'],
    );
    expect(r.code).toBe(3);
    // Refused either way: the candidates' equal totals, or (on the text path, where the dropped token makes the reply
    // look one generated token short) echoed tokens that are not the prompt's.
    expect(r.stderr).toMatch(
      /6 of 6 requests failed[\s\S]*(same log-probability|echoes tokens that do not re-join to the prompt sent)/,
    );
  });

  it('contamination refuses to compute a p-value from all-zero or −1e300 log-probabilities', async () => {
    for (const mode of ['zero-logprobs', 'tiny-logprobs'] as const) {
      const server = await start(mode, { completionsFrom: 2 });
      const r = await cli(
        'contamination',
        ...['--base-url', server.url, '--model', 'fake-1', '--data', DATA, '--tasks', 'RuMedDaNet'],
        ...['--probes', 'order', '--max-retries', '0', '--json'],
      );
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(
        mode === 'zero-logprobs' ? /same log-probability \(0\)/ : /below -10000 for one token/,
      );
      expect(r.stderr).not.toMatch(/p 0\.5|no evidence|e\+288/);
    }
  });

  it('contamination refuses a 5-token context after a few /tokenize calls, with --out or without', async () => {
    for (const withOut of [false, true]) {
      const server = await start('healthy', { maxModelLen: 5 });
      const r = await cli(
        'contamination',
        ...['--base-url', server.url, '--model', 'fake-1', '--data', DATA, '--tasks', 'RuMedDaNet'],
        ...['--probes', 'order', '--json', ...(withOut ? ['--out', tempDir('ctx')] : [])],
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /RuMedDaNet: the order probe's smallest shard \(4 items\) takes up to \d+ tokens, over the model's context of 5/,
      );
      expect(server.counts.tokenize).toBeLessThan(10);
      expect(server.counts.completions).toBeLessThan(3);
    }
  });
});

describe('usage figures', () => {
  it('2^53−1 tokens per reply are not taken: estimated from the bytes sent and received (a ceiling), and said so', async () => {
    const server = await start('huge-usage');
    const out = tempDir('usage');
    const r = await llm(
      server.url,
      out,
      ...[
        '--tasks',
        'RuMedDaNet',
        '--limit',
        '4',
        '--price-prompt',
        '1',
        '--price-completion',
        '2',
        '--json',
      ],
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/4 replies gave token counts that cannot be right/);
    const summary = JSON.parse(r.stdout);
    expect(r.stderr).toContain(
      "their tokens are estimated from the request's and the reply's bytes (a ceiling)",
    );
    // Each reply "да" is 4 bytes: 4 completion tokens at most; each prompt at most its bytes and 16 per message.
    expect(summary.llm.usage).toMatchObject({ completion_tokens: 16, replies_with_invalid_counts: 4 });
    const prompt = summary.llm.usage.prompt_tokens;
    expect(prompt).toBeGreaterThan(4 * 100);
    expect(summary.llm.cost).toBeCloseTo((prompt * 1 + 16 * 2) / 1e6, 12);
    // --max-cost counts them: a resume says what they cost, not nothing.
    const resumed = await llm(
      server.url,
      out,
      ...['--tasks', 'RuMedDaNet', '--limit', '4', '--price-prompt', '1', '--price-completion', '2'],
      ...['--resume', '--max-cost', '1'],
    );
    expect(resumed.code, resumed.stderr).toBe(0);
    const usd = summary.llm.cost as number;
    expect(resumed.stderr).toContain(`after $${Number(usd.toPrecision(3))} spent; --max-cost $1.00`);

    // A journal of an older version kept no counts for such replies (only `usageProblem`): they are estimated the same
    // way when read, flagged, never counted as free in the cost or the spending so far.
    const journalFile = join(out, 'journal.jsonl');
    const lines = readFileSync(journalFile, 'utf8').split('\n').filter(Boolean);
    const older = lines.map((l) => {
      const { usage, ...rest } = JSON.parse(l) as { usage?: unknown; usageProblem?: string };
      expect(rest.usageProblem).toMatch(/token counts that are not whole numbers/);
      return JSON.stringify(rest);
    });
    writeFileSync(journalFile, `${older.join('\n')}\n`);
    const again = await llm(
      server.url,
      out,
      ...['--tasks', 'RuMedDaNet', '--limit', '4', '--price-prompt', '1', '--price-completion', '2'],
      ...['--resume', '--max-cost', '1', '--json'],
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(`after $${Number(usd.toPrecision(3))} spent; --max-cost $1.00`);
    expect(again.stderr).toMatch(/4 replies gave token counts that cannot be right/);
    const resummed = JSON.parse(again.stdout);
    expect(resummed.llm.usage).toEqual(summary.llm.usage);
    expect(resummed.llm.cost).toBe(summary.llm.cost);
  });
});

describe('a plan with one endpoint down', () => {
  it('fails that endpoint’s cells at once, saying it is down; the other endpoint’s cells are done', async () => {
    const healthy = await start('healthy');
    const { dir, file } = planFile('plan-down', [
      'name: one-down',
      'tasks: [RuMedDaNet]',
      `data: ${DATA}`,
      'defaults: {limit: 20, bootstrap: 0, header_env: "Api-Key: RB_TEST_HEADER"}',
      'models:',
      `  - {name: dead, provider: openai, base_url: "${await deadUrl()}", model: m}`,
      `  - {name: alive, provider: openai, base_url: "${healthy.url}", model: m}`,
    ]);
    const out = join(dir, 'out');
    const t0 = performance.now();
    const r = await cli('plan', 'run', file, '--out', out, '--no-progress');
    expect((performance.now() - t0) / 1000).toBeLessThan(30);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /cell dead\/default: failed \(exit 5\): .*is down: 5 requests in a row could not reach it/,
    );
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      cells: { cell: string; status: string }[];
    };
    expect(summary.cells.map((c) => [c.cell, c.status])).toEqual([
      ['dead/default', 'failed'],
      ['alive/default', 'done'],
    ]);
    // The header's value went to the server, and nowhere on disk.
    expect(healthy.headers[0]?.['api-key']).toBe(HEADER_SECRET);
    expect(folderText(dir)).not.toContain(HEADER_SECRET);
  });
});

describe('a run folder is one run', () => {
  it('--resume with fewer --tasks is refused, naming the tasks it would drop; with the same tasks it goes on', async () => {
    const server = await start('healthy');
    const out = tempDir('resume-tasks');
    expect((await llm(server.url, out, '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '3')).code).toBe(0);
    const fewer = await llm(server.url, out, '--tasks', 'RuMedDaNet', '--limit', '3', '--resume');
    expect(fewer.code).toBe(2);
    expect(fewer.stderr).toContain(
      "holds answers for RuMedNLI, which --tasks leaves out: continuing would write the run's predictions without them",
    );
    expect(fewer.stderr).toContain('Give --tasks RuMedDaNet,RuMedNLI');
    expect(readdirSync(join(out, 'predictions')).sort()).toEqual(['RuMedDaNet.jsonl', 'RuMedNLI.jsonl']);
    const same = await llm(server.url, out, '--tasks', 'RuMedDaNet,RuMedNLI', '--limit', '3', '--resume');
    expect(same.code).toBe(0);
  });
});
