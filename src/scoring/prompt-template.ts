/**
 * A prompt template's shape (`--templates`' files, a manifest's `templates`). Apart from ./run-log.ts so that the
 * LLM harness can read a templates file without building every schema of a run folder: a queue worker's start
 * loads this, not those (#64).
 */
import { z } from 'zod';

export const promptTemplateSchema = z
  .object({ system: z.string().optional(), instruction: z.string().optional(), item: z.string().optional() })
  .strict();
