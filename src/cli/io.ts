/** What a command writes to: stdout for results, stderr (through the logger) for everything else. */
import type { Logger } from '../log.js';

export interface CliIo {
  out: (text: string) => void;
  log: Logger;
}

export const EXIT = { ok: 0, submissionErrors: 1, usage: 2 } as const;
