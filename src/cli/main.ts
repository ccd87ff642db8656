#!/usr/bin/env node
/**
 * The `rumedbench` command. Each command parses its flags and calls one typed function of the library; errors a
 * user can cause are printed as one line and set the exit status (2 for usage, 1 for a failing submission).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { RumedbenchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { renderTable } from '../report/table.js';
import { TASKS } from '../tasks/registry.js';
import { VERSION } from '../version.js';
import {
  BASELINE_FLAGS,
  type BaselineFlags,
  PREDICT_FLAGS,
  type PredictFlags,
  runBaselineCommand,
  runPredict,
} from './baseline.js';
import { CONTAMINATION_FLAGS, type ContaminationFlags, runContamination } from './contamination.js';
import {
  DOWNLOAD_FLAGS,
  type DownloadFlags,
  INFO_FLAGS,
  type InfoFlags,
  runDownload,
  runInfo,
} from './data.js';
import { PREDICT_ENCODER_FLAGS, type PredictEncoderFlags, runPredictEncoder } from './encoder.js';
import { COMPARE_FLAGS, type CompareFlags, EVAL_FLAGS, type EvalFlags, runCompare, runEval } from './eval.js';
import { addFlags, type FlagsOf } from './flags.js';
import { type CliIo, EXIT, exitCodeOf } from './io.js';
import { LLM_FLAGS, type LlmFlags, runLlmCommand } from './llm.js';
import { MERGE_FLAGS, runMerge } from './merge.js';
import { PLAN_CHECK_FLAGS, PLAN_RUN_FLAGS, runPlanCheck, runPlanRun } from './plan.js';
import {
  ENDPOINT_ADD_FLAGS,
  ENDPOINT_LIST_FLAGS,
  PLAN_CANCEL_FLAGS,
  PLAN_EXPORT_FLAGS,
  PLAN_MIGRATE_FLAGS,
  PLAN_STATUS_FLAGS,
  PLAN_SUBMIT_FLAGS,
  runEndpointAdd,
  runEndpointList,
  runEndpointRemove,
  runPlanCancel,
  runPlanExport,
  runPlanMigrate,
  runPlanStatus,
  runPlanSubmit,
  runWorker,
  WORKER_FLAGS,
} from './queue.js';
import { REPORT_FLAGS, type ReportFlags, runReportCommand } from './report.js';
import { RUN_FLAGS, runSpecCommand } from './run.js';
import {
  CAMPAIGN_CREATE_FLAGS,
  CAMPAIGN_EXPORT_FLAGS,
  type CampaignFlags,
  DB_FLAGS,
  type DbFlags,
  runCampaignAction,
  runCampaignCreate,
  runImportGold,
  runServe,
  runTokenCreate,
  runTokenList,
  runTokenRevoke,
  SERVE_FLAGS,
  type ServeFlags,
  TOKEN_CREATE_FLAGS,
} from './serve.js';
import { runSubmit, SUBMIT_FLAGS, type SubmitFlags } from './submit.js';

// The server loads heavy modules (Hono, Kysely, the database drivers, worker pools) and the report Vega: their
// commands import them when run, so that `rumedbench eval` or `tasks` starts as fast as before they existed.

export function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command('rumedbench')
    // `serve --db X` and `serve token create --db Y` both take --db: an option belongs to the command it follows.
    .enablePositionalOptions()
    .description('RuMedBench: the Russian medical language-understanding benchmark')
    .version(VERSION)
    .showHelpAfterError()
    .exitOverride()
    // Set before the commands are made, which inherit it: help to stdout, usage errors to stderr, both through io.
    .configureOutput({
      writeOut: (t) => io.out(t),
      writeErr: (t) => (io.err ?? ((x: string) => process.stderr.write(x)))(t),
    });
  // One --quiet for every command (addFlags declares it on each).
  program.hook('preAction', (_, action) => {
    if (action.getOptionValue('quiet') !== true) return;
    io.quiet = true;
    io.log = { ...io.log, info: () => {}, debug: () => {} };
  });

  addFlags(
    program
      .command('eval')
      .description('score a predictions folder or .zip (RuMedBench or MedBench platform format)')
      .argument('<path>', 'folder or .zip of <Task>.jsonl files'),
    EVAL_FLAGS,
  ).action(async (path: string, flags: EvalFlags) => setExit(await runEval(path, flags, io)));

  addFlags(
    program
      .command('compare')
      .description('paired comparison of two submissions on the same items (B − A)')
      .argument('<a>', 'baseline submission')
      .argument('<b>', 'candidate submission'),
    COMPARE_FLAGS,
  ).action(async (a: string, b: string, flags: CompareFlags) => setExit(await runCompare(a, b, flags, io)));

  const data = program.command('data').description('get and inspect the task files');
  addFlags(
    data
      .command('download')
      .description('fetch the task files from the pinned upstream commit, checking size and sha256'),
    DOWNLOAD_FLAGS,
  ).action(async (flags: DownloadFlags) => setExit(await runDownload(flags, io)));
  addFlags(
    data.command('info').description('records, label distribution and text lengths per task and split'),
    INFO_FLAGS,
  ).action(async (flags: InfoFlags) => setExit(await runInfo(flags, io)));

  addFlags(
    program
      .command('baseline')
      .description(
        "train the paper's naive or feature-based baseline, or heads over a frozen ONNX encoder; predict the test sets, score them",
      )
      .argument('<method>', 'naive | tfidf | encoder'),
    BASELINE_FLAGS,
  ).action(async (method: string, flags: BaselineFlags) =>
    setExit(await runBaselineCommand(method, flags, io)),
  );

  addFlags(
    program
      .command('predict')
      .description(
        'predict with a saved baseline model: --text for one text, --input for a JSONL file of records',
      ),
    PREDICT_FLAGS,
  ).action(async (flags: PredictFlags) => setExit(await runPredict(flags, io)));

  addFlags(
    program
      .command('predict-encoder')
      .description(
        'run a fine-tuned ONNX encoder (sequence or token classification) on a task and score its test predictions',
      ),
    PREDICT_ENCODER_FLAGS,
  ).action(async (flags: PredictEncoderFlags) => setExit(await runPredictEncoder(flags, io)));

  const llm = program
    .command('llm')
    .description(
      'evaluate a language model (an OpenAI-compatible endpoint or a local GGUF file) on the tasks',
    )
    .action(async (flags: LlmFlags) => setExit(await runLlmCommand(flags, io)));
  addFlags(llm, LLM_FLAGS);

  addFlags(
    program
      .command('run')
      .description("run a run spec: a spec file, or a run folder's manifest.json (repeats that run exactly)")
      .argument('<spec>', 'spec.json or manifest.json'),
    RUN_FLAGS,
  ).action(async (file: string, flags: FlagsOf<typeof RUN_FLAGS>) =>
    setExit(await runSpecCommand(file, flags, io)),
  );

  addFlags(
    program
      .command('report')
      .description(
        'one self-contained HTML report with charts (or Markdown tables) for one system or several',
      )
      .argument(
        '<path...>',
        'predictions folder/.zip, llm or baseline run folder, or a saved eval/compare --json result',
      ),
    REPORT_FLAGS,
  ).action(async (paths: string[], flags: ReportFlags) => setExit(await runReportCommand(paths, flags, io)));

  // The serve commands' modules load the server when run; their flag tables are light.
  const serve = addFlags(
    program
      .command('serve')
      .description('a self-hostable leaderboard: public and closed boards, uploads, admin'),
    SERVE_FLAGS,
  ).action(async (flags: ServeFlags) => setExit(await runServe(flags, io)));
  addFlags(
    serve
      .command('import-gold')
      .description(
        "import the closed tests' gold (<Task>.jsonl: id and answer) and re-score the closed board",
      )
      .argument('<dir>', 'folder of <Task>.jsonl files'),
    DB_FLAGS,
  ).action(async (dir: string, flags: DbFlags) => setExit(await runImportGold(dir, flags, io)));
  const token = serve.command('token').description('team API tokens');
  addFlags(token.command('create').description('create a token (shown once)'), TOKEN_CREATE_FLAGS).action(
    async (flags: FlagsOf<typeof TOKEN_CREATE_FLAGS>) => setExit(await runTokenCreate(flags, io)),
  );
  addFlags(
    token.command('revoke').description('revoke a token').argument('<id>', 'token id'),
    DB_FLAGS,
  ).action(async (id: string, flags: DbFlags) => setExit(await runTokenRevoke(id, flags, io)));
  addFlags(token.command('list').description('list tokens'), DB_FLAGS).action(async (flags: DbFlags) =>
    setExit(await runTokenList(flags, io)),
  );

  const endpoint = serve.command('endpoint').description("the model servers the platform's workers may ask");
  addFlags(
    endpoint
      .command('add')
      .description('put a server (or GGUF file) on the allow-list')
      .argument('<name>', 'its name'),
    ENDPOINT_ADD_FLAGS,
  ).action(async (name: string, flags: FlagsOf<typeof ENDPOINT_ADD_FLAGS>) =>
    setExit(await runEndpointAdd(name, flags, io)),
  );
  addFlags(endpoint.command('list').description('the allow-list'), ENDPOINT_LIST_FLAGS).action(
    async (flags: FlagsOf<typeof ENDPOINT_LIST_FLAGS>) => setExit(await runEndpointList(flags, io)),
  );
  addFlags(
    endpoint.command('remove').description('take a server off the allow-list').argument('<name>', 'its name'),
    PLAN_CANCEL_FLAGS,
  ).action(async (name: string, flags: FlagsOf<typeof PLAN_CANCEL_FLAGS>) =>
    setExit(await runEndpointRemove(name, flags, io)),
  );

  const campaign = serve.command('campaign').description('human evaluation campaigns');
  addFlags(
    campaign.command('create').description('create a campaign and print one invitation link per annotator'),
    CAMPAIGN_CREATE_FLAGS,
  ).action(async (flags: CampaignFlags) => setExit(await runCampaignCreate(flags, io)));
  addFlags(campaign.command('list').description('list campaigns'), DB_FLAGS).action(async (flags: DbFlags) =>
    setExit(await runCampaignAction('list', undefined, flags, io)),
  );
  for (const [name, what] of [
    ['close', 'close a campaign: its links stop working'],
    ['publish', "publish the campaign's answers as a human row on the board"],
  ] as const) {
    addFlags(campaign.command(name).description(what).argument('<id>', 'campaign id'), DB_FLAGS).action(
      async (id: string, flags: DbFlags) => setExit(await runCampaignAction(name, id, flags, io)),
    );
  }
  addFlags(
    campaign
      .command('export')
      .description('every answer as JSONL: annotator, item id, answer, time spent, timestamp')
      .argument('<id>', 'campaign id'),
    CAMPAIGN_EXPORT_FLAGS,
  ).action(async (id: string, flags: FlagsOf<typeof CAMPAIGN_EXPORT_FLAGS>) =>
    setExit(await runCampaignAction('export', id, flags, io)),
  );

  addFlags(
    program
      .command('contamination')
      .description(
        "probe whether a model has seen a split's items (Oren et al.'s order test), without scoring it",
      ),
    CONTAMINATION_FLAGS,
  ).action(async (flags: ContaminationFlags) => setExit(await runContamination(flags, io)));

  addFlags(
    program
      .command('merge')
      .description(
        "join the run folders of an LLM run's shards (--shard I/N) into the run folder of the whole run",
      )
      .argument('<runs...>', "the shards' run folders"),
    MERGE_FLAGS,
  ).action(async (runs: string[], flags: FlagsOf<typeof MERGE_FLAGS>) =>
    setExit(await runMerge(runs, flags, io)),
  );

  addFlags(
    program
      .command('submit')
      .description('send a run folder, predictions folder or zip to a leaderboard; print its answer')
      .argument('<path>', 'run folder, predictions folder, .zip or <Task>.jsonl'),
    SUBMIT_FLAGS,
  ).action(async (path: string, flags: SubmitFlags) => setExit(await runSubmit(path, flags, io)));

  const plan = program.command('plan').description('evaluation plans: many models × settings from one file');
  addFlags(
    plan
      .command('check')
      .description('list the cells of a plan, their requests and cost estimate, without sending anything')
      .argument('<plan>', 'plan file (.yaml or .json)'),
    PLAN_CHECK_FLAGS,
  ).action(async (file: string, flags: FlagsOf<typeof PLAN_CHECK_FLAGS>) =>
    setExit(await runPlanCheck(file, flags, io)),
  );
  addFlags(
    plan
      .command('run')
      .description(
        'run every cell of a plan into its own run folder, side by side; then summary.json and report.html',
      )
      .argument('<plan>', 'plan file (.yaml or .json)'),
    PLAN_RUN_FLAGS,
  ).action(async (file: string, flags: FlagsOf<typeof PLAN_RUN_FLAGS>) =>
    setExit(await runPlanRun(file, flags, io)),
  );

  addFlags(
    plan
      .command('submit')
      .description("queue a plan's cells in PostgreSQL for workers on any machine; print the plan id")
      .argument('<plan>', 'plan file (.yaml or .json)'),
    PLAN_SUBMIT_FLAGS,
  ).action(async (file: string, flags: FlagsOf<typeof PLAN_SUBMIT_FLAGS>) =>
    setExit(await runPlanSubmit(file, flags, io)),
  );
  addFlags(
    plan
      .command('status')
      .description('a queued plan: requests done per cell, rate, time left, failures, workers')
      .argument('<id>', 'plan id (from plan submit)'),
    PLAN_STATUS_FLAGS,
  ).action(async (id: string, flags: FlagsOf<typeof PLAN_STATUS_FLAGS>) =>
    setExit(await runPlanStatus(id, flags, io)),
  );
  addFlags(
    plan
      .command('migrate')
      .description("bring the queue's schema to this release (stop older workers first)"),
    PLAN_MIGRATE_FLAGS,
  ).action(async (flags: FlagsOf<typeof PLAN_MIGRATE_FLAGS>) => setExit(await runPlanMigrate(flags, io)));
  addFlags(
    plan.command('cancel').description('cancel a queued plan').argument('<id>', 'plan id'),
    PLAN_CANCEL_FLAGS,
  ).action(async (id: string, flags: FlagsOf<typeof PLAN_CANCEL_FLAGS>) =>
    setExit(await runPlanCancel(id, flags, io)),
  );
  addFlags(
    plan
      .command('export')
      .description("write a queued plan's finished cells and summary as `plan run` writes them")
      .argument('<id>', 'plan id'),
    PLAN_EXPORT_FLAGS,
  ).action(async (id: string, flags: FlagsOf<typeof PLAN_EXPORT_FLAGS>) =>
    setExit(await runPlanExport(id, flags, io)),
  );
  addFlags(
    program
      .command('worker')
      .description('run queued plan jobs from PostgreSQL (plan submit) on this machine'),
    WORKER_FLAGS,
  ).action(async (flags: FlagsOf<typeof WORKER_FLAGS>) => setExit(await runWorker(flags, io)));

  // `npx rumedbench --version` is read by npx itself; this command reaches us however it is run.
  addFlags(program.command('version').description('print the version of rumedbench'), {}).action(() => {
    io.out(`${VERSION}\n`);
  });

  addFlags(program.command('tasks').description('list the tasks and their metrics'), {}).action(() => {
    const rows = TASKS.map((t) => [t.name, t.kind, t.metrics.join(', '), t.splits.join(', '), t.title]);
    io.out(`${renderTable(['task', 'kind', 'metrics', 'splits', 'what'], rows, 5)}\n`);
  });
  return program;
}

/** Runs the CLI on `argv` (without `node` and the script); resolves to the exit status. */
export async function runCli(argv: readonly string[], io?: Partial<CliIo>): Promise<number> {
  const full: CliIo = {
    out: io?.out ?? ((t) => process.stdout.write(t)),
    log: io?.log ?? createLogger('info'),
    err: io?.err ?? ((t) => process.stderr.write(t)),
  };
  let code: number = EXIT.ok;
  const program = buildProgram(full, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (e instanceof UsageError) {
      full.log.error(e.message);
      return EXIT.usage;
    }
    if (e instanceof RumedbenchError) {
      full.log.error(e.message);
      return exitCodeOf(e);
    }
    throw e;
  }
  return code;
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  runCli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(
        `rumedbench: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      process.exitCode = 70;
    },
  );
}
