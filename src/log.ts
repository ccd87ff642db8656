/**
 * A small leveled logger writing to stderr, so that stdout carries only results (a table, or one JSON object).
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const at = (l: Exclude<LogLevel, 'silent'>, prefix: string) => (message: string) => {
    if (ORDER[l] >= ORDER[level]) write(`${prefix}${message}\n`);
  };
  return {
    debug: at('debug', 'debug: '),
    info: at('info', ''),
    warn: at('warn', 'warning: '),
    error: at('error', 'error: '),
  };
}

export const silentLogger: Logger = createLogger('silent');

/** A database URL as messages may show it: the password replaced, whatever else is wrong with it. */
export const redactUrl = (url: string): string => {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
};
