/**
 * The one outbound HTTP transport (the LLM client, the embeddings endpoint, `submit`, `data download`): a timeout per
 * attempt, a capped body, redirects never followed, and retries that honour Retry-After and otherwise wait with
 * exponential backoff and jitter. Callers say what they send and how to read the answer, not how to retry.
 */
import type { Dispatcher, RequestInit as UndiciInit } from 'undici';
import { type ProxySettings, plainDispatcher, proxySettings } from './proxy.js';
import { type ConnectGuard, privateAddressCause } from './public-address.js';
import { readCapped, readHead, SavedBody } from './read-capped.js';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** The first backoff's ceiling, ms: the first wait is between half of it and all of it (default 500). */
  baseMs?: number;
  /** No backoff is longer, ms (default 30 s). */
  capMs?: number;
  /** A Retry-After longer than this is not waited out: the answer is returned as it is (default 120 s). */
  maxWaitMs?: number;
}

/**
 * Retry-After in milliseconds (seconds or an HTTP date), or undefined where it gives no usable wait: absent,
 * unreadable, zero or negative, or a date already past. Then the caller backs off instead of asking again at once.
 */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

/**
 * The wait before retry `attempt` (0 for the first retry): exponential backoff with "equal jitter" (half fixed, half
 * random), so that the waits grow and clients that failed together do not retry together.
 */
export function backoffMs(
  attempt: number,
  p: Pick<RetryPolicy, 'baseMs' | 'capMs'> = {},
  random = Math.random,
): number {
  const ceiling = Math.min(p.capMs ?? 30_000, (p.baseMs ?? 500) * 2 ** attempt);
  return ceiling / 2 + random() * (ceiling / 2);
}

/** Statuses that may pass: the server is busy, overloaded or restarting. */
export const TRANSIENT = (status: number): boolean =>
  status === 408 || status === 429 || status === 502 || status === 503 || status === 504;

export interface SendOptions {
  /** One attempt's limit, ms (default 120 s). */
  timeoutMs?: number;
  /** Bytes of the answer at most. */
  maxBytes: number;
  /**
   * Write a successful answer to this file instead of reading it (`text` is then '' when it fit, null when it did
   * not); an error's answer is read, its first 64 KiB, for its message. A SavedBody kept across attempts resumes a
   * body that broke off, where the server offers ranges (./read-capped.ts).
   */
  saveTo?: string | SavedBody;
  retry: RetryPolicy;
  /** Which statuses are retried (default TRANSIENT). */
  retryOn?: (status: number) => boolean;
  /** Told before each wait. */
  onRetry?: (n: { attempt: number; waitMs: number; reason: string }) => void;
  sleep?: (ms: number) => Promise<void>;
  /**
   * Connect only to public addresses (./public-address.ts): the platform's workers asking model servers that teams
   * registered. A refused host throws its PrivateAddressError at once, never retried: no later attempt can pass.
   */
  guard?: ConnectGuard;
  /**
   * Which requests go through a proxy (./proxy.ts): the environment's HTTPS_PROXY/HTTP_PROXY/NO_PROXY by default.
   * A guard applies its own (it checks the target before each tunnel).
   */
  proxy?: ProxySettings;
}

export interface Answer {
  status: number;
  headers: Headers;
  /** The body; null when it was longer than `maxBytes` (and was not read on). */
  text: string | null;
}

export class TransportError extends Error {
  constructor(
    message: string,
    readonly attempts: number,
    /** `connect`: no answer came (refused, unreachable, timed out); `read`: the answer broke off while read. */
    readonly phase: 'connect' | 'read',
    options?: { cause?: unknown; status?: number; undecodable?: string },
  ) {
    super(message, options);
    this.name = 'TransportError';
    this.status = options?.status;
    this.undecodable = options?.undecodable;
  }
  /** The answer's status, where one came before it broke off. */
  readonly status: number | undefined;
  /**
   * The Content-Encoding a body declared and does not decode as (`br` over plain text): a broken answer, not a
   * connection that broke off. Undefined for any other failure.
   */
  readonly undecodable: string | undefined;
}

/**
 * zlib's and brotli's codes for a body that is not in its format (a truncated stream, `Z_BUF_ERROR`, is left out: it
 * broke off, and may come whole next time).
 */
const NOT_ITS_FORMAT =
  /^(Z_DATA_ERROR|Z_NEED_DICT|Z_STREAM_ERROR|ERR__ERROR_FORMAT_|ERR_BROTLI_|ERR__ERROR_)/;

/** The declared encoding where `e` (or a cause of it) says the body is not in that format; undefined otherwise. */
function undecodableAs(e: unknown, headers: Headers): string | undefined {
  const encoding = (headers.get('content-encoding') ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return undefined;
  for (let c = e as { code?: unknown; cause?: unknown } | undefined, depth = 0; c && depth < 5; depth++) {
    if (typeof c.code === 'string' && NOT_ITS_FORMAT.test(c.code)) return encoding.slice(0, 40);
    c = c.cause as typeof c;
  }
  return undefined;
}

const wait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const reasonOf = (e: unknown): string => {
  const err = e as Error;
  if (err.name === 'TimeoutError') return 'timed out';
  return err.cause instanceof Error ? err.cause.message : err.message;
};

/**
 * The request for undici's fetch. Node's global FormData is its own undici's class, which the package's fetch does
 * not recognise (it would send "[object FormData]"): a form is copied into the package's FormData, files and all.
 */
function ownForm(init: RequestInit, UndiciFormData: typeof import('undici').FormData): UndiciInit {
  const body = init.body;
  if (!(body instanceof FormData)) return init as unknown as UndiciInit;
  const form = new UndiciFormData();
  for (const [name, value] of body.entries())
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, value.name);
  return { ...(init as unknown as UndiciInit), body: form };
}

/** One attempt's answer, whichever way it was asked: its status and headers, then its body read or let go. */
interface Reply {
  status: number;
  headers: Headers;
  /** The body, capped (null past `maxBytes`; '' when saved to `saveTo` and it fit). */
  read(): Promise<string | null>;
  cancel(): Promise<void>;
}

/** What a request that ran past its time is aborted with: AbortSignal.timeout's reason, which callers read by name. */
const timedOut = () => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

/** The origin and path of a URL, kept per URL text (bounded): a worker asks one endpoint thousands of times. */
const targets = new Map<string, { origin: string; path: string }>();

function targetOf(url: string | URL): { origin: string; path: string } {
  const text = typeof url === 'string' ? url : url.href;
  let t = targets.get(text);
  if (!t) {
    const u = typeof url === 'string' ? new URL(url) : url;
    t = { origin: u.origin, path: `${u.pathname}${u.search}` };
    if (targets.size >= 256) targets.clear();
    targets.set(text, t);
  }
  return t;
}

/**
 * One text request as undici's dispatch handler, with no stream, Request object or AbortSignal: a queue worker sends
 * thousands, and undici's `request` (its handler, a Readable body read through an async iterator, a signal with its
 * listeners, a Headers filled for every answer) was most of the HTTP client's CPU per answered request (#64). One
 * timer bounds the attempt, connecting and reading alike, and aborts it with AbortSignal.timeout's reason; the body is
 * collected as it arrives, counted against the cap; the answer's headers become a Headers only when read (a retry's
 * Retry-After, a redirect's Location). Failures before the answer are shaped as fetch's (a TypeError whose cause is
 * the connection's error), which callers read (../llm/client.ts `connectionProblem`); failures after it reject `read`.
 */
class TextExchange implements Dispatcher.DispatchHandler, Reply {
  status = 0;
  private controller: Dispatcher.DispatchController | undefined;
  /** Why the attempt ended before undici gave it a controller (the timeout): it is aborted with it when it does. */
  private early: Error | undefined;
  private fields: Record<string, string | string[] | undefined> = {};
  private parsed: Headers | undefined;
  private chunks: Buffer[] = [];
  private bytes = 0;
  /** 'head' until the status comes, 'body' while it is read, then 'done'. */
  private phase: 'head' | 'body' | 'done' = 'head';
  private text: string | null | undefined;
  private failure: unknown;
  private readonly timer: NodeJS.Timeout;
  private answered!: (reply: Reply) => void;
  private refused!: (e: unknown) => void;
  private reader: { resolve: (t: string | null) => void; reject: (e: unknown) => void } | undefined;
  readonly head: Promise<Reply>;

  constructor(
    private readonly maxBytes: number,
    timeoutMs: number,
  ) {
    this.head = new Promise<Reply>((resolve, reject) => {
      this.answered = resolve;
      this.refused = reject;
    });
    this.timer = setTimeout(() => this.stop(timedOut()), timeoutMs);
  }

  get headers(): Headers {
    if (!this.parsed) {
      this.parsed = new Headers();
      for (const [name, value] of Object.entries(this.fields))
        if (Array.isArray(value)) for (const v of value) this.parsed.append(name, v);
        else if (value !== undefined) this.parsed.append(name, value);
    }
    return this.parsed;
  }

  /** Ends the attempt with `reason` wherever it is: before the answer, the answer's wait rejects; after, `read`'s. */
  private stop(reason: Error): void {
    if (this.phase === 'done') return;
    if (this.controller) this.controller.abort(reason);
    else this.early = reason;
    this.fail(reason);
  }

  private fail(e: Error): void {
    if (this.phase === 'done') return;
    clearTimeout(this.timer);
    if (this.phase === 'head') {
      this.phase = 'done';
      this.refused(e.name === 'TimeoutError' ? e : new TypeError('fetch failed', { cause: e }));
      return;
    }
    this.phase = 'done';
    this.failure = e;
    this.reader?.reject(e);
  }

  private finish(text: string | null): void {
    clearTimeout(this.timer);
    this.phase = 'done';
    this.text = text;
    this.chunks = [];
    this.reader?.resolve(text);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.early) controller.abort(this.early);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (this.phase !== 'head') return;
    this.status = statusCode;
    this.fields = headers;
    this.phase = 'body';
    this.answered(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.phase !== 'body') return;
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      // Past the cap: not read on (null), the connection let go.
      this.finish(null);
      controller.abort(new Error(`the answer is longer than ${this.maxBytes} bytes`));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.phase !== 'body') return;
    const c = this.chunks;
    this.finish(c.length === 1 ? (c[0] as Buffer).toString('utf8') : Buffer.concat(c).toString('utf8'));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  read(): Promise<string | null> {
    if (this.phase !== 'done')
      return new Promise((resolve, reject) => {
        this.reader = { resolve, reject };
      });
    return this.failure !== undefined ? Promise.reject(this.failure) : Promise.resolve(this.text ?? null);
  }

  async cancel(): Promise<void> {
    if (this.phase === 'done') return;
    clearTimeout(this.timer);
    this.phase = 'done';
    this.chunks = [];
    this.controller?.abort(new Error('the answer was let go unread'));
  }
}

/**
 * One attempt. A request whose body is text (a JSON request: the LLM client's, the embeddings') goes to undici's
 * dispatcher directly (TextExchange); forms and answers saved to a file go through fetch, whose streams, Request
 * objects and clones cost a queue worker about half of its CPU per answered request (#64's profile). Both follow no
 * redirect and give up at `timeoutMs` (connecting and reading alike).
 */
function ask(url: string | URL, init: RequestInit, dispatcher: Dispatcher, o: SendOptions): Promise<Reply> {
  const body = init.body;
  const h = init.headers;
  if (
    o.saveTo === undefined &&
    (body === undefined || body === null || typeof body === 'string') &&
    !(h instanceof Headers) &&
    !Array.isArray(h)
  ) {
    const target = targetOf(url);
    const exchange = new TextExchange(o.maxBytes, o.timeoutMs ?? 120_000);
    dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
        ...(h ? { headers: h as Record<string, string> } : {}),
        body: body ?? null,
      },
      exchange,
    );
    return exchange.head;
  }
  return askByFetch(url, init, dispatcher, o);
}

/** One attempt through undici's fetch: a form, or an answer saved to a file (resumed where the server offers ranges). */
async function askByFetch(
  url: string | URL,
  init: RequestInit,
  dispatcher: Dispatcher,
  o: SendOptions,
): Promise<Reply> {
  const signal = AbortSignal.timeout(o.timeoutMs ?? 120_000);
  // undici's fetch, not Node's: Node 20's reads no proxy setting and takes no dispatcher of another undici. Its index
  // loads here, at the first form or saved answer, not with the transport (./undici-parts.ts).
  const { fetch: undiciFetch, FormData: UndiciFormData } = await import('undici');
  const fetchWith = async (extra: Record<string, string>): Promise<Response> => {
    const headers = new Headers(init.headers as ConstructorParameters<typeof Headers>[0]);
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    return (await undiciFetch(url, {
      ...ownForm(Object.keys(extra).length > 0 ? { ...init, headers } : init, UndiciFormData),
      redirect: 'manual',
      signal,
      // The guard's type keeps its dispatcher opaque (see public-address.ts); it is undici's.
      dispatcher,
    })) as unknown as Response;
  };
  const saved = typeof o.saveTo === 'string' ? new SavedBody(o.saveTo) : o.saveTo;
  if (saved === undefined) {
    const res = await fetchWith({});
    return {
      status: res.status,
      headers: res.headers,
      read: () => readCapped(res, o.maxBytes),
      cancel: () => res.body?.cancel().catch(() => undefined) ?? Promise.resolve(),
    };
  }
  // A body saved to a file: the rest of it, where an attempt before broke off and the server offers ranges.
  const range = saved.rangeHeaders();
  let asked = Object.keys(range).length > 0;
  let res = await fetchWith(range);
  const saves = (r: Response) => (r.status >= 200 && r.status < 300) || (asked && r.status === 416);
  let usable = !saves(res) || saved.accept(res.status, res.headers, asked);
  if (!usable) {
    // A range this body cannot use (another start, another version of the file, a 416): the whole body, asked again.
    await res.body?.cancel().catch(() => undefined);
    asked = false;
    res = await fetchWith({});
    usable = !saves(res) || saved.accept(res.status, res.headers, false);
  }
  const answer = res;
  return {
    status: answer.status,
    headers: answer.headers,
    read: async () => {
      if (!usable) {
        await answer.body?.cancel().catch(() => undefined);
        throw new Error(`HTTP ${answer.status}: a part of the body where the whole was asked for`);
      }
      // An error's answer is read for its message, never written over the part of a body kept for a range.
      if (answer.status < 200 || answer.status >= 300)
        return readHead(answer, Math.min(o.maxBytes, ERROR_HEAD));
      return (await saved.write(answer, o.maxBytes)) ? '' : null;
    },
    cancel: () => answer.body?.cancel().catch(() => undefined) ?? Promise.resolve(),
  };
}

/** The bytes of an error's answer read for its message, when the answer was to be saved to a file. */
const ERROR_HEAD = 64 << 10;

/**
 * The dispatchers chosen per URL text, for each guard and each proxy setting (bounded): choosing one parses the URL
 * and the proxy's, and a worker asks one endpoint thousands of times. Settings read from the environment are keyed by
 * their values, so a changed HTTPS_PROXY is still heeded.
 */
const routes = new WeakMap<object, Map<string, Dispatcher>>();
const envRoutes = new Map<string, Dispatcher>();

function dispatcherFor(url: string | URL, o: SendOptions): Dispatcher {
  const text = typeof url === 'string' ? url : url.href;
  const settings = o.guard ? undefined : (o.proxy ?? proxySettings());
  const owner: object | undefined = o.guard ?? o.proxy;
  let known = owner ? routes.get(owner) : envRoutes;
  const key = owner
    ? text
    : `${text}\n${settings?.httpProxy ?? ''}\n${settings?.httpsProxy ?? ''}\n${settings?.noProxy ?? ''}`;
  let d = known?.get(key);
  if (!d) {
    // The guard's type keeps its dispatcher opaque (see public-address.ts); it is undici's.
    d = (o.guard ? o.guard.dispatcher(url) : plainDispatcher(url, settings as ProxySettings)) as Dispatcher;
    if (!known) {
      known = new Map();
      routes.set(owner as object, known);
    }
    if (known.size >= 256) known.clear();
    known.set(key, d);
  }
  return d;
}

/**
 * Sends a request (made afresh for each attempt by `init`), retrying dropped connections, timeouts and the statuses
 * `retryOn` names. Returns the last answer, whatever its status; throws a TransportError when no answer came, or the
 * guard's PrivateAddressError when the host is refused.
 */
export async function send(url: string | URL, init: () => RequestInit, o: SendOptions): Promise<Answer> {
  const retryOn = o.retryOn ?? TRANSIENT;
  const sleep = o.sleep ?? wait;
  o.guard?.check(url);
  const dispatcher = dispatcherFor(url, o);
  for (let attempt = 0; ; attempt++) {
    let res: Reply;
    try {
      res = await ask(url, init(), dispatcher, o);
    } catch (e) {
      const refused = privateAddressCause(e);
      if (refused) throw refused;
      const reason = reasonOf(e);
      if (attempt >= o.retry.retries) throw new TransportError(reason, attempt + 1, 'connect', { cause: e });
      const ms = backoffMs(attempt, o.retry);
      o.onRetry?.({ attempt: attempt + 1, waitMs: ms, reason });
      await sleep(ms);
      continue;
    }
    if (retryOn(res.status) && attempt < o.retry.retries) {
      const hinted = retryAfterMs(res.headers.get('retry-after'));
      if (hinted === undefined || hinted <= (o.retry.maxWaitMs ?? 120_000)) {
        await res.cancel();
        const ms = hinted ?? backoffMs(attempt, o.retry);
        o.onRetry?.({ attempt: attempt + 1, waitMs: ms, reason: `HTTP ${res.status}` });
        await sleep(ms);
        continue;
      }
    }
    let text: string | null;
    try {
      text = await res.read();
    } catch (e) {
      const undecodable = undecodableAs(e, res.headers);
      if (undecodable !== undefined)
        throw new TransportError(
          `the answer is broken: its body does not decode as its declared Content-Encoding ${undecodable} (${reasonOf(e)})`,
          attempt + 1,
          'read',
          { cause: e, status: res.status, undecodable },
        );
      const reason = `the answer broke off (${reasonOf(e)})`;
      if (attempt >= o.retry.retries)
        throw new TransportError(reason, attempt + 1, 'read', { cause: e, status: res.status });
      const ms = backoffMs(attempt, o.retry);
      o.onRetry?.({ attempt: attempt + 1, waitMs: ms, reason });
      await sleep(ms);
      continue;
    }
    // The headers as the reply holds them: a text request's become a Headers only when a caller reads them.
    const reply = res;
    return {
      status: reply.status,
      text,
      get headers() {
        return reply.headers;
      },
    };
  }
}
