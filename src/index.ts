/**
 * rumedbench's library API: the same functions the CLI calls.
 * @example
 * import { evaluateSubmission } from 'rumedbench';
 * const result = await evaluateSubmission('out/', { dataDir: 'data/' });
 */
export { CRF_OPTIONS, sentenceFeatures, tokenFeatures } from './baselines/crf.js';
export {
  DEFAULT_C,
  ENCODER_LR,
  type EncoderRef,
  loadEncoderModel,
  openSavedEncoder,
  trainEncoder,
  viterbiIob2,
} from './baselines/encoder.js';
export { loadModel, type ModelManifest, saveModel } from './baselines/model-io.js';
export { labelsByFrequency, trainNaive } from './baselines/naive.js';
export {
  type BaselineRunOptions,
  type BaselineRunResult,
  runBaseline,
  type TaskRun,
  trainBaseline,
} from './baselines/run.js';
export { inputText, LR_OPTIONS, TFIDF_OPTIONS, trainTfidf } from './baselines/tfidf.js';
export type { BaselineMethod, BaselineModel, Scored, TrainOptions } from './baselines/types.js';
export { runCli } from './cli/main.js';
export { type DownloadOptions, type DownloadReport, downloadData, isIntact } from './data/download.js';
export { dataInfo, type SplitInfo } from './data/info.js';
export { parseJsonl, readJsonlFile, toJsonl } from './data/jsonl.js';
export { hasGold, ifPresent, type LoadOptions, loadSplit, readGoldLabels } from './data/load.js';
export { MANIFEST, type ManifestEntry, UPSTREAM } from './data/manifest.js';
export { DATA_ENV, defaultDataDir, resolveDataDir, splitPath } from './data/paths.js';
export { backoffMs, retryAfterMs, send, TransportError } from './data/transport.js';
export { runLlm } from './engine/loop.js';
export type { OpenProviderOptions, ProviderRecord } from './engine/providers/record.js';
export { providerNames, registerProvider } from './engine/providers/registry.js';
export { type RunContext, type RunOutcome, readRunSpec, runEvaluation } from './engine/run.js';
export {
  type BaselineSpec,
  type ContaminationSpec,
  type LlmSpec,
  makeRunSpec,
  RUN_SPEC_SCHEMA,
  type RunSpec,
  type RunSpecInput,
} from './engine/spec.js';
export * from './errors.js';
export { LlmRequestError } from './llm/client.js';
export { Journal, type JournalEntry } from './llm/journal.js';
export { type LlamaOptions, LlamaProvider } from './llm/llama.js';
export * from './llm/loglik.js';
export { type OpenAIOptions, OpenAIProvider } from './llm/openai.js';
export {
  buildMessages,
  type ChatMessage,
  drawExamples,
  type PromptTemplate,
  readTemplates,
  requestKey,
} from './llm/prompt.js';
export type { ChatReply, Provider, SamplingParams, Usage } from './llm/provider.js';
export type { LlmRunOptions, LlmRunResult, SampleLog, SplitChoice } from './llm/run.js';
export { createLogger, type Logger, type LogLevel } from './log.js';
export { bootstrapIntervals, type Delta, type Interval, pairedComparison } from './metrics/bootstrap.js';
export {
  buildItemStats,
  type ItemStats,
  type MetricValues,
  metricsFromSums,
  metricsOf,
  type Prediction,
  taskScore,
} from './metrics/item-stats.js';
export { createRng, type Rng } from './metrics/rng.js';
export { countEntities, type Entity, getEntities, prf } from './metrics/seqeval.js';
export { type CrfModel, type CrfOptions, predictCrf, type TokenAttributes, trainCrf } from './ml/crf.js';
export { type BinaryLrOptions, ovrProbabilities, trainOneVsRest } from './ml/logreg.js';
export {
  blockDecisionValues,
  blockWeights,
  type OvrBlock,
  trainOneVsRestParallel,
} from './ml/ovr-parallel.js';
export type { CsrMatrix } from './ml/sparse.js';
export { fitTransform, ngrams, type TfidfModel, type TfidfOptions, transform } from './ml/tfidf.js';
export {
  allCharts,
  buildReport,
  type PairComparison,
  paperScore,
  type Report,
  type ReportOptions,
} from './report/build.js';
export * from './report/charts.js';
export { renderCharts, renderReportHtml } from './report/html.js';
export { LANGS, type Lang, STRINGS, type Strings } from './report/i18n.js';
export { renderReportMarkdown } from './report/markdown.js';
export { PAPER_ROWS, type PaperRow } from './report/paper.js';
export { type ReportRunOptions, type ReportRunResult, runReport } from './report/run.js';
export {
  type InputKind,
  type LlmDetails,
  type LlmSample,
  type LoadedInput,
  loadInput,
  ReportInputError,
  type ReportSystem,
  type TaskScores,
} from './report/sources.js';
export { renderSvg } from './report/svg.js';
export {
  renderBreakdown,
  renderComparison,
  renderDetails,
  renderSummary,
  renderTable,
} from './report/table.js';
export { type Breakdown, breakdown } from './scoring/breakdown.js';
export { type ComparisonResult, compareSubmissions, compareValidated } from './scoring/compare.js';
export { type Answered, platformLines, rumedbenchLines } from './scoring/formats.js';
export { readGoldDir } from './scoring/gold-dir.js';
export { formatIssue, type IssueCode, type SubmissionIssue } from './scoring/issues.js';
export { ReferenceLoader } from './scoring/reference.js';
export {
  type Manifest,
  type ManifestInput,
  manifestSettings,
  type ProviderInfo,
  parseManifest,
  type RunFolder,
  RunFolderError,
  type RunLog,
  type RunSummary,
  type RunSummaryInput,
  readManifest,
  readRunFolder,
  readRunLog,
  type StoredRunSpec,
  writeManifest,
  writeRunSummary,
} from './scoring/run-log.js';
export {
  type EvaluateOptions,
  type EvaluationResult,
  evaluateSubmission,
  RESULT_SCHEMA_VERSION,
  scoreValidated,
  type TaskResult,
  validateSubmission,
} from './scoring/score.js';
export { readSubmission, type Submission } from './scoring/submission.js';
export {
  checkAnswer,
  type ScoredItem,
  type SubmissionFormat,
  type ValidatedTask,
  validateTaskFile,
} from './scoring/validate.js';
export { checkTask, compileTask, TASK_SCHEMA, type TaskFile, taskFromObject } from './tasks/definition.js';
export { loadTaskFile, parseTaskFile } from './tasks/definition-file.js';
export * from './tasks/parse.js';
export {
  BUILTIN_TASKS,
  getTask,
  isChoiceTask,
  isTaskName,
  OVERALL_TASKS,
  parseTaskList,
  registerTask,
  TASKS,
  type TaskName,
  userTasks,
} from './tasks/registry.js';
export type {
  MetricName,
  MultilabelTask,
  PromptContext,
  Split,
  TaskDefinition,
  TaskKind,
  TaskPrompt,
  TaskRecord,
} from './tasks/types.js';
export { SPLITS } from './tasks/types.js';
export { loadUserTasks, TASKS_ENV } from './tasks/user.js';
export { VERSION } from './version.js';
