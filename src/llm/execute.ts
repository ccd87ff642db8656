/**
 * The `execute` phase of an LLM run, the one place its requests are asked whoever runs it: `rumedbench llm` (and
 * `run`, plans run in one process, the server's runs) through `runLlm`, and a queue worker through the engine's
 * `llmRunPhases`, job by job. Each answer is handed to `journal` the moment it lands: a run folder's journal, or a worker's
 * database. The three ways (executors):
 *
 * - `in-process`: sent from here, `concurrency` requests in flight;
 * - `batch`: sent as the provider's batches (uploaded, waited for, collected; ./batch.ts);
 * - `results-file`: read from a batch output file someone else ran (`--batch-results`); nothing is sent.
 */
import type { Logger } from '../log.js';
import { type BatchResult, journalResults, type RunBatchesOptions, runBatches } from './batch.js';
import type { JournalEntry } from './journal.js';
import type { Provider, SamplingParams } from './provider.js';
import type { LlmRequest } from './requests.js';
import { newProgress, type RunProgress, sendAll } from './send.js';

/** Where the answers go as they land. */
export interface AnswerSink {
  append(entry: JournalEntry): void | Promise<void>;
}

export type RequestExecutor =
  | {
      kind: 'in-process';
      provider: Provider;
      journal: AnswerSink;
      concurrency: number;
      /** Once aborted, nothing more is sent; the requests in flight finish and are kept. */
      signal?: AbortSignal;
      progress?: RunProgress;
      onProgress?: (p: RunProgress, final: boolean) => void;
      onAnswer?: (request: LlmRequest, entry: JournalEntry) => void;
      /** `--max-cost`: asked before each request is sent; `settle` hears each entry journaled. */
      admit?: (request: LlmRequest) => boolean | Promise<boolean>;
      settle?: (request: LlmRequest, entry: JournalEntry) => void | Promise<void>;
    }
  | ({
      kind: 'batch';
      /** Every request of the run: a batch recorded earlier is matched against them. */
      all: readonly LlmRequest[];
    } & Omit<RunBatchesOptions, 'requests' | 'pending' | 'params'>)
  | {
      kind: 'results-file';
      /** The file's name, for what is said of it. */
      file: string;
      results: AsyncIterable<BatchResult> | Iterable<BatchResult>;
      journal: AnswerSink;
      all: readonly LlmRequest[];
      log: Logger;
    };

/** What an execution did: its wall time, and the batches' ids (a batch executor). */
export interface Executed {
  wallS: number;
  ids?: string[];
}

/** Asks `requests` through `x`, each answer journaled as it lands. */
export async function executeRequests(
  requests: readonly LlmRequest[],
  x: RequestExecutor,
  params: SamplingParams,
): Promise<Executed> {
  switch (x.kind) {
    case 'in-process': {
      const wallS = await sendAll({
        pending: requests,
        provider: x.provider,
        params,
        journal: x.journal,
        concurrency: x.concurrency,
        progress: x.progress ?? newProgress(requests.length),
        ...(x.signal ? { signal: x.signal } : {}),
        ...(x.onProgress ? { onProgress: x.onProgress } : {}),
        ...(x.onAnswer ? { onAnswer: x.onAnswer } : {}),
        ...(x.admit ? { admit: x.admit } : {}),
        ...(x.settle ? { settle: x.settle } : {}),
      });
      return { wallS };
    }
    case 'batch': {
      const { kind: _, all, ...rest } = x;
      return runBatches({ ...rest, requests: all, pending: requests, params });
    }
    case 'results-file': {
      const { seen, lines, conflicts } = await journalResults(x.results, {
        byKey: new Map(x.all.map((j) => [j.key, j])),
        keys: new Set(requests.map((j) => j.key)),
        journal: x.journal,
        label: x.file,
      });
      x.log.info(
        `${x.file}: ${seen.size} of the ${requests.length} requests to send answered (${lines} result lines)`,
      );
      if (conflicts > 0)
        x.log.warn(
          `${x.file}: ${conflicts} request(s) answered twice, differently: failed, not scored (--retry-errors asks them again)`,
        );
      // Results read from a file were sent by whoever ran the batch: no time of this run's.
      return { wallS: 0 };
    }
  }
}
