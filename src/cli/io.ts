/** What a command writes to: stdout for results, stderr (through the logger) for everything else. */
import type { RumedbenchError } from '../errors.js';
import type { RunProgress } from '../llm/send.js';
import type { Logger } from '../log.js';

export interface CliIo {
  out: (text: string) => void;
  log: Logger;
  /** Raw stderr text: commander's usage errors and help after them (everything else goes through `log`). */
  err?: (text: string) => void;
  /** Set by `--quiet`: the logger then drops notes, and no progress is drawn. */
  quiet?: boolean;
  /** Where an LLM run reports its progress instead of drawing a bar (a plan gathers its cells' progress). */
  onProgress?: (p: RunProgress, final: boolean) => void;
}

/**
 * Exit codes: 0 done; 1 the input has errors (or a run scored nothing); 2 a bad command line; 3 an LLM run with
 * failed requests, not scored (see --retry-errors, --allow-failures); 4 an LLM run stopped by the server's refusal
 * (key, model, URL, redirect); 5 an LLM run stopped because its server is down (requests in a row could not reach
 * it or timed out; continue with --resume once it is back). 70: an internal error (a bug).
 */
export const EXIT = { ok: 0, submissionErrors: 1, usage: 2, incomplete: 3, refused: 4, down: 5 } as const;

/** The exit code of an error a user can cause (see EXIT); undefined for a bug. */
export function exitCodeOf(e: RumedbenchError): number {
  if (e.code === 'USAGE' || e.code === 'RUN_SPEC_INVALID' || e.code === 'PROXY_INVALID') return EXIT.usage;
  if (
    e.code === 'RUN_INCOMPLETE' ||
    e.code === 'REPLIES_UNUSABLE' ||
    e.code === 'COST_LIMIT' ||
    e.code === 'BATCH_AMBIGUOUS'
  )
    return EXIT.incomplete;
  if (e.code === 'LLM_ENDPOINT_DOWN') return EXIT.down;
  if (e.code === 'LLM_SERVER_REFUSED') return EXIT.refused;
  return EXIT.submissionErrors;
}

/** The file system's refusals to write, in words: the path given cannot take what the command writes. */
const WRITE_REFUSALS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EEXIST: 'a file stands where a folder goes',
  EISDIR: 'a folder stands where a file goes',
};

/**
 * A refusal of the file system to write (an --out that is read-only, full, or a file), as words and the path; undefined
 * for any other error. The CLI says it in one line instead of a stack trace.
 */
export function writeRefusal(
  e: unknown,
): { why: string; path: string | undefined; full: boolean } | undefined {
  const err = e as NodeJS.ErrnoException | undefined;
  const code = typeof err?.code === 'string' ? err.code : '';
  const why = WRITE_REFUSALS[code];
  if (why === undefined || typeof err?.syscall !== 'string') return undefined;
  // access: a check for write permission (W_OK) before writing, refused as the write would be.
  if (
    !/^(access|mkdir|open|write|rename|copyfile|symlink|link|unlink|rmdir|rm|mkdtemp|utime|chmod|ftruncate|fsync|close)$/.test(
      err.syscall,
    )
  )
    return undefined;
  return { why, path: err.path, full: code === 'ENOSPC' || code === 'EDQUOT' };
}
