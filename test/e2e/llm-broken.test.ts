/**
 * `rumedbench llm` against servers that misbehave (issue #21), one misbehaviour per row: the exit code, what stderr
 * says, what the journal holds, and whether the run then completes against a healthy server asking only what is
 * missing. The CLI runs in process (`runCli`), as a user's command line; the servers are real, on loopback.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { connectionProblem, serverMessage, snippet } from '../../src/llm/client.js';
import { forEachLine, Journal, type JournalEntry } from '../../src/llm/journal.js';
import { createLogger } from '../../src/log.js';
import { type Misbehaviour, useBrokenServers } from '../helpers/broken-openai.js';
import { CLI } from '../helpers/data.js';
import { FIXTURE_CODES, fixtureDataDir } from '../helpers/fixture-data.js';
import { keyFormsIn } from '../helpers/llm-run.js';

/** The suite's data: a small folder the tests write (test/helpers/fixture-data.ts), not ../shared. */
const DATA = fixtureDataDir();

const start = useBrokenServers();

/** The CLI in process: exit code, stdout, stderr. */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (t) => {
      stdout += t;
    },
    log: createLogger('info', (l) => {
      stderr += l;
    }),
  });
  return { code, stdout, stderr };
}

const ITEMS = 4;
const run = (url: string, out: string, mode: 'generate' | 'loglik', ...more: string[]) => [
  'llm',
  '--model',
  'fake-1',
  '--base-url',
  url,
  '--out',
  out,
  '--tasks',
  'RuMedDaNet',
  '--limit',
  String(ITEMS),
  '--mode',
  mode,
  '--concurrency',
  '2',
  '--max-retries',
  '1',
  '--timeout-ms',
  '400',
  '--bootstrap',
  '0',
  '--no-progress',
  '--data',
  DATA,
  ...more,
];

/** A key with the characters that encodings change (/ + = & and a quote), sent by every row's runs. */
const KEY = 'sk-br/oken+Kq9=x&y"z-secret';
process.env.RB_BROKEN_KEY = KEY;
const KEYED = ['--api-key-env', 'RB_BROKEN_KEY'];

const journalOf = (out: string): JournalEntry[] =>
  (existsSync(join(out, 'journal.jsonl')) ? readFileSync(join(out, 'journal.jsonl'), 'utf8') : '')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as JournalEntry);

interface Row {
  mode: Misbehaviour;
  run: 'generate' | 'loglik';
  code: number;
  stderr: RegExp;
  /** What every failed journal entry says. */
  journal?: RegExp;
  /** How the run is continued against a healthy server. */
  next: '--retry-errors' | '--resume' | 'nothing';
  server?: Parameters<typeof start>[1];
}

/**
 * A server that turns bad once a run is under way, on both ways of asking: from the second request on (the text
 * check fails, and items go by /tokenize ids) and from the fourth (after the probe and the text check, on the
 * one-request-per-item text path).
 */
const onBothPaths = (row: Omit<Row, 'server'>): Row[] => [
  { ...row, server: { completionsFrom: 2 } },
  { ...row, server: { completionsFrom: 4 } },
];

const ROWS: Row[] = [
  {
    mode: 'html-502',
    run: 'generate',
    code: 3,
    stderr:
      /4 of 4 requests failed, so the run is incomplete and was not scored:\n {2}4× http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: HTTP 502: 502 Bad Gateway 502 Bad Gateway nginx\nAsk only those again with the same command and --retry-errors; or score them as wrong with --allow-failures 4\./,
    journal: /HTTP 502: 502 Bad Gateway/,
    next: '--retry-errors',
  },
  {
    mode: 'retry-after-3600',
    run: 'generate',
    code: 3,
    stderr:
      /HTTP 429: Rate limit reached: the server asks to wait 3600 s \(Retry-After\), longer than --max-wait 60 s/,
    journal: /asks to wait 3600 s/,
    next: '--retry-errors',
  },
  {
    // Five requests in a row timed out (the circuit breaker, #30): the endpoint is down and the run stops (exit 5).
    mode: 'hang',
    run: 'generate',
    code: 5,
    stderr:
      /waiting \d+ s before retry 1 of 1: .*timed out after 0 s[\s\S]*is down: 5 requests in a row could not reach it or timed out \(the last: .*timed out after 0 s\); nothing more is sent to it\nThe run stopped\. 0 of 4 requests are answered in .*; once the server is back, continue with the same command and --resume/,
    journal: /timed out/,
    next: '--resume',
  },
  {
    mode: 'unauthorized',
    run: 'generate',
    code: 4,
    stderr:
      /HTTP 401: Incorrect API key provided: sk-…abcd\. \(the server refused the key: check --api-key-env and --header\)\nThe run stopped at once: no retry can fix this\. 0 of 4 requests are answered/,
    journal: /HTTP 401/,
    next: '--resume',
  },
  {
    mode: 'vllm-404',
    run: 'generate',
    code: 4,
    stderr:
      /HTTP 404: The model `fake-1` does not exist\. \(no such model or endpoint: check --model and --base-url/,
    journal: /HTTP 404/,
    next: '--resume',
  },
  {
    mode: 'context-length',
    run: 'generate',
    code: 3,
    stderr:
      /HTTP 400: This model's maximum context length is 2048 tokens\. However, you requested 4096 tokens\. \(the prompt does not fit the model's context: this item fails, the run goes on\)/,
    journal: /maximum context length/,
    next: '--retry-errors',
  },
  {
    // A 200 past the reply cap: the server ignores max_tokens, and bills what it wrote; the run stops (exit 4).
    mode: 'huge-reply',
    run: 'generate',
    code: 4,
    stderr:
      /\/v1\/chat\/completions answered HTTP 200 with a reply of more than 4194304 bytes, past the 4194304 bytes of --max-reply-bytes, to a request for at most \d+ tokens \(max_tokens\): the server does not honour max_tokens, so what it bills cannot be bounded; nothing more is sent to it\nThe run stopped at once: no retry can fix this\./,
    journal: /the reply is larger than --max-reply-bytes \(4194304 bytes\); it was cut off and not read/,
    next: '--resume',
  },
  {
    mode: 'null-content',
    run: 'generate',
    code: 3,
    stderr: /the reply has no text \(content is null\)/,
    journal: /content is null/,
    next: '--retry-errors',
  },
  {
    mode: 'tool-call',
    run: 'generate',
    code: 3,
    stderr: /the reply has no text \(the model called a tool instead of answering\)/,
    journal: /called a tool/,
    next: '--retry-errors',
  },
  {
    mode: 'not-json',
    run: 'generate',
    code: 3,
    stderr: /the reply is not JSON: Welcome to nginx!/,
    journal: /not JSON/,
    next: '--retry-errors',
  },
  {
    mode: 'truncated-json',
    run: 'generate',
    code: 3,
    stderr: /the reply is not JSON: \{"id":"chatcmpl-1","choices":\[\{"mess/,
    journal: /not JSON/,
    next: '--retry-errors',
  },
  {
    mode: 'deep-json',
    run: 'generate',
    code: 3,
    stderr: /the reply nests deeper than 64 levels: not read/,
    journal: /nests deeper/,
    next: '--retry-errors',
  },
  {
    mode: 'redirect',
    run: 'generate',
    code: 4,
    stderr:
      /HTTP 307, a redirect to http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions; redirects are not followed/,
    journal: /redirect/,
    next: '--resume',
  },
  {
    mode: 'absurd-usage',
    run: 'generate',
    code: 0,
    stderr:
      /4 replies gave token counts that cannot be right \(e\.g\. token counts that are not whole numbers ≥ 0: \{"prompt_tokens":-5,"completion_tokens":"many"\}\); their tokens are estimated from the request's and the reply's bytes \(a ceiling\), and counted so in the tokens, the cost and --max-cost/,
    next: 'nothing',
  },
  {
    mode: 'other-model',
    run: 'generate',
    code: 0,
    stderr: /the server says another model answered: "gpt-3\.5-turbo-0125" \(4 replies\); asked for "fake-1"/,
    next: 'nothing',
  },
  {
    mode: 'positive-logprobs',
    run: 'loglik',
    code: 1,
    stderr:
      /cannot score by log-likelihood: the server returns prompt log-probabilities that cannot be right \(.*log-probability 240 at token 1 is not a finite number ≤ 0, which no model gives/,
    next: 'nothing',
  },
  ...onBothPaths({
    mode: 'positive-logprobs',
    run: 'loglik',
    code: 3,
    stderr: /log-probability 240 at token 1 is not a finite number ≤ 0/,
    journal: /not a finite number ≤ 0/,
    next: '--retry-errors',
  }),
  {
    // The same count as the right layout (n + 1), one place late: decided from the request, never from the count.
    mode: 'shifted-logprobs',
    run: 'loglik',
    code: 1,
    stderr:
      /cannot score by log-likelihood: two different tokens appended to a prompt got the same log-probability .* the values sit one place late/,
    next: 'nothing',
  },
  ...onBothPaths({
    mode: 'long-logprobs',
    run: 'loglik',
    code: 3,
    stderr:
      /\d+ log-probabilities for a prompt of \d+ tokens and 1 generated \(there must be one per token\)/,
    journal: /one per token/,
    next: '--retry-errors',
  }),
  // Values for other tokens than those sent (issue #59): each prompt given another's (choices numbered in the order
  // they ended), one candidate's arrays two tokens short, or one token long. The echoed tokens say so; on the text
  // path the item is then asked again by /tokenize ids, whose counts refuse a short or long array too.
  ...onBothPaths({
    mode: 'permuted-logprobs',
    run: 'loglik',
    code: 3,
    stderr: /the reply for prompt \d of \d echoes tokens that do not re-join to the prompt sent for it/,
    journal: /echoes tokens that do not re-join to the prompt sent for it/,
    next: '--retry-errors',
  }),
  ...(['short-logprobs', 'extra-logprob'] as const).flatMap((mode) =>
    onBothPaths({
      mode,
      run: 'loglik',
      code: 3,
      stderr:
        /echoes tokens that do not re-join to the prompt sent for it|\d+ log-probabilities for a prompt of \d+ tokens and 1 generated \(there must be one per token\)/,
      journal: /do not re-join to the prompt sent|one per token/,
      next: '--retry-errors',
    }),
  ),
  {
    mode: 'tokenize-mismatch',
    run: 'loglik',
    code: 3,
    stderr: /the candidate has no tokens of its own/,
    journal: /no tokens of its own/,
    next: '--retry-errors',
  },
  ...onBothPaths({
    mode: 'infinite-logprob',
    run: 'loglik',
    code: 3,
    stderr: /log-probability -Infinity at token \d+ is not a finite number ≤ 0/,
    journal: /not a finite number ≤ 0/,
    next: '--retry-errors',
  }),
  {
    mode: 'unauthorized',
    run: 'loglik',
    code: 4,
    stderr: /HTTP 401: Incorrect API key provided[^\n]*\(the server refused the key/,
    next: '--resume',
  },
  // Servers that put the request's headers, the key among them, into their answers (#59 item 8): every row searches
  // the run folder and the terminal for the key; these give it something to find.
  ...(['generate', 'loglik'] as const).map(
    (kind): Row => ({
      mode: 'echo-headers-401',
      run: kind,
      code: 4,
      stderr:
        /HTTP 401: Unauthorized request, headers: [^\n]*"authorization":"Bearer \*\*\*"[^\n]*\(the server refused the key/,
      next: '--resume',
    }),
  ),
  {
    mode: 'echo-headers-502',
    run: 'generate',
    code: 3,
    stderr:
      /HTTP 502: upstream failed for POST \/v1\/chat\/completions with [^\n]*"authorization":"Bearer \*\*\*"/,
    next: '--retry-errors',
  },
  {
    // The capability check's /tokenize answered 502: refused before any item is sent.
    mode: 'echo-headers-502',
    run: 'loglik',
    code: 1,
    stderr:
      /no usable \/tokenize endpoint \([^\n]*HTTP 502: upstream failed for POST \/tokenize with [^\n]*"authorization":"Bearer \*\*\*"/,
    next: '--resume',
  },
];

describe('llm against broken servers (on fixture data the test writes)', () => {
  it.each(ROWS)('$mode ($run, $server): exit $code, says why, and continues with $next', async (row) => {
    const target = row.mode === 'redirect' ? await start('healthy') : undefined;
    const broken = await start(row.mode, {
      ...row.server,
      ...(target ? { redirectTo: target.url.replace(/\/v1$/, '') } : {}),
    });
    const out = mkdtempSync(join(tmpdir(), `rumedbench-broken-${row.mode}-`));
    const t0 = performance.now();
    const r = await cli(run(broken.url, out, row.run, ...KEYED));
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({
      code: row.code,
      stderr: expect.stringMatching(row.stderr),
    });
    expect(performance.now() - t0).toBeLessThan(20_000); // never a silent hour
    if (row.code !== 0) expect(r.stdout).toBe(''); // nothing scored, no table
    // The key, in none of its encodings, in any file of the run or on the terminal, whatever the server did (#59 item 8).
    expect(keyFormsIn(out, KEY, r.stdout, r.stderr)).toEqual([]);

    if (row.mode === 'redirect') {
      // Not followed: the other host saw nothing, neither the request nor its headers.
      expect(target?.headers).toEqual([]);
    }
    const entries = journalOf(out);
    const failed = entries.filter((e) => e.status === 'error');
    if (row.journal) {
      expect(failed.length).toBeGreaterThan(0);
      for (const e of failed) expect(e.error).toMatch(row.journal);
    }
    // Bounded: a journal line never holds a huge reply.
    if (existsSync(join(out, 'journal.jsonl')))
      expect(statSync(join(out, 'journal.jsonl')).size).toBeLessThan(64 << 10);
    if (row.code === 4) expect(failed.length).toBeLessThanOrEqual(2); // at most the requests in flight

    if (row.next === 'nothing') {
      if (row.code === 0)
        expect(JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).llm.failed_requests).toBe(0);
      else expect(entries).toEqual([]); // refused before anything was sent
      return;
    }
    const answered = entries.filter((e) => e.status === 'ok').length;
    const healthy = await start('healthy');
    const again = await cli(run(healthy.url, out, row.run, row.next, ...KEYED));
    expect([again.code, again.stderr]).toEqual([0, expect.stringContaining('')]);
    expect(keyFormsIn(out, KEY, r.stdout, r.stderr, again.stdout, again.stderr)).toEqual([]);
    // Less the capability check: the probe, and the text check's two (the probe as ids and as a text).
    const asked = row.run === 'generate' ? healthy.counts.chat : healthy.counts.completions - 3;
    // Only what was missing is asked: the failed requests (and, after a stop, the unsent ones too).
    expect(asked).toBe(row.next === '--retry-errors' ? failed.length : ITEMS - answered);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect([summary.llm.failed_requests, summary.tasks.RuMedDaNet.n]).toEqual([0, ITEMS]);
  });

  it('scores failed requests as wrong only when told to, keeping them apart in the summary', async () => {
    const broken = await start('null-content');
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-broken-allow-'));
    const refused = await cli(run(broken.url, out, 'generate', '--allow-failures', '3'));
    expect(refused.code).toBe(3);
    const all = await cli(run(broken.url, out, 'generate', '--retry-errors', '--allow-failures', '100%'));
    // Every request failed: a run that scores nothing fails, whatever was allowed.
    expect([all.code, all.stderr]).toEqual([
      1,
      expect.stringContaining('4 of 4 requests failed: every one; nothing to score'),
    ]);

    const half = await start('healthy');
    const mixed = mkdtempSync(join(tmpdir(), 'rumedbench-broken-mixed-'));
    await cli(run(half.url, mixed, 'generate', '--limit', '2'));
    // Two answered, two more asked of the broken server: accepted with --allow-failures 50%.
    const r = await cli(run(broken.url, mixed, 'generate', '--resume', '--allow-failures', '50%'));
    expect([r.code, r.stderr]).toEqual([
      0,
      expect.stringContaining('2 of 4 requests failed and are scored as wrong (--allow-failures)'),
    ]);
    const summary = JSON.parse(readFileSync(join(mixed, 'summary.json'), 'utf8'));
    expect([
      summary.llm.failed_requests,
      summary.llm.tasks.RuMedDaNet.failed,
      summary.tasks.RuMedDaNet.n,
    ]).toEqual([2, 2, 4]);
  });

  it.each([
    { path: 'texts', textPrompts: true },
    { path: '/tokenize ids', textPrompts: false },
  ])(
    'keeps log-likelihood requests in flight within --concurrency, over reused connections, by $path (#18)',
    async ({ textPrompts }) => {
      const healthy = await start('healthy', { textPrompts });
      const out = mkdtempSync(join(tmpdir(), 'rumedbench-broken-inflight-'));
      const args = run(healthy.url, out, 'loglik', '--concurrency', '4').map((a) =>
        a === 'RuMedDaNet' ? 'RuMedTop3' : a,
      );
      const r = await cli(args);
      expect(r.code).toBe(0);
      if (textPrompts) {
        // One request per item, no /tokenize call: the check's (the BOS and the probe) and its three requests only.
        expect([healthy.counts.completions, healthy.counts.tokenize]).toEqual([ITEMS + 3, 2]);
      } else {
        // Each RuMedTop3 item asks /tokenize once per candidate and the context once.
        expect(healthy.counts.tokenize).toBeGreaterThanOrEqual(ITEMS * (FIXTURE_CODES.length + 1));
      }
      expect(healthy.peak.inFlight).toBeLessThanOrEqual(4);
      // Reused: before this bound, one run opened 424 connections here. A socket goes back to the pool a moment after
      // its reply is read, so a request sent at once may open one more: never more than twice --concurrency.
      expect(healthy.peak.connections).toBeLessThanOrEqual(8);
    },
  );

  it('refuses credentials in --base-url before sending anything, and a bad --allow-failures', async () => {
    const healthy = await start('healthy');
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-broken-cred-'));
    const withPassword = healthy.url.replace('http://', 'http://user:s3cret@');
    const r = await cli(run(withPassword, out, 'generate'));
    expect([r.code, r.stderr, healthy.counts.chat]).toEqual([
      2,
      expect.stringContaining('--base-url must not carry a user name or password'),
      0,
    ]);
    expect(r.stderr).not.toContain('s3cret');
    const bad = await cli(run(healthy.url, out, 'generate', '--allow-failures', 'some'));
    expect(bad.code).toBe(2);
  });

  it('keeps its memory under 500 MB against 50 MiB replies', async () => {
    const broken = await start('huge-reply');
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-broken-mem-'));
    // The peak resident memory of the real CLI process, as the kernel counts it.
    const hook = join(out, 'maxrss.cjs');
    writeFileSync(
      hook,
      "process.on('exit', () => process.stderr.write('maxrss_kb=' + process.resourceUsage().maxRSS + '\\n'));",
    );
    // A timeout that reading the capped reply cannot hit on a loaded machine: the test is about memory, and every
    // request must fail for its size.
    const args = run(
      broken.url,
      join(out, 'run'),
      'generate',
      '--concurrency',
      '8',
      '--limit',
      '16',
      '--timeout-ms',
      '20000',
    );
    const stderr = await new Promise<string>((resolve) => {
      let err = '';
      const child = spawn(process.execPath, ['-r', hook, CLI, ...args], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      child.on('exit', () => resolve(err));
    });
    const kb = Number(/maxrss_kb=(\d+)/.exec(stderr)?.[1]);
    // The first reply past the cap stops the run (the server ignores max_tokens): the 8 in flight are read at once.
    expect(stderr).toMatch(/answered HTTP 200 with a reply of more than 4194304 bytes/);
    expect(kb / 1024).toBeLessThan(500);
  });
});

describe('the journal and the messages', () => {
  it('reads a journal line by line, skipping a line too long to read and a line cut short', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-journal-'));
    const file = join(dir, 'journal.jsonl');
    const entry = (key: string, reply: string) =>
      JSON.stringify({
        key,
        task: 'T',
        split: 'test',
        id: key,
        status: 'ok',
        reply,
        latencyMs: 1,
        at: 'now',
      });
    writeFileSync(
      file,
      [entry('a', 'да'), entry('b', 'x'.repeat(10_000)), entry('c', 'нет'), '{"key": "d", "sta'].join('\n'),
    );
    const j = await Journal.open(file, { maxLineBytes: 1024 });
    expect([j.get('a')?.reply, j.get('b'), j.get('c')?.reply, j.get('d'), j.skipped]).toEqual([
      'да',
      undefined,
      'нет',
      undefined,
      2,
    ]);
    const lines: string[] = [];
    expect(await forEachLine(file, 1 << 20, (l) => lines.push(l))).toEqual({ skipped: 0 });
    expect(lines.length).toBe(4);
    // A reply too long to keep (a run from before the cap) is a failure to ask again, not an answer.
    const old = join(dir, 'old.jsonl');
    writeFileSync(old, entry('e', 'я'.repeat((4 << 20) + 1)));
    const o = await Journal.open(old);
    expect([o.get('e')?.status, o.get('e')?.reply, o.oversized]).toEqual(['error', undefined, 1]);
  });

  it('names what a server said, in any of the shapes servers say it', () => {
    expect(serverMessage({ error: { message: 'bad key' } }, '')).toBe('bad key');
    expect(serverMessage({ object: 'error', message: 'no model' }, '')).toBe('no model');
    expect(serverMessage({ detail: 'Not Found' }, '')).toBe('Not Found');
    expect(serverMessage({ error: 'plain' }, '')).toBe('plain');
    expect(serverMessage(undefined, '<html><body><h1>Oops</h1> gateway</body></html>')).toBe('Oops gateway');
    expect(snippet('a'.repeat(300)).length).toBe(201);
    const dns = Object.assign(new TypeError('fetch failed'), {
      cause: { code: 'ENOTFOUND', hostname: 'gpu1.internal' },
    });
    expect(connectionProblem('http://gpu1.internal:8000/v1/chat/completions', dns)).toBe(
      'cannot reach gpu1.internal:8000: the host name does not resolve (ENOTFOUND)',
    );
  });
});
