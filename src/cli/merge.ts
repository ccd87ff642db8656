/** `rumedbench merge RUN... --out RUN`: the shards of one LLM run joined into its run folder (src/llm/merge.ts). */
import { resolveDataDir } from '../data/paths.js';
import { mergeRuns } from '../llm/merge.js';
import { readRunLog } from '../scoring/run-log.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { printLlmResult } from './llm.js';

export const MERGE_FLAGS = {
  out: flag.text('--out <dir>', 'the merged run folder (empty or new)', { required: true }),
  data: flag.dataFlag(),
  bootstrap: flag.bootstrapFlag('bootstrap resamples for the score'),
  json: flag.jsonFlag('print summary.json on stdout'),
} satisfies FlagTable;

export async function runMerge(
  dirs: string[],
  flags: FlagsOf<typeof MERGE_FLAGS>,
  io: CliIo,
): Promise<number> {
  const result = await mergeRuns(dirs, {
    outDir: flags.out,
    dataDir: resolveDataDir(flags.data),
    bootstrap: flags.bootstrap,
    log: io.log,
  });
  const { manifest } = readRunLog(flags.out);
  printLlmResult(result, String(manifest?.model ?? 'merged'), flags.json, io);
  return EXIT.ok;
}
