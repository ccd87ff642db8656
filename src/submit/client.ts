/**
 * Sends a run to a RuMedBench leaderboard (`rumedbench serve`, or any server with its API): the predictions of a
 * run folder, a predictions folder or a zip, with metadata taken from the run's summary and manifest unless given.
 * The upload carries an Idempotency-Key derived from its content and metadata, so a retried submit lands once;
 * connection errors, 429 and 502-504 are retried by the shared transport (Retry-After honoured, else growing waits),
 * and the answer is read to a cap.
 */

import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { printable, printableDeep } from '../data/clean-text.js';
import { type Answer, send, TransportError } from '../data/transport.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { type Logger, redactCredentials } from '../log.js';
import { formatIssue, type SubmissionIssue } from '../scoring/issues.js';
import { isLmEvalOutput } from '../scoring/lm-eval.js';
import { readRunLog } from '../scoring/run-log.js';
import { runUsageOf } from '../scoring/run-usage.js';
import { readTrustFiles, summarizeTrust } from '../scoring/trust-files.js';

export type BoardChoice = 'auto' | 'public' | 'closed';

export interface SubmitOptions {
  server: string;
  token?: string;
  model?: string;
  kind?: string;
  team?: string;
  description?: string;
  link?: string;
  board?: BoardChoice;
  /** Attempts on connection errors, 429 and 502-504 (default 5). */
  attempts?: number;
  /** Longest wait honoured from a Retry-After, seconds (default 120). */
  maxWaitS?: number;
  log?: Logger;
  /** The data folder an lm-evaluation-harness output folder is checked against (default: RUMEDBENCH_DATA's). */
  dataDir?: string;
}

export interface SubmitAnswer {
  /** HTTP status of the last answer. */
  status: number;
  /** The server's JSON answer. */
  body: Record<string, unknown>;
  /** The entry's page, when the server made one. */
  url?: string;
  /** True when the server replayed an earlier identical upload. */
  replayed: boolean;
}

/** A server that could not be reached, or did not answer as the API does: exit 2. */
export class SubmitUnreachableError extends RumedbenchError {
  constructor(message: string) {
    super('SUBMIT_UNREACHABLE', message);
  }
}

interface Upload {
  files: { name: string; data: Buffer }[];
  metadata: Record<string, string>;
}

const KINDS: Record<string, string> = {
  llm: 'LLM',
  encoder: 'encoder',
  finetuned: 'encoder',
  baseline: 'baseline',
};

/** What PATH holds: its files for the chosen board, and what its summary and manifest say of the run. */
export function collectUpload(path: string, o: Omit<SubmitOptions, 'server'>): Upload {
  if (!existsSync(path)) throw new UsageError(`${path} does not exist`);
  // Its samples files are not predictions: the run folder `eval --out` makes of it is (submitRun converts it).
  if (isLmEvalOutput(path))
    throw new UsageError(
      `${path} is an lm-evaluation-harness output folder: submitRun converts it (or: rumedbench eval ${path} --out RUN)`,
    );
  const board = o.board ?? 'auto';
  let files: Upload['files'];
  const found: Record<string, string> = {};
  if (statSync(path).isFile()) {
    if (!path.endsWith('.zip') && !path.endsWith('.jsonl'))
      throw new UsageError(`${path}: a run folder, a predictions folder, a .zip or a <Task>.jsonl file`);
    files = [{ name: basename(path), data: readFileSync(path) }];
  } else {
    const predictions = existsSync(join(path, 'predictions')) ? join(path, 'predictions') : path;
    const jsonl = readdirSync(predictions)
      .filter((f) => f.endsWith('.jsonl'))
      .sort()
      .map((f) => ({ name: f, data: readFileSync(join(predictions, f)) }));
    const zip = join(path, 'submission.zip');
    const closed = existsSync(zip) ? [{ name: 'submission.zip', data: readFileSync(zip) }] : [];
    // A run's predictions/ answer the public test sets, its submission.zip the closed tests: one board per upload.
    files = board === 'closed' ? closed : board === 'public' ? jsonl : jsonl.length > 0 ? jsonl : closed;
    if (existsSync(join(path, 'summary.json'))) {
      const run = readRunLog(path);
      const s = run.summary;
      found.kind = KINDS[s.kind] ?? 'baseline';
      if (s.kind === 'llm') {
        const m = run.manifest;
        if (m?.shard)
          // Refused as a leaderboard would refuse it (exit 1), not a usage mistake of the command line.
          throw new RumedbenchError(
            'SUBMISSION_INVALID',
            `${path}: one shard of a run answers part of it; join the shards with \`rumedbench merge\` and submit the merged run`,
          );
        if (typeof m?.limit === 'number')
          throw new RumedbenchError(
            'SUBMISSION_INVALID',
            `${path}: a run of at most ${m.limit} items per task (--limit) is a quick look; a leaderboard scores every test item`,
          );
        if (typeof m?.model === 'string') found.model = basename(m.model);
        const shown = {
          mode: m?.mode,
          shots: m?.shots,
          seed: m?.seed,
          limit: m?.limit,
          provider: m?.provider,
        };
        found.description = `rumedbench ${m?.rumedbench_version ?? ''} llm: ${settings(shown)}`;
        // What the run's trust files say goes with it, for the board's marks (no paths, no items).
        const trust = summarizeTrust(readTrustFiles(path));
        if (trust) found.trust = JSON.stringify(trust);
        // What it spent, for the board's cost column and chart (the board shows it as the uploader's claim).
        const usage = runUsageOf(s.llm);
        if (usage) found.usage = JSON.stringify(usage);
      } else if (s.kind === 'encoder' || s.kind === 'finetuned') {
        const e = s.kind === 'encoder' ? s.encoder : s.finetuned;
        found.model = basename(e.model);
        found.description = `rumedbench ${s.kind}: ${e.model} (sha256 ${e.sha256.slice(0, 12)}, ${e.dtype || 'fp32'}${e.pooling ? `, ${e.pooling} pooling` : ''})`;
      } else if (run.spec?.kind === 'baseline' && typeof run.spec.method === 'string') {
        // A trained baseline's entry says what made it (a BiLSTM's seed and epochs above all), as an LLM's does.
        const sp = run.spec as Record<string, unknown>;
        const shown = {
          seed: sp.seed,
          epochs: sp.epochs,
          patience: sp.patience,
          train_split: sp.train_split,
        };
        found.description = `rumedbench ${run.manifest?.rumedbench_version ?? ''} baseline ${sp.method}: ${settings(shown)}`;
      }
    }
  }
  if (files.length === 0)
    throw new UsageError(
      `${path}: nothing to submit${board === 'closed' ? ' to the closed board (no submission.zip)' : ' (no <Task>.jsonl files)'}`,
    );
  const metadata: Record<string, string> = {
    model: o.model ?? found.model ?? basename(path).replace(/\.(zip|jsonl)$/, ''),
    // Without a run summary nothing says what made the files: the board says so rather than guess.
    kind: o.kind ?? found.kind ?? 'unknown',
    ...((o.description ?? found.description)
      ? { description: (o.description ?? found.description) as string }
      : {}),
    ...(o.team !== undefined ? { team: o.team } : {}),
    ...(o.link !== undefined ? { link: o.link } : {}),
    ...(board !== 'auto' ? { board } : {}),
    ...(found.trust ? { trust: found.trust } : {}),
    ...(found.usage ? { usage: found.usage } : {}),
  };
  return { files, metadata };
}

/** The same content and metadata give the same key: a repeat lands once. */
export function idempotencyKey(upload: Upload): string {
  const h = createHash('sha256');
  for (const f of upload.files) h.update(f.name).update('\0').update(f.data).update('\0');
  h.update(JSON.stringify(Object.entries(upload.metadata).sort()));
  return `rmb-${h.digest('hex').slice(0, 40)}`;
}

/**
 * An lm-evaluation-harness output folder's upload: the run folder `eval PATH --out RUN` writes (the same reader and
 * writer, in a temporary folder removed at once), so that the board gets what it would get from RUN. A run with
 * problems (a missing, duplicated or foreign item, a prompt not ours) is refused with the first of them, as `eval`
 * names them.
 */
async function lmEvalUpload(path: string, o: Omit<SubmitOptions, 'server'>): Promise<Upload> {
  const [{ evaluateSubmission }, { readLmEval }, { writeLmEvalRunFolder }] = await Promise.all([
    import('../scoring/score.js'),
    import('../scoring/lm-eval.js'),
    import('../scoring/lm-eval-run.js'),
  ]);
  const data = o.dataDir !== undefined ? { dataDir: o.dataDir } : {};
  const result = await evaluateSubmission(path, { ...data, bootstrap: 0 });
  const first = result.errors[0];
  if (first)
    throw new RumedbenchError(
      'SUBMISSION_INVALID',
      `${path}: ${result.errors.length} problem${result.errors.length === 1 ? '' : 's'} in this lm-evaluation-harness run, the first: ${formatIssue(first)}; \`rumedbench eval ${path}\` lists them`,
    );
  const run = mkdtempSync(join(tmpdir(), 'rumedbench-lmeval-upload-'));
  try {
    await writeLmEvalRunFolder(await readLmEval(path, data), result, run);
    return collectUpload(run, o);
  } finally {
    rmSync(run, { recursive: true, force: true });
  }
}

export async function submitRun(path: string, o: SubmitOptions): Promise<SubmitAnswer> {
  const upload = isLmEvalOutput(path) ? await lmEvalUpload(path, o) : collectUpload(path, o);
  if (upload.metadata.kind === 'unknown' && o.kind === undefined)
    o.log?.warn(
      `${path}: no run summary says what kind of system made these predictions: the board shows "unknown" (--kind LLM, encoder, feature-based or baseline says it)`,
    );
  const key = idempotencyKey(upload);
  const base = o.server.replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(`${base}/api/submissions`);
  } catch {
    throw new UsageError(`--server: not a URL: ${o.server}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--server: an http(s) URL, got ${redactCredentials(o.server)}`);
  if (url.username || url.password)
    throw new UsageError(
      '--server must not carry a user name or password: a team token goes in RUMEDBENCH_TOKEN',
    );
  const attempts = o.attempts ?? 5;
  let answer: Answer;
  try {
    answer = await send(
      url,
      () => {
        const form = new FormData();
        for (const f of upload.files) form.append('file', new Blob([new Uint8Array(f.data)]), f.name);
        for (const [k, v] of Object.entries(upload.metadata)) form.append(k, v);
        return {
          method: 'POST',
          body: form,
          headers: { 'idempotency-key': key, ...(o.token ? { authorization: `Bearer ${o.token}` } : {}) },
        };
      },
      {
        maxBytes: MAX_ANSWER_BYTES,
        retry: { retries: attempts - 1, maxWaitMs: (o.maxWaitS ?? 120) * 1000 },
        onRetry: (n) =>
          o.log?.warn(
            `${url.origin}: ${n.reason}; retrying in ${(n.waitMs / 1000).toFixed(1)} s (${n.attempt}/${attempts - 1})`,
          ),
      },
    );
  } catch (e) {
    if (!(e instanceof TransportError)) throw e;
    throw new SubmitUnreachableError(
      `could not reach the leaderboard after ${e.attempts} attempts: ${url.origin}: ${e.message}`,
    );
  }
  return answerOf(answer, base);
}

/** The most of a leaderboard's answer read: its JSON is a few kilobytes. */
const MAX_ANSWER_BYTES = 1 << 20;

function answerOf(res: Answer, base: string): SubmitAnswer {
  const text = res.text;
  if (text === null)
    throw new SubmitUnreachableError(
      `${base} answered ${res.status} with more than ${MAX_ANSWER_BYTES} bytes: not the leaderboard's JSON`,
    );
  let body: Record<string, unknown>;
  try {
    // Whatever the server says is printed as text: no terminal escapes, no NUL.
    body = printableDeep(JSON.parse(text) as Record<string, unknown>);
  } catch {
    throw new SubmitUnreachableError(
      `${base} answered ${res.status} with something that is not the leaderboard's JSON: ${printable(text, 200)}`,
    );
  }
  const id = typeof body.id === 'string' ? body.id : undefined;
  return {
    status: res.status,
    body,
    replayed: res.headers.get('idempotent-replayed') === 'true',
    ...(id && body.status !== 'rejected' ? { url: `${base}/submissions/${id}` } : {}),
  };
}

export type { SubmissionIssue };

/** A run's settings as `key=value` pairs (values as JSON), those it left unset omitted. */
function settings(shown: Record<string, unknown>): string {
  return Object.entries(shown)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
}
