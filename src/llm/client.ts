/**
 * The resilient HTTP client that every model server's protocol speaks through (OpenAI-compatible servers, Anthropic's
 * Messages API, both batch APIs): one request at a time through the shared transport (a timeout, a capped body, no
 * redirects), with this client's own retries, pauses and circuit breaker. The protocols (./openai.ts,
 * ./anthropic.ts) say what they send and how to read the answer; how to survive a server is said here, once.
 *
 * Every reply is treated as possibly broken. Three outcomes of a failed request:
 * - retried (429, 5xx, 408, timeouts, dropped connections), with exponential backoff and equal jitter (half fixed,
 *   half random); a 429's `Retry-After` pauses every request of the run (the server asked the client, not one
 *   request, to slow down), and no single wait is longer than `maxWaitMs` (a longer `Retry-After` fails the request,
 *   saying so);
 * - failed, the run going on (a 400 such as a prompt over the context length, a reply with no text, a reply over
 *   `maxReplyBytes`, log-probabilities that cannot be right): journaled with its reason, re-askable later;
 * - fatal: the run stops at once (401/403: the key; 404: the model or the URL; any redirect), since retrying or
 *   going on cannot help. Redirects are never followed: they could carry the key and custom headers elsewhere.
 *
 * Across requests, a circuit breaker: after `downAfter` requests in a row that could not reach the server or timed out
 * (whichever item they were for), the endpoint is taken as down and every request, retries included, fails at once
 * with `LLM_ENDPOINT_DOWN`: a dead or hanging server stops a run within one timeout, not after every item's retries.
 * Any HTTP answer, even an error, closes the count again. The key and the values of custom headers are remembered
 * as secrets (log.ts), so that no message echoing them reaches a journal, a log or the terminal.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../data/jsonl.js';
import type { ConnectGuard } from '../data/public-address.js';
import { PrivateAddressError } from '../data/public-address.js';
import type { SavedBody } from '../data/read-capped.js';
import { type Answer, backoffMs, retryAfterMs, send, TransportError } from '../data/transport.js';
import { type ErrorCode, RumedbenchError, UsageError } from '../errors.js';
import { redactSecrets, rememberSecret } from '../log.js';

export class LlmRequestError extends RumedbenchError {
  readonly status: number | undefined;
  readonly retryable: boolean;
  /** No later request can succeed either (the key, the model, the URL): the run stops. */
  readonly fatal: boolean;
  /** A reply that is not what the protocol says (retried once at most: a server that garbles once garbles again). */
  readonly malformed: boolean;
  /** A 429's Retry-After, in ms. */
  readonly retryAfter: number | undefined;
  /** The server was not reached, or did not answer in time (what the circuit breaker counts). */
  readonly unreachable: boolean;
  /** Log-probabilities no model gives (positive, not finite, far too low, all alike): the server is wrong. */
  readonly impossible: boolean;
  /** Log-probabilities whose echoed tokens are not the prompt's that was sent (another prompt's, a token more or less). */
  readonly echoMismatch: boolean;
  /**
   * A successful answer (2xx) cut off past the reply cap: a reply the server made, and bills, though it was not read.
   * `bytes` is its declared length (Content-Length), where it declared one; `url` the address that gave it.
   */
  readonly overCap: { url: string; cap: number; bytes: number | undefined } | undefined;
  constructor(
    message: string,
    status: number | undefined,
    retryable: boolean,
    options: {
      cause?: unknown;
      fatal?: boolean;
      down?: boolean;
      malformed?: boolean;
      retryAfter?: number;
      unreachable?: boolean;
      impossible?: boolean;
      echoMismatch?: boolean;
      overCap?: { url: string; cap: number; bytes: number | undefined };
      /** A code of its own (a refused address), in place of the one `down` and `fatal` give. */
      code?: ErrorCode;
    } = {},
  ) {
    super(
      options.code ??
        (options.down ? 'LLM_ENDPOINT_DOWN' : options.fatal ? 'LLM_SERVER_REFUSED' : 'LLM_REQUEST_FAILED'),
      redactSecrets(message),
      { cause: options.cause },
    );
    this.name = 'LlmRequestError';
    this.status = status;
    this.retryable = retryable;
    this.fatal = (options.fatal ?? false) || (options.down ?? false);
    this.malformed = options.malformed ?? false;
    this.retryAfter = options.retryAfter;
    this.unreachable = options.unreachable ?? false;
    this.impossible = options.impossible ?? false;
    this.echoMismatch = options.echoMismatch ?? false;
    this.overCap = options.overCap;
  }
}

/** A wait before a retry, for the user to see (a long one must not look like a hang). */
export interface RetryNotice {
  url: string;
  attempt: number;
  maxRetries: number;
  waitMs: number;
  reason: string;
}

/** How the client reaches a server and survives it: the same for every protocol. */
export interface ClientOptions {
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Per request, in ms; 120 s by default. */
  timeoutMs?: number;
  /** Retries after the first attempt; 6 by default. */
  maxRetries?: number;
  /** First backoff in ms, doubled each retry, with equal jitter; 1 s by default. */
  backoffMs?: number;
  /** Ceiling of one backoff, in ms; 60 s by default. */
  maxBackoffMs?: number;
  /** The longest single wait (backoff or Retry-After), in ms; 60 s by default. A longer Retry-After fails the request. */
  maxWaitMs?: number;
  /** Bytes of one reply at most, counted while it arrives; 4 MiB by default. */
  maxReplyBytes?: number;
  /** Told of every retry before its wait. */
  onRetry?: (notice: RetryNotice) => void;
  /**
   * Requests in a row that could not reach the server or timed out, across all items, after which the endpoint is
   * taken as down and the run stops (the circuit breaker); 5 by default, 0 never.
   */
  downAfter?: number;
  /**
   * HTTP requests in flight at most, whatever asks for them (`--concurrency`): a log-likelihood item sends one
   * /tokenize per candidate, and without this bound 8 RuMedTop3 items would open some 850 connections. 8 by default.
   */
  maxInFlight?: number;
  /**
   * Connect only to public addresses, checked at every connection (the platform's workers); a refused address
   * stops the run at once (`PRIVATE_ADDRESS`). A local run (`llm`, `plan run`) has none: its server may be anywhere.
   */
  guard?: ConnectGuard;
}

export const DEFAULT_MAX_REPLY_BYTES = 4 << 20;
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_WAIT_MS = 60_000;
export const DEFAULT_DOWN_AFTER = 5;
/** How long an open breaker refuses every request before one may try again. */
const BREAKER_COOL_DOWN_MS = 5000;

/** How one request of the client is made (see `post`). */
export interface RequestOptions {
  notFoundIsFatal?: boolean;
  maxReplyBytes?: number;
  method?: 'GET' | 'POST';
  form?: FormData;
  /** A JSON body already written (a batch's requests, joined from their lines; a file's, as a Blob). */
  rawBody?: string | Blob;
  raw?: boolean;
  /**
   * Write a successful answer to this file rather than read it (a batch's results): `text` is then ''. A SavedBody
   * given to every attempt of one request continues a body that broke off from where it broke (../data/read-capped.ts).
   */
  saveTo?: string | SavedBody;
  /** What `maxReplyBytes` is, for the message when an answer passes it (default: the reply cap). */
  capIs?: string;
  /** The whole request's deadline, where it is not `--timeout-ms` (a batch's results: ./batch.ts downloadDeadlineMs). */
  timeoutMs?: number;
}

interface Breaker {
  /** Requests in a row that did not reach the server. */
  inARow: number;
  /** Since when the endpoint is taken as down, and the error every request then fails with. */
  open?: { at: number; error: LlmRequestError } | undefined;
}

/**
 * The breakers by base URL: the cells of a plan, or the jobs of a worker, that ask one endpoint share what they
 * learn of it, so that a dead endpoint costs its first few requests once, not once per cell.
 */
const BREAKERS = new Map<string, Breaker>();

/** Refuses a base URL that carries credentials: they would be written into the manifest and the journal. */
export function checkBaseUrl(baseUrl: string): URL {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    throw new UsageError(`--base-url: not a URL: "${baseUrl}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new UsageError(`--base-url: an http:// or https:// URL, not "${u.protocol}"`);
  if (u.username !== '' || u.password !== '') {
    throw new UsageError(
      '--base-url must not carry a user name or password (they would be written into the run folder): give the key with --api-key-env, or a header with --header-env',
    );
  }
  if (u.search !== '' || u.hash !== '') {
    throw new UsageError(
      `--base-url must not carry a query or a fragment ("${u.search !== '' ? '?…' : '#…'}"): the request paths are added after the base, and a key in the query would be written into the run folder; give the key with --api-key-env, or a header with --header-env`,
    );
  }
  return u;
}

/** What a server said about an error: OpenAI's `{error: {message}}`, vLLM's `{message}`, FastAPI's `{detail}`, or the text. */
export function serverMessage(json: unknown, text: string): string | undefined {
  const j = json as { error?: unknown; message?: unknown; detail?: unknown } | undefined;
  const candidates = [
    (j?.error as { message?: unknown } | undefined)?.message,
    j?.error,
    j?.message,
    j?.detail,
  ];
  const found = candidates.find((m): m is string => typeof m === 'string' && m.trim() !== '');
  if (found) return found.trim().slice(0, 500);
  if (json === undefined && text.trim() !== '') return snippet(text);
  return undefined;
}

/** The start of a body for a message: tags of an HTML page dropped, whitespace folded. */
export function snippet(text: string, length = 200): string {
  const plain = text
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return plain.length > length ? `${plain.slice(0, length)}…` : plain;
}

/** Why a fetch failed, with the host and the system's code (fetch's own message is only "fetch failed"). */
export function connectionProblem(url: string, e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string; hostname?: string } };
  if (err.name === 'TimeoutError') return 'timed out';
  const host = (() => {
    try {
      return new URL(url).host;
    } catch {
      return url;
    }
  })();
  const cause = err.cause;
  const code = cause?.code ? ` (${cause.code})` : '';
  const why =
    cause?.code === 'ENOTFOUND' || cause?.code === 'EAI_AGAIN'
      ? 'the host name does not resolve'
      : cause?.code === 'ECONNREFUSED'
        ? 'nothing listens there'
        : (cause?.message ?? err.message);
  return `cannot reach ${host}: ${why}${code}`;
}

const CONTEXT_LENGTH =
  /context.length|context window|maximum context|too many tokens|prompt is too long|max_tokens|context_length_exceeded|longer than the model/i;

/** A Content-Length header's bytes; undefined where it is absent or not a count. */
const declaredLength = (header: string | null): number | undefined =>
  header !== null && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : undefined;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One server's client: its base URL, its key's way of travelling (`auth`: OpenAI's bearer token, Anthropic's
 * `x-api-key`), its requests in flight, its pauses and its share of the endpoint's breaker.
 */
export class ResilientClient {
  private pausedUntil = 0;
  private inFlight: LimitFunction;
  private beforeRetry: (() => Promise<void>) | undefined;
  /** The endpoint's circuit breaker, shared by every client of this process that asks the same base URL. */
  private readonly breaker: Breaker;

  constructor(
    readonly options: ClientOptions,
    /** The headers that carry the key (and the protocol's version), added to every request. */
    private readonly auth: () => Record<string, string>,
    /** The address named in retry notices (the protocol's main endpoint). */
    private readonly label: string,
  ) {
    checkBaseUrl(options.baseUrl);
    rememberSecret(options.apiKey);
    const key = options.baseUrl.replace(/\/+$/, '');
    this.breaker = BREAKERS.get(key) ?? { inARow: 0 };
    BREAKERS.set(key, this.breaker);
    for (const v of Object.values(options.headers ?? {})) rememberSecret(v);
    this.inFlight = pLimit(Math.max(1, options.maxInFlight ?? 8));
  }

  /** The base URL, without a trailing slash. */
  get base(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  /** The reply cap of one request (`--max-reply-bytes`). */
  get replyCap(): number {
    return this.options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
  }

  /** One attempt's time limit, ms (`--timeout-ms`; 120 s by default). */
  get timeoutMs(): number {
    return this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** One request with the client's retries, breaker and caps. */
  async call<T>(url: string, body: unknown, options: RequestOptions = {}) {
    return this.retrying(() => this.post<T>(url, body, options));
  }

  /**
   * One request, one attempt (the same caps and key handling, no retry): a call that must not be repeated blindly,
   * such as creating a batch, whose caller looks the outcome up before trying again.
   */
  async callOnce<T>(url: string, body: unknown, options: RequestOptions = {}) {
    this.checkBreaker();
    return this.post<T>(url, body, options);
  }

  limitInFlight(n: number): void {
    this.inFlight = pLimit(Math.max(1, n));
  }

  /** See Provider.checkBeforeRetry. */
  checkBeforeRetry(check: () => Promise<void>): void {
    this.beforeRetry = check;
  }

  /** See Provider.breakerWaitMs. */
  breakerWaitMs(): number {
    const open = this.breaker.open;
    return open ? Math.max(0, BREAKER_COOL_DOWN_MS - (Date.now() - open.at)) : 0;
  }

  /** Runs `f` (one attempt of a request) until it answers, with the retries, pauses and breaker above. */
  async retrying<T>(f: () => Promise<T>): Promise<T> {
    const maxRetries = this.options.maxRetries ?? 6;
    const base = this.options.backoffMs ?? 1000;
    const maxWait = this.options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    const cap = Math.min(this.options.maxBackoffMs ?? 60_000, maxWait);
    let malformed = 0;
    for (let attempt = 0; ; attempt++) {
      const wait = Math.min(this.pausedUntil - Date.now(), maxWait);
      if (wait > 0) await sleep(wait);
      this.checkBreaker();
      try {
        const answer = await f();
        this.closeBreaker();
        return answer;
      } catch (e) {
        const err =
          e instanceof LlmRequestError ? e : new LlmRequestError(String(e), undefined, true, { cause: e });
        if (err.unreachable) this.noteUnreachable(err);
        else if (err.status !== undefined) this.closeBreaker();
        this.checkBreaker();
        if (err.malformed) malformed++;
        if (!err.retryable || attempt >= maxRetries || malformed > 1) throw err;
        const hinted = err.retryAfter;
        if (hinted !== undefined && hinted > maxWait) {
          throw new LlmRequestError(
            `${err.message}: the server asks to wait ${Math.round(hinted / 1000)} s (Retry-After), longer than --max-wait ${Math.round(maxWait / 1000)} s`,
            err.status,
            false,
          );
        }
        const delay = hinted ?? backoffMs(attempt, { baseMs: base, capMs: cap });
        if (hinted !== undefined) this.pausedUntil = Math.max(this.pausedUntil, Date.now() + hinted);
        this.options.onRetry?.({
          url: this.label,
          attempt: attempt + 1,
          maxRetries,
          waitMs: delay,
          reason: err.message,
        });
        await sleep(delay);
        await this.beforeRetry?.();
      }
    }
  }

  /** One more request that did not reach the server; at `downAfter` in a row, the endpoint is down. */
  private noteUnreachable(err: LlmRequestError): void {
    const limit = this.options.downAfter ?? DEFAULT_DOWN_AFTER;
    const b = this.breaker;
    b.inARow++;
    if (limit <= 0 || b.inARow < limit || b.open) return;
    b.open = {
      at: Date.now(),
      error: new LlmRequestError(
        `${this.options.baseUrl} is down: ${b.inARow} requests in a row could not reach it or timed out (the last: ${err.message}); nothing more is sent to it`,
        undefined,
        false,
        { down: true, cause: err },
      ),
    };
  }

  /**
   * Open: every request fails at once. After the cool-down, one request at a time may try (a cell queued again a
   * round later, in a worker that keeps its process); its failure opens the breaker again, its success closes it.
   */
  private checkBreaker(): void {
    const open = this.breaker.open;
    if (!open) return;
    if (Date.now() - open.at < BREAKER_COOL_DOWN_MS) throw open.error;
    this.breaker.open = undefined;
    this.breaker.inARow = Math.max(0, (this.options.downAfter ?? DEFAULT_DOWN_AFTER) - 1);
  }

  private closeBreaker(): void {
    this.breaker.inARow = 0;
    this.breaker.open = undefined;
  }

  /** One POST of JSON; HTTP errors become LlmRequestErrors (429 with its Retry-After), retryable where they may pass. */
  async post<T>(
    url: string,
    body: unknown,
    /**
     * notFoundIsFatal: a 404 stops the run (wrong model or URL); not for optional endpoints, whose 404 means "not
     * offered". maxReplyBytes: the reply cap of a request whose reply is large by design (echoed prompts). method,
     * form, raw: a GET, a multipart upload, a reply that is not one JSON value (a batch's JSONL results).
     */
    options: RequestOptions = {},
  ): Promise<{ json: T | undefined; text: string; status: number }> {
    // The slot is held from the request until its body is read (or refused), never across a retry's wait.
    return this.inFlight(() => this.postNow<T>(url, body, options));
  }

  private async postNow<T>(
    url: string,
    body: unknown,
    options: RequestOptions,
  ): Promise<{ json: T | undefined; text: string; status: number }> {
    const method = options.method ?? 'POST';
    const payload = options.form ?? options.rawBody ?? (method === 'GET' ? undefined : JSON.stringify(body));
    // One attempt through the shared transport (timeout, capped body, no redirects); this client's own loop
    // (\`retrying\`) decides on retries, since a 429 pauses every request of the run.
    const cap = options.maxReplyBytes ?? this.options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    let res: Answer;
    try {
      res = await send(
        url,
        () => ({
          method,
          headers: {
            ...(typeof payload === 'string' || payload instanceof Blob
              ? { 'content-type': 'application/json' }
              : {}),
            ...this.auth(),
            ...this.options.headers,
          },
          ...(payload !== undefined ? { body: payload } : {}),
        }),
        {
          maxBytes: cap,
          timeoutMs: options.timeoutMs ?? this.timeoutMs,
          retry: { retries: 0 },
          ...(options.saveTo ? { saveTo: options.saveTo } : {}),
          ...(this.options.guard ? { guard: this.options.guard } : {}),
        },
      );
    } catch (e) {
      // No retry reaches another address: the run stops, saying where the name led.
      if (e instanceof PrivateAddressError)
        throw new LlmRequestError(`${url}: not connected: ${e.message}`, undefined, false, {
          cause: e,
          fatal: true,
          code: 'PRIVATE_ADDRESS',
        });
      if (!(e instanceof TransportError)) throw e;
      // A body that does not decode as it says is the server's broken answer: retried once at most, as a reply that
      // is not JSON is, and never counted by the breaker (the server answered).
      if (e.undecodable !== undefined)
        throw new LlmRequestError(`${url}: ${e.message}`, e.status, true, { cause: e, malformed: true });
      if (e.phase === 'read') {
        const cause = e.cause as Error | undefined;
        const resumeAt = typeof options.saveTo === 'object' ? options.saveTo.resumeAt : 0;
        throw new LlmRequestError(
          `${url}: the reply broke off (${cause?.name === 'TimeoutError' ? `timed out after ${Math.round((options.timeoutMs ?? this.timeoutMs) / 1000)} s` : (cause?.message ?? e.message)})${resumeAt > 0 ? `; the server offers ranges: the next try asks from byte ${resumeAt} on` : ''}`,
          e.status,
          true,
          { cause: e, unreachable: true },
        );
      }
      const why = connectionProblem(url, e.cause);
      const timeout = why === 'timed out';
      throw new LlmRequestError(
        `${url}: ${timeout ? `timed out after ${Math.round((options.timeoutMs ?? this.timeoutMs) / 1000)} s` : why}`,
        undefined,
        true,
        { cause: e, unreachable: true },
      );
    }
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      let target = '(no Location)';
      try {
        if (location) target = new URL(location, url).toString();
      } catch {
        target = location ?? target;
      }
      throw new LlmRequestError(
        `${url}: HTTP ${res.status}, a redirect to ${target.slice(0, 300)}; redirects are not followed (the key and headers could go elsewhere): give the final address as --base-url`,
        res.status,
        false,
        { fatal: true },
      );
    }
    if (res.text === null)
      throw new LlmRequestError(
        `${url}: the reply is larger than ${options.capIs ?? (options.maxReplyBytes === undefined ? '--max-reply-bytes' : 'the request can explain (--max-reply-bytes plus a bound per echoed token)')} (${cap} bytes); it was cut off and not read`,
        res.status,
        false,
        res.status >= 200 && res.status < 300
          ? { overCap: { url, cap, bytes: declaredLength(res.headers.get('content-length')) } }
          : {},
      );
    const text = res.text;
    if ((options.raw || options.saveTo) && res.status >= 200 && res.status < 300)
      return { json: undefined, text, status: res.status };
    let json: T | undefined;
    // A reply nested millions deep parses for seconds on this thread (a worker's heartbeat with it): refused.
    const deep = nestsDeeperThan(text, MAX_JSON_DEPTH);
    try {
      json = deep ? undefined : (JSON.parse(text) as T);
    } catch {
      json = undefined;
    }
    if (res.status < 200 || res.status >= 300) {
      const detail = serverMessage(json, text);
      const said = `${url}: HTTP ${res.status}${detail ? `: ${detail}` : ''}`;
      if (res.status === 401 || res.status === 403) {
        throw new LlmRequestError(
          `${said} (the server refused the key: check --api-key-env and --header)`,
          res.status,
          false,
          {
            fatal: true,
          },
        );
      }
      if (res.status === 404 && (options.notFoundIsFatal ?? true)) {
        throw new LlmRequestError(
          `${said} (no such model or endpoint: check --model and --base-url, which usually ends in /v1)`,
          res.status,
          false,
          { fatal: true },
        );
      }
      const retryable = res.status === 429 || res.status >= 500 || res.status === 408;
      const context = !retryable && detail !== undefined && CONTEXT_LENGTH.test(detail);
      const after =
        res.status === 429 || res.status === 503 ? retryAfterMs(res.headers.get('retry-after')) : undefined;
      throw new LlmRequestError(
        context
          ? `${said} (the prompt does not fit the model's context: this item fails, the run goes on)`
          : said,
        res.status,
        retryable,
        after !== undefined ? { retryAfter: after } : {},
      );
    }
    if (json === undefined) {
      throw new LlmRequestError(
        deep
          ? `${url}: the reply nests deeper than ${MAX_JSON_DEPTH} levels: not read (no chat completion does)`
          : `${url}: the reply is not JSON: ${snippet(text) || '(empty)'}`,
        res.status,
        true,
        {
          malformed: true,
        },
      );
    }
    return { json, text, status: res.status };
  }
}
