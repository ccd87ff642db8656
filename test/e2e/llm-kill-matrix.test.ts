/**
 * SIGKILL at 6 stages of a batch run × 4 ways of resuming (#59): every cell ends with one batch of the run's 12
 * requests, nothing sent online, and predictions equal to a clean run's. A run killed before its batch existed and
 * resumed with `--retry-errors` sends its never-sent requests (they are pending, not errors), counted as such.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENV, rumedbench } from '../helpers/cli.js';
import {
  type CreateFault,
  type FakeOpenAI,
  type ResultsFault,
  startFakeOpenAI,
} from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { batchArgs, closedAfterEach, killWhen, llmArgs } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI>();
const args = (url: string, out: string, ...more: string[]) =>
  batchArgs(DATA, url, out, '--timeout-ms', '400', ...more);
const online = (url: string, out: string, ...more: string[]) =>
  llmArgs({ url, out, data: DATA, tasks: 'RuMedDaNet,RuMedNLI', limit: 6 }, '--timeout-ms', '400', ...more);
const preds = (dir: string) =>
  ['RuMedDaNet', 'RuMedNLI'].map((t) => readFileSync(join(dir, 'predictions', `${t}.jsonl`), 'utf8'));
const ledgerLen = (out: string) => {
  try {
    return readFileSync(join(out, 'batches.jsonl'), 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};

type Stage = {
  name: string;
  create?: CreateFault;
  results?: ResultsFault;
  hold?: boolean;
  when: (s: FakeOpenAI, out: string) => boolean;
};
const stages: Stage[] = [
  { name: 'intent recorded', hold: true, when: (_s, out) => ledgerLen(out) >= 1 },
  { name: 'creating, nothing made', create: 'hang-before', when: (s) => s.createCalls() >= 1 },
  { name: 'creating, batch made', create: 'hang-after', when: (s) => s.createCalls() >= 1 },
  { name: 'submitted, waiting', hold: true, when: (s) => s.batchLooks() >= 2 },
  { name: 'downloading', results: 'slow', when: (s) => s.downloads() >= 1 },
  { name: 'journaling', when: (_s, out) => existsSync(join(out, 'journal.jsonl')) },
];
const ways = [
  '--resume --batch',
  'online first, then --resume --batch',
  '--resume --batch --retry-errors',
  '--resume --batch twice',
] as const;

describe('kill matrix', () => {
  let clean: string[] | undefined;
  for (const st of stages)
    for (const way of ways)
      it(`${st.name} × ${way}`, async () => {
        if (!clean) {
          const s0 = await startFakeOpenAI({ reply: () => 'Ответ: да' });
          track(s0);
          const o0 = mkdtempSync(join(tmpdir(), 'rb-km-clean-'));
          expect((await rumedbench(...args(s0.url, o0))).code).toBe(0);
          clean = preds(o0);
        }
        let hold = st.hold ?? false;
        const server = await startFakeOpenAI({
          reply: () => 'Ответ: да',
          holdBatches: () => hold,
          createFault: (n) => (n === 0 ? st.create : undefined),
          resultsFault: (n) => (n === 0 ? st.results : undefined),
          slowResultsMs: 2000,
        });
        track(server);
        const out = mkdtempSync(join(tmpdir(), 'rb-km-'));
        await killWhen(args(server.url, out), CLI_ENV, () => st.when(server, out));
        hold = false;
        const madeBeforeKill = server.batches().length;
        if (way === 'online first, then --resume --batch') {
          const r = await rumedbench(...online(server.url, out, '--resume'));
          expect([0, 2]).toContain(r.code);
        }
        const extra =
          way === '--resume --batch --retry-errors' ? ['--resume', '--retry-errors'] : ['--resume'];
        const r = await rumedbench(...args(server.url, out, ...extra));
        expect(r.code, r.stderr).toBe(0);
        if (way === '--resume --batch --retry-errors' && madeBeforeKill === 0)
          expect(r.stderr).toContain('12 requests in the run, 0 already answered, 12 to send');
        if (way === '--resume --batch twice') {
          const r2 = await rumedbench(...args(server.url, out, '--resume'));
          expect(r2.code, r2.stderr).toBe(0);
        }
        expect({
          batches: server.batches().length,
          lines: server.batchLines.length,
          online: server.requests.length,
        }).toEqual({ batches: 1, lines: 12, online: 0 });
        expect(preds(out)).toEqual(clean);
      });
});
