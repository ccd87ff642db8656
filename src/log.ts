/**
 * A small leveled logger writing to stderr, so that stdout carries only results (a table, or one JSON object).
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /**
   * The same logger (level, destination) writing each line in `format`: `time` puts its ISO 8601 time first, `json`
   * writes one object a line ({time, level, msg}, with the worker, plan and cell the message names). Long-running
   * processes (a worker, serve) log so; a one-shot command's lines stay short.
   */
  as?(format: LogFormat, fields?: { worker?: string }): Logger;
}

export type LogFormat = 'plain' | 'time' | 'json';

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

/** A queued plan's id (plans.ts makes them `p-` and 12 hex digits) and the cell after it, as messages name them. */
const PLAN_CELL = /\b(p-[0-9a-f]{12})(?: ([^\s:#]+\/[^\s:#]+))?/;

export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (l) => process.stderr.write(l),
  format: LogFormat = 'plain',
  fields: { worker?: string } = {},
): Logger {
  // Every line passes one redaction: a database URL or an endpoint typed with credentials never reaches a log.
  const at = (l: Exclude<LogLevel, 'silent'>, prefix: string) => (message: string) => {
    if (ORDER[l] < ORDER[level]) return;
    const text = redactCredentials(message);
    if (format === 'json') {
      const m = PLAN_CELL.exec(text);
      write(
        `${JSON.stringify({
          time: new Date().toISOString(),
          level: l,
          ...(fields.worker ? { worker: fields.worker } : {}),
          ...(m?.[1] ? { plan: m[1] } : {}),
          ...(m?.[2] ? { cell: m[2] } : {}),
          msg: text,
        })}\n`,
      );
    } else write(`${format === 'time' ? `${new Date().toISOString()} ` : ''}${prefix}${text}\n`);
  };
  return {
    debug: at('debug', 'debug: '),
    info: at('info', ''),
    warn: at('warn', 'warning: '),
    error: at('error', 'error: '),
    as: (f, more) => createLogger(level, write, f, more ?? fields),
  };
}

export const silentLogger: Logger = createLogger('silent');

/** Query parameters that carry secrets (libpq's `password`, keys and tokens of model servers). */
const SECRET_PARAM =
  /([?&](?:password|sslpassword|pass|pwd|api[-_]?key|key|token|access[-_]?token|secret)=)[^&#\s'"]+/gi;
/** `scheme://user:password@`: the password part. */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s:@/'"]*:)[^\s@/'"]+@/gi;

/** Text with the credentials of any URL in it replaced by `***` (the password in the userinfo or the query). */
export function redactCredentials(text: string): string {
  return redactSecrets(text.replace(URL_PASSWORD, '$1***@').replace(SECRET_PARAM, '$1***'));
}

/**
 * The secret values this process holds (a model server's key, the values of headers it sends), redacted by value
 * from every log line and from every file a run writes (journal, manifest, summary): a server whose error message
 * echoes the request's headers must not get the key onto the disk. Values shorter than 6 characters are not kept
 * (redacting "1" would garble every number).
 */
const SECRETS = new Set<string>();

export function rememberSecret(value: string | undefined): void {
  if (value !== undefined && value.length >= 6) SECRETS.add(value);
}

/**
 * The forms a secret travels in: itself, URL-encoded (a key with `/ + = &` in a query or a form: `%2F`, and `+` for a
 * space in a form), and each of those JSON-escaped (inside a JSON string, as a file or a log line holds it).
 */
function secretForms(secret: string): string[] {
  const url = encodeURIComponent(secret);
  const form = new URLSearchParams({ k: secret }).toString().slice(2);
  const plain = [...new Set([secret, url, form])];
  return [...new Set([...plain, ...plain.map((f) => JSON.stringify(f).slice(1, -1))])].sort(
    (a, b) => b.length - a.length,
  );
}

/** The secrets registered so far, as the bytes a reply may carry them in (see secretForms). */
export function secretBytes(): Buffer[] {
  return [...SECRETS].flatMap((secret) => secretForms(secret).map((f) => Buffer.from(f, 'utf8')));
}

/** Text with every remembered secret value, in each of its forms (see secretForms), replaced by `***`. */
export function redactSecrets(text: string): string {
  if (SECRETS.size === 0) return text;
  let out = text;
  for (const secret of SECRETS) for (const form of secretForms(secret)) out = out.split(form).join('***');
  return out;
}

/** A database URL as messages may show it: the password replaced, whatever else is wrong with it. */
export const redactUrl = (url: string): string => {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const k of [...u.searchParams.keys()])
      if (/^(password|sslpassword|pass|pwd)$/i.test(k)) u.searchParams.set(k, '***');
    return redactCredentials(u.toString());
  } catch {
    return 'postgres://…';
  }
};
