#!/usr/bin/env node
/**
 * The `rumedbench` command. Each command parses its flags and calls one typed function of the library; errors a
 * user can cause are printed as one line and set the exit status (2 for usage, 1 for a failing submission).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { withEngines } from '../engines.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { renderTable } from '../report/table.js';
import { isChoiceTask, TASKS } from '../tasks/registry.js';
import { VERSION } from '../version.js';
import { runBaselineCommand, runPredict } from './baseline.js';
import { runDownload, runInfo } from './data.js';
import { runCompare, runEval } from './eval.js';
import { addFlags } from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { LLM_FLAGS, type LlmFlags, runLlmCommand } from './llm.js';
import { parseCount, parseSplit } from './options.js';

/** Flags several commands share; a new Option each time (commander keeps state on them). */
const bootstrapOption = (what = 'bootstrap resamples, 0 for none') =>
  new Option('--bootstrap <n>', what).default(1000).argParser(parseCount('--bootstrap', 0));
const seedOption = (what = 'seed of the resampling') =>
  new Option('--seed <n>', what).default(0).argParser(parseCount('--seed', 0));
/** Encoder flags of `baseline encoder` and `predict-encoder`; `prefix` says which commands use them. */
const dtypeOption = (prefix: string) =>
  new Option(
    '--dtype <type>',
    `${prefix}onnx/model.onnx (fp32) or onnx/model_quantized.onnx (q8); model.onnx beside config.json works too`,
  ).choices(['fp32', 'q8']);
const maxLengthOption = (prefix: string) =>
  new Option('--max-length <n>', `${prefix}tokens per input (default: the model's limit)`).argParser(
    parseCount('--max-length', 4),
  );
const batchSizeOption = (prefix: string) =>
  new Option('--batch-size <n>', `${prefix}inputs per forward pass (default 16)`).argParser(
    parseCount('--batch-size', 1),
  );
const FILE_GOLD =
  'score RuMedBench-format files on the gold they carry, without checking ids against the data (as upstream eval.py)';

// The report and the server load heavy modules (Vega, Hono, Kysely, the database drivers, worker pools): their
// commands import them when run, so that `rumedbench eval` or `tasks` starts as fast as before they existed.
const reportCli = () => import('./report.js');
const serveCli = () => import('./serve.js');
const encoderCli = () => withEngines('rumedbench predict-encoder', () => import('./encoder.js'));

function scoringOptions(cmd: Command): Command {
  return cmd
    .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .addOption(
      new Option('--split <split>', 'split the predictions answer').default('test').argParser(parseSplit),
    )
    .addOption(bootstrapOption())
    .addOption(seedOption())
    .option('--file-gold', FILE_GOLD)
    .addOption(
      new Option('--max-issues <n>', 'problems printed per kind')
        .default(20)
        .argParser(parseCount('--max-issues', 0)),
    )
    .option('--json', 'print exactly one JSON object on stdout');
}

export function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command('rumedbench')
    // `serve --db X` and `serve token create --db Y` both take --db: an option belongs to the command it follows.
    .enablePositionalOptions()
    .description('RuMedBench: the Russian medical language-understanding benchmark')
    .version(VERSION)
    .showHelpAfterError()
    .exitOverride();

  scoringOptions(
    program
      .command('eval')
      .description('score a predictions folder or .zip (RuMedBench or MedBench platform format)')
      .argument('<path>', 'folder or .zip of <Task>.jsonl files'),
  )
    .option('--reference', "show the paper's rows (Naive … Human) beside the result")
    .option('--breakdown', 'per-label and per-entity-type tables, confusion matrices')
    .action(async (path: string, flags) => setExit(await runEval(path, flags, io)));

  scoringOptions(
    program
      .command('compare')
      .description('paired comparison of two submissions on the same items (B − A)')
      .argument('<a>', 'baseline submission')
      .argument('<b>', 'candidate submission'),
  ).action(async (a: string, b: string, flags) => setExit(await runCompare(a, b, flags, io)));

  const data = program.command('data').description('get and inspect the task files');
  data
    .command('download')
    .description('fetch the task files from the pinned upstream commit, checking size and sha256')
    .option('--dir <dir>', 'target folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .option('--base-url <url>', 'mirror to fetch from (default: $RUMEDBENCH_DATA_URL, else upstream)')
    .option('--tasks <list>', 'comma-separated task names (default: all)')
    .action(async (flags) => setExit(await runDownload(flags, io)));
  data
    .command('info')
    .description('records, label distribution and text lengths per task and split')
    .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .option('--tasks <list>', 'comma-separated task names (default: all)')
    .addOption(new Option('--top <n>', 'labels shown per split').default(3).argParser(parseCount('--top', 0)))
    .option('--json', 'print exactly one JSON object on stdout')
    .action(async (flags) => setExit(await runInfo(flags, io)));

  const positive = (name: string) => (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a number > 0, got "${v}"`);
    return n;
  };
  program
    .command('baseline')
    .description(
      "train the paper's naive or feature-based baseline, or heads over a frozen ONNX encoder; predict the test sets, score them",
    )
    .argument('<method>', 'naive | tfidf | encoder')
    .option('--tasks <list>', 'comma-separated task names (default: all)')
    .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .option('--out <dir>', 'output folder for predictions/ and submission.zip', 'baseline-out')
    .option('--save <dir>', 'save each trained model under DIR/<Task>')
    .addOption(
      new Option('--train-split <split>', 'split to train on').choices(['train', 'dev']).default('train'),
    )
    .addOption(seedOption('seed'))
    .addOption(
      new Option('--threads <n>', 'training threads (default: all cores)').argParser(
        parseCount('--threads', 1),
      ),
    )
    .addOption(bootstrapOption('bootstrap resamples for the score'))
    .option(
      '--model <dir|id>',
      'encoder: model folder (config.json, tokenizer.json, onnx/model.onnx) or hub id',
    )
    .addOption(new Option('--pooling <how>', 'encoder: sentence vector').choices(['mean', 'cls']))
    .addOption(dtypeOption('encoder: '))
    .addOption(maxLengthOption('encoder: '))
    .addOption(batchSizeOption('encoder: '))
    .addOption(
      new Option('--C <c>', 'encoder: inverse regularisation of the heads (default 1)').argParser(
        positive('--C'),
      ),
    )
    .option('--cache <dir>', 'encoder: embedding cache folder (default: the user cache folder)')
    .option('--no-cache', 'encoder: embed everything afresh and keep nothing')
    .option('--no-download', 'encoder: never fetch a hub model')
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object (runs and evaluation) on stdout')
    .action(async (method: string, flags) => setExit(await runBaselineCommand(method, flags, io)));

  program
    .command('predict')
    .description(
      'predict with a saved baseline model: --text for one text, --input for a JSONL file of records',
    )
    .requiredOption(
      '--model <dir>',
      'a task folder written by `baseline --save` (encoder heads find their encoder)',
    )
    .option('--task <task>', 'the task the model must be for')
    .option('--text <text>', 'one input text (tasks with one input field)')
    .option('--input <file>', 'JSONL records of the task (its input fields and id)')
    .addOption(new Option('--top <n>', 'labels to show').default(3).argParser(parseCount('--top', 1)))
    .action(async (flags) => setExit(await runPredict(flags, io)));

  program
    .command('predict-encoder')
    .description(
      'run a fine-tuned ONNX encoder (sequence or token classification) on a task and score its test predictions',
    )
    .requiredOption(
      '--model <dir|id>',
      'model folder (config.json with id2label, tokenizer.json, onnx/model.onnx)',
    )
    .requiredOption(
      '--task <task>',
      TASKS.filter((t) => !isChoiceTask(t))
        .map((t) => t.name)
        .join(', '),
    )
    .addOption(
      new Option('--split <split>', 'what to answer')
        .choices(['test', 'private_test', 'both'])
        .default('both'),
    )
    .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .option('--out <dir>', 'output folder for predictions/, submission.zip and summary.json', 'encoder-out')
    .addOption(dtypeOption('').default('fp32'))
    .addOption(maxLengthOption(''))
    .addOption(batchSizeOption(''))
    .addOption(
      new Option('--threads <n>', 'onnxruntime threads (default: all cores)').argParser(
        parseCount('--threads', 1),
      ),
    )
    .option('--labels <list|file>', "the model's labels in output order, where config.json says LABEL_0 …")
    .option('--no-download', 'never fetch a hub model')
    .addOption(bootstrapOption('bootstrap resamples for the score'))
    .addOption(seedOption())
    .option('--quiet', 'no progress on stderr')
    .option('--json', 'print one JSON object on stdout')
    .action(async (flags) => setExit(await (await encoderCli()).runPredictEncoder(flags, io)));

  const llm = program
    .command('llm')
    .description(
      'evaluate a language model (an OpenAI-compatible endpoint or a local GGUF file) on the tasks',
    )
    .action(async (flags: LlmFlags) => setExit(await runLlmCommand(flags, io)));
  addFlags(llm, LLM_FLAGS);

  program
    .command('report')
    .description('one self-contained HTML report with charts (or Markdown tables) for one system or several')
    .argument(
      '<path...>',
      'predictions folder/.zip, llm or baseline run folder, or a saved eval/compare --json result',
    )
    .option('--out <file>', 'HTML file to write (default: report.html); with --format markdown, stdout')
    .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
    .addOption(
      new Option('--split <split>', 'split the predictions answer').choices(['test', 'dev']).default('test'),
    )
    .option('--title <text>', 'the report title')
    .option('--name <list>', 'comma-separated display names, one per PATH')
    .option('--reference', "the paper's rows in the summary table")
    .addOption(new Option('--lang <lang>', 'language of the report').choices(['en', 'ru']).default('en'))
    .option('--svg-dir <dir>', 'also write every chart as its own SVG file')
    .option('--file-gold', FILE_GOLD)
    .addOption(
      new Option('--format <format>', 'html, or Markdown tables on stdout')
        .choices(['html', 'markdown'])
        .default('html'),
    )
    .addOption(bootstrapOption())
    .addOption(seedOption())
    .addOption(
      new Option('--max-labels <n>', 'gold labels in the RuMedTop3/RuMedSymptomRec charts')
        .default(15)
        .argParser(parseCount('--max-labels', 1)),
    )
    .addOption(
      new Option('--max-examples <n>', 'wrong or unparsed LLM answers listed per task')
        .default(200)
        .argParser(parseCount('--max-examples', 0)),
    )
    .action(async (paths: string[], flags) =>
      setExit(await (await reportCli()).runReportCommand(paths, flags, io)),
    );

  const dbOptions = (cmd: Command): Command =>
    cmd
      .option('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)')
      .option(
        '--db <file|url>',
        'SQLite file or postgres:// URL (default: $DATABASE_URL, else the user data folder)',
      );
  const serve = dbOptions(
    program
      .command('serve')
      .description('a self-hostable leaderboard: public and closed boards, uploads, admin'),
  )
    .addOption(new Option('--port <n>', 'port').default(8080).argParser(parseCount('--port', 0)))
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--no-anonymous', 'refuse uploads without a team token')
    .addOption(
      new Option('--anonymous-per-minute <n>', 'anonymous uploads per address and minute')
        .default(20)
        .argParser(parseCount('--anonymous-per-minute', 1)),
    )
    .addOption(
      new Option('--token-per-minute <n>', 'uploads per team token and minute (rejected ones count too)')
        .default(60)
        .argParser(parseCount('--token-per-minute', 1)),
    )
    .addOption(
      new Option('--quota-per-day <n>', 'accepted uploads per token and per address and day (0: no quota)')
        .default(0)
        .argParser(parseCount('--quota-per-day', 0)),
    )
    .addOption(
      new Option('--max-upload-mb <n>', 'largest request body, MiB')
        .default(16)
        .argParser(parseCount('--max-upload-mb', 1)),
    )
    .addOption(new Option('--threads <n>', 'scoring workers').argParser(parseCount('--threads', 1)))
    .option('--trust-proxy', 'take the client address from X-Forwarded-For (behind your own proxy only)')
    .option('--secure-cookies', 'mark cookies Secure (when served over HTTPS)')
    .option(
      '--public-url <url>',
      'the address browsers use (behind a proxy): only its Host is answered, forms must come from its origin',
    )
    .action(async (flags) => setExit(await (await serveCli()).runServe(flags, io)));
  dbOptions(
    serve
      .command('import-gold')
      .description(
        "import the closed tests' gold (<Task>.jsonl: id and answer) and re-score the closed board",
      )
      .argument('<dir>', 'folder of <Task>.jsonl files'),
  ).action(async (dir: string, flags) => setExit(await (await serveCli()).runImportGold(dir, flags, io)));
  const token = serve.command('token').description('team API tokens');
  dbOptions(
    token
      .command('create')
      .description('create a token (shown once)')
      .requiredOption('--team <name>', 'team'),
  ).action(async (flags) => setExit(await (await serveCli()).runTokenCreate(flags, io)));
  dbOptions(token.command('revoke').description('revoke a token').argument('<id>', 'token id')).action(
    async (id: string, flags) => setExit(await (await serveCli()).runTokenRevoke(id, flags, io)),
  );
  dbOptions(token.command('list').description('list tokens')).action(async (flags) =>
    setExit(await (await serveCli()).runTokenList(flags, io)),
  );

  const campaign = serve.command('campaign').description('human evaluation campaigns');
  dbOptions(
    campaign
      .command('create')
      .description('create a campaign and print one invitation link per annotator')
      .requiredOption('--task <task>', 'the task to annotate')
      .addOption(
        new Option('--split <split>', 'test or private_test')
          .choices(['test', 'private_test'])
          .default('test'),
      )
      .option('--items <n>', 'items to sample (stratified by gold label where known), or all', 'all')
      .addOption(
        new Option('--overlap <k>', 'annotators per item').default(1).argParser(parseCount('--overlap', 1)),
      )
      .addOption(
        new Option('--annotators <n>', 'annotators').default(3).argParser(parseCount('--annotators', 1)),
      )
      .addOption(seedOption('seed of the sample and the assignment'))
      .option('--name <text>', 'a name for the campaign')
      .option('--base-url <url>', 'the address annotators reach', 'http://127.0.0.1:8080'),
  ).action(async (flags) => setExit(await (await serveCli()).runCampaignCreate(flags, io)));
  dbOptions(campaign.command('list').description('list campaigns')).action(async (flags) =>
    setExit(await (await serveCli()).runCampaignAction('list', undefined, flags, io)),
  );
  for (const [name, what] of [
    ['close', 'close a campaign: its links stop working'],
    ['publish', "publish the campaign's answers as a human row on the board"],
  ] as const) {
    dbOptions(campaign.command(name).description(what).argument('<id>', 'campaign id')).action(
      async (id: string, flags) => setExit(await (await serveCli()).runCampaignAction(name, id, flags, io)),
    );
  }
  dbOptions(
    campaign
      .command('export')
      .description('every answer as JSONL: annotator, item id, answer, time spent, timestamp')
      .argument('<id>', 'campaign id')
      .option('--out <file>', 'write to a file instead of stdout'),
  ).action(async (id: string, flags) =>
    setExit(await (await serveCli()).runCampaignAction('export', id, flags, io)),
  );

  program
    .command('tasks')
    .description('list the tasks and their metrics')
    .action(() => {
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
      if (e.code === 'RUN_INCOMPLETE') return EXIT.incomplete;
      if (e.code === 'LLM_SERVER_REFUSED') return EXIT.refused;
      return EXIT.submissionErrors;
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
