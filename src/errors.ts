/**
 * Typed errors. Every error a user can cause carries a stable `code` string (for scripts and tests) and the
 * context needed to act on it; the CLI prints `message` and never a stack trace for these.
 */

export type ErrorCode =
  | 'USAGE'
  | 'UNKNOWN_TASK'
  | 'DATA_NOT_FOUND'
  | 'DATA_INVALID'
  /** A file that is not UTF-8 (its likely encoding named). */
  | 'BAD_ENCODING'
  | 'SUBMISSION_NOT_FOUND'
  | 'SUBMISSION_INVALID'
  | 'DOWNLOAD_FAILED'
  | 'CHECKSUM_MISMATCH'
  | 'MODEL_INVALID'
  | 'LLM_REQUEST_FAILED'
  /** The server refused what no retry can fix (the key, the model, the URL, a redirect): the run stopped. */
  | 'LLM_SERVER_REFUSED'
  /** Requests in a row could not reach the model server or timed out (the circuit breaker): the run stopped. */
  | 'LLM_ENDPOINT_DOWN'
  /**
   * A successful reply past the reply cap: the server wrote (and bills) more than max_tokens allows, so no estimate
   * bounds what it costs: the run stopped.
   */
  | 'LLM_MAX_TOKENS_IGNORED'
  /** Most replies were echoes of the prompt, or cut off or filtered: read as answers, they would score noise. */
  | 'REPLIES_UNUSABLE'
  /** The engine's log-likelihood method cannot score a task's candidates. */
  | 'LOGLIK_UNSUPPORTED'
  /** A run that scored no item at all. */
  | 'NOTHING_SCORED'
  /** An LLM run whose cost would pass, or has reached, its `--max-cost`: nothing (more) was sent. */
  | 'COST_LIMIT'
  /** Some requests of an LLM run failed and were not accepted (`--allow-failures`): not scored. */
  | 'RUN_INCOMPLETE'
  /**
   * A batch whose creating call got no answer, looked up at a provider that keeps no tag (Anthropic), matched by more
   * than one batch: none is collected, none created.
   */
  | 'BATCH_AMBIGUOUS'
  | 'REPORT_INPUT_INVALID'
  /** A run folder whose summary.json or manifest does not fit the run-folder schema. */
  | 'RUN_FOLDER_INVALID'
  | 'DATABASE_FAILED'
  /** An optional inference engine (node-llama-cpp, onnxruntime-node, …) is not installed. */
  | 'ENGINE_MISSING'
  | 'SERVER_CONFIG'
  /** A leaderboard that could not be reached, or did not answer as its API does. */
  | 'SUBMIT_UNREACHABLE'
  /** An evaluation plan that cannot be run as written (its file, line and column named). */
  | 'PLAN_INVALID'
  /** A plan id the queue's database does not hold. */
  | 'PLAN_NOT_FOUND'
  /** A model server the platform's allow-list (`serve endpoint add`) does not name. */
  | 'ENDPOINT_NOT_ALLOWED'
  /**
   * A model server whose host is, or resolves to, this machine, a private network or a metadata service, where only
   * public addresses are connected to (the platform's workers without `--allow-private`).
   */
  | 'PRIVATE_ADDRESS'
  /** A proxy setting (HTTPS_PROXY, HTTP_PROXY, `--proxy`) that is not an http:// or https:// URL. */
  | 'PROXY_INVALID'
  /** A key or header variable a worker will not send: one of its own secrets, or one not named by `--endpoint-keys`. */
  | 'ENDPOINT_KEY_REFUSED'
  /** A task definition file that does not fit `rumedbench.task/1` (its file, line and column named). */
  | 'TASK_INVALID'
  /** A run spec (a file, a manifest's `spec`, a queue row) that does not fit the spec's schema. */
  | 'RUN_SPEC_INVALID'
  /** The queue's database holds a schema of another version than this process knows. */
  | 'QUEUE_SCHEMA_MISMATCH'
  /** A folder a command writes (an --out, a worker's temporary folder) cannot be written: named, with the fix. */
  | 'STORAGE_REFUSED'
  /** A WebAssembly kernel (its .wat named) that this Node.js cannot compile: one without the features it needs. */
  | 'WASM_KERNEL';

export class RumedbenchError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RumedbenchError';
    this.code = code;
  }
}

/** A bad command line: wrong flag, unknown task name, incompatible options. The CLI exits with 2. */
export class UsageError extends RumedbenchError {
  constructor(message: string) {
    super('USAGE', message);
    this.name = 'UsageError';
  }
}

/** A data file that is missing where it is required. */
export class DataNotFoundError extends RumedbenchError {
  readonly file: string;
  constructor(file: string, hint: string) {
    super('DATA_NOT_FOUND', `${file}: not found. ${hint}`);
    this.name = 'DataNotFoundError';
    this.file = file;
  }
}

/** Where in a JSONL file a problem sits. */
export interface Location {
  file: string;
  /** 1-based line number; absent for problems that concern the whole file. */
  line?: number;
  id?: string;
}

export function formatLocation(loc: Location): string {
  let out = loc.file;
  if (loc.line !== undefined) out += `:${loc.line}`;
  if (loc.id !== undefined) out += ` (id ${loc.id})`;
  return out;
}

/** One problem with a data file: `file:line (id …): what was wrong`. */
export interface DataIssue extends Location {
  message: string;
}

/** A data file whose records do not match their task's schema. Lists every bad line, not only the first. */
export class DataInvalidError extends RumedbenchError {
  readonly issues: readonly DataIssue[];
  constructor(issues: readonly DataIssue[]) {
    const shown = issues.slice(0, 20).map((i) => `  ${formatLocation(i)}: ${i.message}`);
    const more = issues.length > 20 ? [`  … and ${issues.length - 20} more`] : [];
    super('DATA_INVALID', [`${issues.length} invalid record(s):`, ...shown, ...more].join('\n'));
    this.name = 'DataInvalidError';
    this.issues = issues;
  }
}

export class DownloadError extends RumedbenchError {
  readonly url: string;
  constructor(url: string, message: string, options?: { cause?: unknown }) {
    super('DOWNLOAD_FAILED', `${url}: ${message}`, options);
    this.name = 'DownloadError';
    this.url = url;
  }
}

export class ChecksumError extends RumedbenchError {
  readonly url: string;
  readonly expected: string;
  readonly found: string;
  constructor(url: string, what: 'size' | 'sha256' | 'git blob sha1', expected: string, found: string) {
    super('CHECKSUM_MISMATCH', `${url}: ${what} mismatch: expected ${expected}, found ${found}`);
    this.name = 'ChecksumError';
    this.url = url;
    this.expected = expected;
    this.found = found;
  }
}

/** A saved model folder that cannot be loaded (missing files, another format version, another task). */
export class ModelError extends RumedbenchError {
  readonly dir: string;
  constructor(dir: string, message: string) {
    super('MODEL_INVALID', `${dir}: ${message}`);
    this.name = 'ModelError';
    this.dir = dir;
  }
}

/** A plan file that cannot be run: `plan.yaml:LINE:COL: reason`, one line per problem. */
export class PlanError extends RumedbenchError {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(
      'PLAN_INVALID',
      problems.length === 1
        ? (problems[0] as string)
        : `${file}: ${problems.length} problems:\n  ${problems.join('\n  ')}`,
    );
  }
}

/** A run spec that does not fit its schema: where it came from, and each problem with its path in the spec. */
export class RunSpecError extends RumedbenchError {
  constructor(
    readonly where: string,
    readonly problems: readonly string[],
  ) {
    super('RUN_SPEC_INVALID', `${where}: not a valid run spec:\n  ${problems.join('\n  ')}`);
    this.name = 'RunSpecError';
  }
}

/** Task definition files that cannot be used: `task.yaml:LINE:COL: reason`, one line per problem. */
export class TaskDefinitionError extends RumedbenchError {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(
      'TASK_INVALID',
      problems.length === 1
        ? (problems[0] as string)
        : `${file}: ${problems.length} problems:\n  ${problems.join('\n  ')}`,
    );
    this.name = 'TaskDefinitionError';
  }
}
