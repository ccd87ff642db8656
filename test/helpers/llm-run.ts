/** A small, real `rumedbench llm` run against the loopback fake model, for tests that read a run folder. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { rumedbenchOk } from './cli.js';
import { CLI } from './data.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from './fake-openai.js';

/**
 * A model that says "да" (RuMedDaNet) or "нейтрально" (RuMedNLI) to everything, cannot decide on every 7th
 * request, and answers every 11th with markup in front of the answer.
 */
export function naiveModel(): (body: ChatRequestBody) => string {
  let n = 0;
  return (body) => {
    n++;
    if (n % 7 === 0) return 'Затрудняюсь ответить.';
    const nli = (body.messages.at(-1)?.content ?? '').includes('Гипотеза');
    const answer = nli ? 'Ответ: нейтрально' : 'Ответ: да';
    return n % 11 === 0 ? `<script>alert(1)</script> ${answer}` : answer;
  };
}

/** Runs `rumedbench llm` on the first `limit` test items of RuMedDaNet and RuMedNLI; returns the run folder. */
export async function smallLlmRun(
  model = 'fake-<b>-1',
  limit = 30,
  /** Other tasks than RuMedDaNet and RuMedNLI, and more flags (prices). */
  o: { tasks?: string; extra?: string[] } = {},
): Promise<{ dir: string; server: FakeOpenAI }> {
  const server = await startFakeOpenAI({ reply: naiveModel() });
  const dir = join(mkdtempSync(join(tmpdir(), 'rumedbench-llm-run-')), 'run');
  try {
    await rumedbenchOk(
      'llm',
      '--model',
      model,
      '--no-progress',
      '--base-url',
      server.url,
      '--out',
      dir,
      '--tasks',
      o.tasks ?? 'RuMedDaNet,RuMedNLI',
      '--limit',
      String(limit),
      '--bootstrap',
      '0',
      ...(o.extra ?? []),
    );
  } catch (e) {
    await server.close();
    throw e;
  }
  return { dir, server };
}

/** A file's JSON lines, parsed (samples.jsonl, the journal). */
export const readJsonl = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

/** Loopback servers a test starts: `track` them, and they are closed after each test. */
export function closedAfterEach<S extends { close(): Promise<void> }>(): (...s: S[]) => void {
  const servers: S[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return (...s) => {
    servers.push(...s);
  };
}

/**
 * `rumedbench llm` on the fixture data with the flags most tests share: the model server, the tasks, the first
 * `limit` items, no bootstrap, no progress bar.
 */
export const llmArgs = (
  o: { url: string; out: string; data: string; tasks: string; limit: number; model?: string },
  ...more: string[]
) => [
  'llm',
  '--model',
  o.model ?? 'fake-1',
  '--no-progress',
  '--data',
  o.data,
  '--base-url',
  o.url,
  '--tasks',
  o.tasks,
  '--limit',
  String(o.limit),
  '--bootstrap',
  '0',
  '--out',
  o.out,
  ...more,
];

/** The events of a run folder's batch ledger (`batches.jsonl`), in order. */
export const ledgerEvents = (out: string): string[] =>
  readFileSync(join(out, 'batches.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { event: string }).event);

/** A key as it is, JSON-escaped, URL- and form-encoded, and JSON-escaped URL-encoded: each form a leak may take. */
export const keyForms = (key: string): Record<string, string> => ({
  raw: key,
  json: JSON.stringify(key).slice(1, -1),
  url: encodeURIComponent(key),
  form: new URLSearchParams({ k: key }).toString().slice(2),
  jsonOfUrl: JSON.stringify(encodeURIComponent(key)).slice(1, -1),
});

/**
 * The forms of `key` (see keyForms) found in any file under `out` (read as UTF-8 and as bytes) or in `texts` (what
 * the run printed): the names of the forms that leaked, [] when none did.
 */
export function keyFormsIn(out: string, key: string, ...texts: string[]): string[] {
  const files = readdirSync(out, { recursive: true, encoding: 'utf8' })
    .map((f) => join(out, f))
    .filter((f) => statSync(f).isFile());
  const everything = `${texts.join('\n')}${files.map((f) => readFileSync(f, 'latin1') + readFileSync(f, 'utf8')).join('\n')}`;
  return Object.entries(keyForms(key))
    .filter(([, f]) => everything.includes(f))
    .map(([name]) => name);
}

/** A small batch run (RuMedDaNet and RuMedNLI, 6 items each: 12 requests) looked at every 10 ms. */
export const batchArgs = (data: string, url: string, out: string, ...more: string[]) =>
  llmArgs(
    { url, out, data, tasks: 'RuMedDaNet,RuMedNLI', limit: 6 },
    '--batch',
    '--batch-poll',
    '0.01',
    ...more,
  );

/**
 * Runs the built CLI as a user does, and kills it with SIGKILL once `when` holds (polled every 5 ms): a run killed
 * in the middle of what it was doing. Resolves when the process has exited.
 */
export async function killWhen(argv: string[], env: NodeJS.ProcessEnv, when: () => boolean): Promise<void> {
  const child: ChildProcess = spawn(process.execPath, [CLI, ...argv], { env, stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      if (when()) {
        clearInterval(timer);
        child.kill('SIGKILL');
        resolve();
      }
    }, 5);
  });
  await exited;
}
