/**
 * The one outbound HTTP transport (the LLM client, the embeddings endpoint, `submit`, `data download`): a timeout per
 * attempt, a capped body, redirects never followed, and retries that honour Retry-After and otherwise wait with
 * exponential backoff and jitter. Callers say what they send and how to read the answer, not how to retry.
 */
import {
  type Dispatcher,
  FormData as UndiciFormData,
  type RequestInit as UndiciInit,
  fetch as undiciFetch,
} from 'undici';
import { type ProxySettings, plainDispatcher, proxySettings } from './proxy.js';
import { type ConnectGuard, privateAddressCause } from './public-address.js';
import { readCapped, readHead, readStreamCapped, SavedBody } from './read-capped.js';

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
function ownForm(init: RequestInit): UndiciInit {
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

/**
 * One attempt. A request whose body is text (a JSON request: the LLM client's, the embeddings') goes through undici's
 * `request` on the same dispatcher: fetch's streams, Request objects and clones cost a queue worker about half of
 * its CPU per answered request (#64's profile); forms and answers saved to a file go through fetch. Both follow no
 * redirect and give up at `timeoutMs` (connecting and reading alike).
 */
async function ask(
  url: string | URL,
  init: RequestInit,
  dispatcher: Dispatcher,
  o: SendOptions,
): Promise<Reply> {
  const signal = AbortSignal.timeout(o.timeoutMs ?? 120_000);
  const body = init.body;
  const h = init.headers;
  if (
    o.saveTo === undefined &&
    (body === undefined || body === null || typeof body === 'string') &&
    !(h instanceof Headers) &&
    !Array.isArray(h)
  ) {
    const target = typeof url === 'string' ? new URL(url) : url;
    const res = await dispatcher
      .request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
        ...(h ? { headers: h as Record<string, string> } : {}),
        body: body ?? null,
        signal,
      })
      .catch((e: unknown) => {
        // Shaped as fetch's failure (its cause the connection's error), which callers read (../llm/client.ts
        // `connectionProblem`); the timeout is the signal's reason in both.
        throw (e as Error).name === 'TimeoutError' ? e : new TypeError('fetch failed', { cause: e });
      });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers))
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value !== undefined) headers.append(name, value);
    return {
      status: res.statusCode,
      headers,
      read: () => readStreamCapped(res.body, o.maxBytes),
      cancel: async () => {
        // undici reports a body let go unread as an error of the stream: nobody reads it.
        res.body.on('error', () => {});
        res.body.destroy();
      },
    };
  }
  // undici's fetch, not Node's: Node 20's reads no proxy setting and takes no dispatcher of another undici.
  const fetchWith = async (extra: Record<string, string>): Promise<Response> => {
    const headers = new Headers(init.headers as ConstructorParameters<typeof Headers>[0]);
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    return (await undiciFetch(url, {
      ...ownForm(Object.keys(extra).length > 0 ? { ...init, headers } : init),
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
 * Sends a request (made afresh for each attempt by `init`), retrying dropped connections, timeouts and the statuses
 * `retryOn` names. Returns the last answer, whatever its status; throws a TransportError when no answer came, or the
 * guard's PrivateAddressError when the host is refused.
 */
export async function send(url: string | URL, init: () => RequestInit, o: SendOptions): Promise<Answer> {
  const retryOn = o.retryOn ?? TRANSIENT;
  const sleep = o.sleep ?? wait;
  o.guard?.check(url);
  const dispatcher = o.guard ? o.guard.dispatcher(url) : plainDispatcher(url, o.proxy ?? proxySettings());
  for (let attempt = 0; ; attempt++) {
    let res: Reply;
    try {
      res = await ask(url, init(), dispatcher as Dispatcher, o);
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
    return { status: res.status, headers: res.headers, text };
  }
}
