/**
 * Every command, declared once: its place in the command tree, what it does, its arguments, and the module that
 * holds its flag table and runs it, loaded only when the command is used (as vitest's CLI does), so that
 * `rumedbench version` or `eval` does not load the server, the queue or the LLM harness.
 */
import type { FlagTable } from './flags.js';
import type { CliIo } from './io.js';

/** What a command's module gives: its flags, and the run that takes the arguments and the parsed flags. */
export interface Loaded {
  flags: FlagTable;
  // biome-ignore lint/suspicious/noExplicitAny: each command's flags are typed by its own table
  run(args: string[], flags: any, io: CliIo): Promise<number | undefined> | number | undefined;
}

export interface CommandEntry {
  /** Words that reach it: `['serve', 'token', 'create']`. */
  path: readonly string[];
  description: string;
  /** commander's argument syntax and its description: `['<path>', 'folder or .zip …']`. */
  args?: readonly (readonly [string, string])[];
  /** Absent for a group that only holds commands. */
  load?: () => Promise<Loaded>;
}

const arg0 = (args: string[]) => args[0] as string;

export const COMMANDS: readonly CommandEntry[] = [
  {
    path: ['eval'],
    description: 'score a predictions folder or .zip (RuMedBench or MedBench platform format)',
    args: [['<path>', 'folder or .zip of <Task>.jsonl files']],
    load: async () => {
      const m = await import('./eval.js');
      return { flags: m.EVAL_FLAGS, run: (a, f, io) => m.runEval(arg0(a), f, io) };
    },
  },
  {
    path: ['compare'],
    description: 'paired comparison of two submissions on the same items (B − A)',
    args: [
      ['<a>', 'baseline submission'],
      ['<b>', 'candidate submission'],
    ],
    load: async () => {
      const m = await import('./eval.js');
      return { flags: m.COMPARE_FLAGS, run: (a, f, io) => m.runCompare(arg0(a), a[1] as string, f, io) };
    },
  },
  {
    path: ['rank'],
    description: 'which systems differ: scores with standard errors, rank intervals, groups, pairwise tests',
    args: [['<paths...>', 'submissions: predictions folders or .zip files, or run folders']],
    load: async () => {
      const m = await import('./rank.js');
      return { flags: m.RANK_FLAGS, run: (a, f, io) => m.runRank(a, f, io) };
    },
  },
  { path: ['data'], description: 'get and inspect the task files' },
  {
    path: ['data', 'download'],
    description: 'fetch the task files from the pinned upstream commit, checking size and sha256',
    load: async () => {
      const m = await import('./data.js');
      return { flags: m.DOWNLOAD_FLAGS, run: (_, f, io) => m.runDownload(f, io) };
    },
  },
  {
    path: ['data', 'info'],
    description: 'records, label distribution and text lengths per task and split',
    load: async () => {
      const m = await import('./data.js');
      return { flags: m.INFO_FLAGS, run: (_, f, io) => m.runInfo(f, io) };
    },
  },
  {
    path: ['baseline'],
    description:
      "train the paper's naive, feature-based or BiLSTM baseline, or heads over a frozen ONNX encoder; predict the test sets, score them",
    args: [['<method>', 'naive | tfidf | encoder | bilstm']],
    load: async () => {
      const m = await import('./baseline.js');
      return { flags: m.BASELINE_FLAGS, run: (a, f, io) => m.runBaselineCommand(arg0(a), f, io) };
    },
  },
  {
    path: ['predict'],
    description:
      'predict with a saved baseline model: --text for one text, --input for a JSONL file of records',
    load: async () => {
      const m = await import('./baseline.js');
      return { flags: m.PREDICT_FLAGS, run: (_, f, io) => m.runPredict(f, io) };
    },
  },
  {
    path: ['predict-encoder'],
    description:
      'run a fine-tuned ONNX encoder (sequence or token classification) on a task and score its test predictions',
    load: async () => {
      const m = await import('./encoder.js');
      return { flags: m.PREDICT_ENCODER_FLAGS, run: (_, f, io) => m.runPredictEncoder(f, io) };
    },
  },
  {
    path: ['llm'],
    description:
      'evaluate a language model (an OpenAI-compatible endpoint or a local GGUF file) on the tasks',
    load: async () => {
      const m = await import('./llm.js');
      return { flags: m.LLM_FLAGS, run: (_, f, io) => m.runLlmCommand(f, io) };
    },
  },
  {
    path: ['run'],
    description: "run a run spec: a spec file, or a run folder's manifest.json (repeats that run exactly)",
    args: [['<spec>', 'spec.json or manifest.json']],
    load: async () => {
      const m = await import('./run.js');
      return { flags: m.RUN_FLAGS, run: (a, f, io) => m.runSpecCommand(arg0(a), f, io) };
    },
  },
  {
    path: ['report'],
    description: 'one self-contained HTML report with charts (or Markdown tables) for one system or several',
    args: [
      [
        '<path...>',
        'predictions folder/.zip, llm or baseline run folder, or a saved eval/compare --json result',
      ],
    ],
    load: async () => {
      const m = await import('./report.js');
      return { flags: m.REPORT_FLAGS, run: (a, f, io) => m.runReportCommand(a, f, io) };
    },
  },
  {
    path: ['serve'],
    description: 'a self-hostable leaderboard: public and closed boards, uploads, admin',
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.SERVE_FLAGS, run: (_, f, io) => m.runServe(f, io) };
    },
  },
  {
    path: ['serve', 'import-gold'],
    description:
      "import gold the host holds (<Task>.jsonl: id and answer): the closed tests', or with --split test a host-held public test; re-score that board",
    args: [['<dir>', 'folder of <Task>.jsonl files']],
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.IMPORT_GOLD_FLAGS, run: (a, f, io) => m.runImportGold(arg0(a), f, io) };
    },
  },
  { path: ['serve', 'token'], description: 'team API tokens' },
  {
    path: ['serve', 'token', 'create'],
    description: 'create a token (shown once)',
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.TOKEN_CREATE_FLAGS, run: (_, f, io) => m.runTokenCreate(f, io) };
    },
  },
  {
    path: ['serve', 'token', 'revoke'],
    description: 'revoke a token',
    args: [['<id>', 'token id']],
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.DB_FLAGS, run: (a, f, io) => m.runTokenRevoke(arg0(a), f, io) };
    },
  },
  {
    path: ['serve', 'token', 'list'],
    description: 'list tokens',
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.DB_FLAGS, run: (_, f, io) => m.runTokenList(f, io) };
    },
  },
  { path: ['serve', 'endpoint'], description: "the model servers the platform's workers may ask" },
  {
    path: ['serve', 'endpoint', 'add'],
    description: 'put a server (or GGUF file) on the allow-list',
    args: [['<name>', 'its name']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.ENDPOINT_ADD_FLAGS, run: (a, f, io) => m.runEndpointAdd(arg0(a), f, io) };
    },
  },
  {
    path: ['serve', 'endpoint', 'list'],
    description: 'the allow-list',
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.ENDPOINT_LIST_FLAGS, run: (_, f, io) => m.runEndpointList(f, io) };
    },
  },
  {
    path: ['serve', 'endpoint', 'remove'],
    description: 'take a server off the allow-list',
    args: [['<name>', 'its name']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_CANCEL_FLAGS, run: (a, f, io) => m.runEndpointRemove(arg0(a), f, io) };
    },
  },
  { path: ['serve', 'campaign'], description: 'human evaluation campaigns' },
  {
    path: ['serve', 'campaign', 'create'],
    description: 'create a campaign and print one invitation link per annotator',
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.CAMPAIGN_CREATE_FLAGS, run: (_, f, io) => m.runCampaignCreate(f, io) };
    },
  },
  {
    path: ['serve', 'campaign', 'list'],
    description: 'list campaigns',
    load: async () => {
      const m = await import('./serve.js');
      return { flags: m.DB_FLAGS, run: (_, f, io) => m.runCampaignAction('list', undefined, f, io) };
    },
  },
  ...(
    [
      ['close', 'close a campaign: its links stop working'],
      ['publish', "publish the campaign's answers as a human row on the board"],
    ] as const
  ).map(
    ([name, what]): CommandEntry => ({
      path: ['serve', 'campaign', name],
      description: what,
      args: [['<id>', 'campaign id']],
      load: async () => {
        const m = await import('./serve.js');
        return { flags: m.DB_FLAGS, run: (a, f, io) => m.runCampaignAction(name, arg0(a), f, io) };
      },
    }),
  ),
  {
    path: ['serve', 'campaign', 'export'],
    description: 'every answer as JSONL: annotator, item id, answer, time spent, timestamp',
    args: [['<id>', 'campaign id']],
    load: async () => {
      const m = await import('./serve.js');
      return {
        flags: m.CAMPAIGN_EXPORT_FLAGS,
        run: (a, f, io) => m.runCampaignAction('export', arg0(a), f, io),
      };
    },
  },
  {
    path: ['contamination'],
    description:
      "probe whether a model has seen a split's items (Oren et al.'s order test), without scoring it",
    load: async () => {
      const m = await import('./contamination.js');
      return { flags: m.CONTAMINATION_FLAGS, run: (_, f, io) => m.runContamination(f, io) };
    },
  },
  {
    path: ['merge'],
    description:
      "join the run folders of an LLM run's shards (--shard I/N) into the run folder of the whole run",
    args: [['<runs...>', "the shards' run folders"]],
    load: async () => {
      const m = await import('./merge.js');
      return { flags: m.MERGE_FLAGS, run: (a, f, io) => m.runMerge(a, f, io) };
    },
  },
  {
    path: ['submit'],
    description: 'send a run folder, predictions folder or zip to a leaderboard; print its answer',
    args: [['<path>', 'run folder, predictions folder, .zip or <Task>.jsonl']],
    load: async () => {
      const m = await import('./submit.js');
      return { flags: m.SUBMIT_FLAGS, run: (a, f, io) => m.runSubmit(arg0(a), f, io) };
    },
  },
  { path: ['plan'], description: 'evaluation plans: many models × settings from one file' },
  {
    path: ['plan', 'check'],
    description: 'list the cells of a plan, their requests and cost estimate, without sending anything',
    args: [['<plan>', 'plan file (.yaml or .json)']],
    load: async () => {
      const m = await import('./plan.js');
      return { flags: m.PLAN_CHECK_FLAGS, run: (a, f, io) => m.runPlanCheck(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'run'],
    description:
      'run every cell of a plan into its own run folder, side by side; then summary.json and report.html',
    args: [['<plan>', 'plan file (.yaml or .json)']],
    load: async () => {
      const m = await import('./plan.js');
      return { flags: m.PLAN_RUN_FLAGS, run: (a, f, io) => m.runPlanRun(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'submit'],
    description: "queue a plan's cells in PostgreSQL for workers on any machine; print the plan id",
    args: [['<plan>', 'plan file (.yaml or .json)']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_SUBMIT_FLAGS, run: (a, f, io) => m.runPlanSubmit(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'status'],
    description: 'a queued plan: requests done per cell, rate, time left, failures, workers',
    args: [['<id>', 'plan id (from plan submit)']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_STATUS_FLAGS, run: (a, f, io) => m.runPlanStatus(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'migrate'],
    description: "bring the queue's schema to this release (stop older workers first)",
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_MIGRATE_FLAGS, run: (_, f, io) => m.runPlanMigrate(f, io) };
    },
  },
  {
    path: ['plan', 'cancel'],
    description: 'cancel a queued plan',
    args: [['<id>', 'plan id']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_CANCEL_FLAGS, run: (a, f, io) => m.runPlanCancel(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'retry'],
    description: "ask a queued plan's failed requests again: its failed cells go back to the queue",
    args: [['<id>', 'plan id']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_RETRY_FLAGS, run: (a, f, io) => m.runPlanRetry(arg0(a), f, io) };
    },
  },
  {
    path: ['plan', 'export'],
    description: "write a queued plan's finished cells and summary as `plan run` writes them",
    args: [['<id>', 'plan id']],
    load: async () => {
      const m = await import('./queue.js');
      return { flags: m.PLAN_EXPORT_FLAGS, run: (a, f, io) => m.runPlanExport(arg0(a), f, io) };
    },
  },
  {
    path: ['worker'],
    description: 'run queued plan jobs from PostgreSQL (plan submit) on this machine',
    load: async () => {
      const m = await import('./worker.js');
      return { flags: m.WORKER_FLAGS, run: (_, f, io) => m.runWorker(f, io) };
    },
  },
  {
    // `npx rumedbench --version` is read by npx itself; this command reaches us however it is run.
    path: ['version'],
    description: 'print the version of rumedbench',
    load: async () => {
      const { VERSION } = await import('../version.js');
      return {
        flags: {},
        run: (_, __, io) => {
          io.out(`${VERSION}\n`);
          return 0;
        },
      };
    },
  },
  {
    path: ['tasks'],
    description:
      'list the tasks (built in, defined in files, shipped) with their metrics and where each is defined',
    load: async () => {
      const m = await import('./tasks.js');
      return { flags: m.TASKS_FLAGS, run: (_, f, io) => m.runTasks(f, io) };
    },
  },
  {
    path: ['tasks', 'check'],
    description: 'check task definition files and the data files they name (file:line:col and the reason)',
    args: [['<files...>', 'definition files (.yaml, .yml, .json) or folders of them']],
    load: async () => {
      const m = await import('./tasks.js');
      return { flags: m.TASKS_CHECK_FLAGS, run: (a, f, io) => m.runTasksCheck(a, f, io) };
    },
  },
  {
    path: ['tasks', 'export'],
    description:
      'write the tasks for another harness: --format lm-eval, lm-evaluation-harness 0.4.x tasks that read your data folder',
    load: async () => {
      const m = await import('./tasks.js');
      return { flags: m.TASKS_EXPORT_FLAGS, run: (_, f, io) => m.runTasksExport(f, io) };
    },
  },
];
