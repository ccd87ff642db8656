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
 * (key, model, URL, redirect) or by a server that ignores max_tokens (a reply past --max-reply-bytes); 5 an LLM run stopped because its server is down (requests in a row could not reach
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
  if (e.code === 'LLM_SERVER_REFUSED' || e.code === 'LLM_MAX_TOKENS_IGNORED') return EXIT.refused;
  return EXIT.submissionErrors;
}

export { writeRefusal } from '../data/atomic-write.js';
