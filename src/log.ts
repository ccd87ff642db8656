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

/** Hex digits matched in either case: percent escapes and `\\u` escapes are case-insensitive. */
const anyCase = (hex: string): string =>
  [...hex].map((d) => (/[a-f]/i.test(d) ? `[${d.toLowerCase()}${d.toUpperCase()}]` : d)).join('');
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/** HTML's named entities for the characters a key may hold that HTML escapes. */
const ENTITIES: Record<string, string[]> = {
  '&': ['amp'],
  '"': ['quot'],
  "'": ['apos'],
  '<': ['lt'],
  '>': ['gt'],
};

/**
 * One character of a secret in every form it travels in, as a pattern: itself (`literal`: as text, or as its UTF-8
 * bytes read as latin1 where bytes are scrubbed), JSON-escaped at any depth (`\u0026`, `\/`, `\"`, each backslash
 * doubled by each JSON string it is nested in), URL-encoded (`%2F` or `%2f`, encoded once more as `%252F`; a form's
 * `+` for a space), and as an HTML entity (`&amp;`, `&#38;`, `&#x26;`). A list of whole forms misses the mixed and
 * lowercase ones a gateway writes (Go's JSON writes `&` as `\u0026`; an error page `&amp;`).
 */
function charPattern(c: string, literal: string): string {
  const code = c.codePointAt(0) as number;
  const units = c.length === 1 ? [code] : [c.charCodeAt(0), c.charCodeAt(1)];
  const bytes = [...Buffer.from(c, 'utf8')];
  const alts = [
    escapeRegExp(literal),
    units.map((u) => `\\\\{1,8}u${anyCase(u.toString(16).padStart(4, '0'))}`).join(''),
    bytes.map((b) => `%(?:25){0,2}${anyCase(b.toString(16).padStart(2, '0').toUpperCase())}`).join(''),
    `&#0{0,4}${code};`,
    `&#[xX]0{0,4}${anyCase(code.toString(16))};`,
    ...(ENTITIES[c] ?? []).map((e) => `&${e};`),
  ];
  if ('/"\\'.includes(c)) alts.push(`\\\\{1,8}${escapeRegExp(c)}`);
  if (c === ' ') alts.push('\\+');
  return `(?:${alts.join('|')})`;
}

/** The longest text one character of a secret may take in {@link charPattern}'s forms (4 bytes × `%2525XX`). */
const MOST_PER_CHAR = 32;

/**
 * Every remembered secret in every form it travels in (see charPattern), as one global pattern; `latin1` matches a
 * byte stream read as latin1 (each byte one character), as results files are scrubbed. Null while none is held.
 */
export function secretPattern(latin1 = false): RegExp | null {
  if (SECRETS.size === 0) return null;
  const cached = PATTERNS.get(latin1);
  if (cached?.size === SECRETS.size) return cached.pattern;
  const one = (secret: string) =>
    [...secret].map((c) => charPattern(c, latin1 ? Buffer.from(c, 'utf8').toString('latin1') : c)).join('');
  // Longest first, so that a secret holding another is replaced whole.
  const sorted = [...SECRETS].sort((a, b) => b.length - a.length);
  const all = [...sorted.map(one), ...sorted.flatMap(base64Cores).map(base64Pattern)];
  const pattern = new RegExp(all.join('|'), 'g');
  PATTERNS.set(latin1, { size: SECRETS.size, pattern });
  return pattern;
}

/** A base64 core shorter than this is not redacted: a few characters of base64 occur by chance in any long token. */
const MIN_BASE64_CORE = 12;

/**
 * The stable cores of a secret's base64 (`Basic base64(user:key)`, a body that base64s it), as secret scanners find
 * them: wherever the secret starts in the encoded bytes (three alignments), the characters of its base64 that only
 * its own bytes decide, without the one or two at each end that the bytes around it share. Each core is matched in
 * standard base64 and in base64url (`-_` for `+/`). None for a secret too short to have a core of MIN_BASE64_CORE.
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const cores: string[] = [];
  for (const align of [0, 1, 2]) {
    const text = Buffer.concat([Buffer.alloc(align), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    // The first group shares its first (align + 1 when align > 0) characters with the bytes before the secret;
    // a last partial group of r bytes keeps its first r characters (the next is shared with the bytes after).
    const from = align === 0 ? 0 : align + 1;
    const rest = (align + bytes.length) % 3;
    const to = text.length - (rest === 0 ? 0 : 1);
    const core = text.slice(from, to);
    if (core.length >= MIN_BASE64_CORE) cores.push(core);
  }
  return cores;
}

/** A base64 core as a pattern: `+` and `/` in either alphabet (base64url's `-` and `_`), `/` JSON-escaped too. */
const base64Pattern = (core: string): string =>
  [...core].map((c) => (c === '+' ? '[+-]' : c === '/' ? '(?:\\\\{0,8}/|_)' : c)).join('');

/** The patterns made so far, by the number of secrets they hold (secrets are only ever added). */
const PATTERNS = new Map<boolean, { size: number; pattern: RegExp }>();

/** The most characters one match of {@link secretPattern} may span (what a stream scrubber must hold back). */
export const secretSpan = (): number => Math.max(0, ...[...SECRETS].map((s) => s.length * MOST_PER_CHAR));

/** Text with every remembered secret value, in each of its forms (see secretPattern), replaced by `***`. */
export function redactSecrets(text: string): string {
  const pattern = secretPattern();
  return pattern ? text.replace(pattern, '***') : text;
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
