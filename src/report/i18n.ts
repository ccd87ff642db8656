/**
 * The report's words in English and Russian. Task names, metric names and numbers are not translated; everything a
 * reader reads as prose is, so that a report can go into a Russian paper or review as it is.
 */

import type { UnrankedFile } from '../scoring/rank.js';

export type Lang = 'en' | 'ru';
export const LANGS: readonly Lang[] = ['en', 'ru'];

const en = {
  title: 'RuMedBench report',
  generated: 'Generated',
  summary: 'Summary',
  summaryNote:
    'Test-set results in the paper’s form: accuracy/Hit@3 for RuMedTop3 and RuMedSymptomRec, accuracy/entity F1 for RuMedNER, accuracy otherwise. The overall score is the mean of the five public task scores.',
  scoresWithCi: 'Task scores with 95% confidence intervals',
  ciNote: 'Percentile bootstrap over the test items; a task score is the mean of its metrics.',
  model: 'Model',
  system: 'System',
  task: 'Task',
  metric: 'Metric',
  value: 'Value',
  score: 'score',
  overall: 'Overall',
  paper: 'paper',
  /** A paper row's name as the page's language writes it (model names stay as they are). */
  paperRowName: (name: string): string => name,
  /** A metric's name as a page writes it (the result files keep the metric's key). */
  metricName: (m: string): string => m,
  /** A split's name as a page writes it. */
  splitName: (split: string): string => split,
  /** A gold label as a page writes it (RuMedNLI's relations, RuMedNER's entity types; codes stay as they are). */
  labelName: (_task: string, label: string): string => label,
  labelWord: 'label',
  /** Hit@3 where a chart names it beside accuracy. */
  hit3: 'Hit@3',
  support: 'support',
  bootstrapRow: 'bootstrap',
  bootstrapValue: (resamples: string, seed: number) => `${resamples} resamples, seed ${seed}`,
  issuesCount: (errors: number, warnings: number) => `${errors} error(s), ${warnings} warning(s)`,
  notes: 'notes',
  ms: 'ms',
  sec: 's',
  median: 'median',
  max: 'max',
  moreChars: (n: string) => `${n} more characters`,
  notComparedTask: (system: string, task: string) =>
    `${system}: ${task}: the two submissions do not cover the same items with the same gold; not compared`,
  /** A Russian report says a validation line's meaning in Russian; the values stay as the files write them. */
  issuesAsPrinted: '',
  items: 'items',
  notScored: 'not scored',
  /** Before the first error's words, where a file's errors leave its task unscored. */
  unscoredErrors: (n: string) => `${n} error(s) in the file; the first: `,
  perTask: 'Per task',
  scoreChart: (task: string) => `${task}: score by system`,
  scoreAxis: 'score, % (95% CI)',
  ci95: '95% CI',
  systemsCount: (n: number) => `${n} system(s)`,
  levels: 'Lines: the paper’s Naive and Human scores.',
  byLabel: (task: string, n: number) => `${task}: accuracy and Hit@3 for the ${n} most frequent gold labels`,
  confusion: (task: string) => `${task}: confusion matrix (rows gold, columns predicted)`,
  gold: 'gold',
  predicted: 'predicted',
  count: 'items',
  byEntity: 'RuMedNER: precision, recall and F1 by entity type (seqeval, exact span and type)',
  entityType: 'entity type',
  percent: '%',
  comparison: 'Paired comparison against the first system',
  ranking: 'Which systems differ',
  rankingNote: (alpha: number, resamples: number) =>
    `Score ± standard error (clustered by premise on RuMedNLI), rank with its 95% interval from ${resamples} paired bootstrap replicates, and groups: systems that share a letter are not distinguishable on these items (Holm-corrected tests at α ${alpha}: exact McNemar where the score is accuracy, a z-test on the paired differences for other means, the paired bootstrap for RuMedNER and the overall). The detectable difference is the smallest gap a paired comparison finds with 80% power at α 0.05.`,
  rankColumns: ['System', 'Score ± SE', 'Rank (95% interval)', 'Group'],
  /** The table of a task's Holm-tested pairs under its ranking (what `rank` prints as "differ at α"). */
  pairColumns: ['Pair (B − A)', 'Difference [95% CI]', 'p (Holm)', 'Test', 'Differ'],
  pairsCaption: (pairs: number, differ: number, alpha: number) =>
    `${pairs} pairs tested on the same items, ${differ} differ at α ${alpha} (p Holm-corrected over the task’s pairs)`,
  pairTests: {
    'exact McNemar': 'exact McNemar',
    'z-test': 'z-test',
    'z-test, clustered': 'z-test, clustered',
    'paired bootstrap': 'paired bootstrap',
  } as Record<string, string>,
  yes: 'yes',
  no: 'no',
  detectable: (points: string) => `detectable difference ≈ ${points} points`,
  overallName: 'Overall',
  notRanked: (task: string, overall: boolean, files: string) =>
    `${task} is not ranked${overall ? ', and so neither is the overall' : ''}: a task is ranked only where every system answers the same items, and these files differ: ${files}.`,
  unrankedFile: (d: UnrankedFile) =>
    d.reason === 'missing'
      ? `${d.system} has no file of it (${d.file})`
      : d.reason === 'unscored'
        ? `${d.system}’s ${d.file} is not scored (${d.errors} error(s), under “Validation problems”)`
        : `${d.system}’s ${d.file} answers ${d.items} items, ${d.foreign} of them not in ${d.like}`,
  comparisonNote: (resamples: number) =>
    `B − A on the same items: 95% paired-bootstrap interval (over premises on RuMedNLI) and a two-sided p-value: the exact McNemar test for classification accuracy on independent items (RuMedDaNet, RuMedTest, a task of your own), approximate randomization otherwise, by premise on RuMedNLI (${resamples} resamples).`,
  forest: 'Differences from the first system (B − A) with 95% CIs',
  delta: 'B − A, points',
  pValue: 'p',
  noComparison: (name: string, why: string) => `${name}: not compared (${why}).`,
  noItems: 'a saved result has no per-item predictions to pair',
  llm: 'Language-model runs',
  unparsedChart: 'Unparsed replies by task',
  unparsedAxis: 'unparsed, % of items',
  latencyChart: 'Request latency',
  latencyAxis: 'latency, s',
  costChart: 'Cost and overall score',
  costAxis: 'cost, USD',
  paretoFront: 'on the Pareto front',
  logScale: 'log scale',
  requests: 'requests',
  usage: 'Tokens, cost and throughput',
  promptTokens: 'prompt tokens',
  completionTokens: 'completion tokens',
  cost: 'cost, USD',
  throughput: 'requests/s',
  medianLatency: 'median latency',
  p95Latency: 'p95 latency',
  settings: 'Sampling settings and prompt versions',
  setting: 'Setting',
  samples: 'samples',
  unparsed: 'unparsed',
  failed: 'failed',
  wrong: 'wrong',
  mode: 'mode',
  candidates: 'Best candidates by log-probability (and the gold)',
  answerLabel: 'candidate',
  loglikAcc: 'acc / acc_norm char / byte',
  calibration: 'Calibration of log-likelihood answers',
  calibrationNote:
    'The softmax of the candidates’ log-likelihoods as the model’s confidence. ECE: expected calibration error over 15 equal-width bins (Guo et al., 2017) and over 15 equal-count bins (Nixon et al., 2019); Brier score; NLL of the right answer; accuracy of the most confident half. Lower is better for all but the last.',
  eceWide: 'ECE',
  eceCount: 'ECE, equal-count bins',
  brier: 'Brier',
  nll: 'NLL',
  surestHalf: 'accuracy, surest 50 %',
  reliabilityChart: 'Reliability: accuracy against confidence (log-likelihood runs)',
  coverageChart: 'Accuracy of the surest answers (selective prediction)',
  confidenceAxis: 'confidence, %',
  accuracyAxis: 'accuracy, %',
  coverageAxis: 'surest share of items, %',
  trust: 'Is the score trustworthy?',
  trustNote:
    'What this run (or files beside it) says about its score: how it moves with the instruction’s wording, with perturbed input and between repeats, and whether the model shows signs of having seen the test items.',
  formulations: 'Prompt formulations',
  formulationsNote:
    'Each formulation over the same items; best − worst on those items with its 95% paired-bootstrap interval and p-value.',
  meanSd: 'mean ± sd',
  range: 'range',
  bestWorst: 'best − worst',
  perturbations: 'Perturbations',
  perturbationsNote:
    'Perturbed − clean on the same items, with the 95% paired-bootstrap interval and p-value.',
  variant: 'variant',
  clean: 'clean',
  perturbed: 'perturbed',
  repeats: 'Repeats',
  repeatsNote:
    'Each item asked k times (sampling seed + r); the majority answer is scored; the mean accuracy over repeats, how often all repeats agree, and the items whose answer flips.',
  meanAccuracy: 'mean accuracy',
  consistency: 'same answer, %',
  flipped: 'flipped',
  contamination: 'Contamination probes',
  contaminationNote:
    'order: Oren et al. (2023); guided: Golchin & Surdeanu (2023); options: Deng et al. (2023). A small p-value is evidence that the model saw the items; a large one is not evidence that it did not.',
  probe: 'probe',
  statistic: 'statistic',
  verdict: 'verdict',
  /** The probes' names (`contamination --probes`), and their verdicts, as a page says them. */
  probeNames: { order: 'order', guided: 'guided', options: 'options' } as Record<string, string>,
  verdicts: { contaminated: 'contaminated', 'no evidence': 'no evidence' } as Record<string, string>,
  orderStatistic: (difference: string, t: string) => `Δ log p ${difference}, t ${t}`,
  guidedStatistic: (guided: string, general: string) => `ROUGE-L ${guided} vs ${general}`,
  optionsStatistic: (exact: string, chance: string) => `exact ${exact}% vs chance ${chance}%`,
  failures: 'Wrong and unparsed answers (public test sets)',
  failuresNote: (shown: number, total: number) =>
    shown < total
      ? `${shown} of ${total} shown; samples.jsonl in the run folder has them all.`
      : `${total} in all.`,
  filter: 'Filter',
  prompt: 'Prompt (the item)',
  reply: 'Raw reply',
  parsed: 'Parsed answer',
  reason: 'Why unparsed',
  none: 'none',
  baseline: 'Baseline runs',
  trainedOn: 'trained on',
  seconds: 'seconds',
  skipped: 'skipped',
  encoder: 'encoder',
  pooling: 'pooling',
  maxLength: 'max length',
  labels: 'labels',
  issues: 'Validation problems',
  issuesNote: (shown: number, total: number) =>
    shown < total ? `${shown} of ${total} shown.` : `${total} in all.`,
  provenance: 'Provenance',
  version: 'rumedbench version',
  command: 'Command line',
  date: 'Date',
  split: 'Split',
  source: 'Source',
  kind: 'Input',
  dataFiles: 'Data files (sha256)',
  file: 'file',
  data: 'Data',
  chartData: 'Data behind the chart',
  sortHint: 'Click a column header to sort.',
  overallNote: 'Overall is reported only when all five public tasks are scored.',
  limited: (name: string, n: number) =>
    `${name}: scored on the first ${n} items of each task only (llm --limit); not comparable with full test-set scores.`,
  kinds: {
    predictions: 'predictions',
    llm: 'LLM run',
    baseline: 'baseline run',
    'eval-json': 'saved eval --json',
    'compare-json': 'saved compare --json',
  },
};

export type Strings = typeof en;

/** The paper's rows that are not models' names: said in Russian on Russian pages. */
const PAPER_ROW_NAMES_RU: Readonly<Record<string, string>> = {
  Naive: 'Наивное решение',
  Human: 'Человек',
  'Feature-based': 'На признаках',
};

const METRIC_NAMES_RU: Readonly<Record<string, string>> = {
  accuracy: 'точность',
  f1: 'F1',
  macro_f1: 'макро-F1',
  micro_f1: 'микро-F1',
  token_accuracy: 'точность по токенам',
  entity_f1: 'F1 по сущностям',
  hit_at_3: 'попадание в тройку',
  precision: 'точность',
  recall: 'полнота',
};

const SPLIT_NAMES_RU: Readonly<Record<string, string>> = {
  train: 'обучающий',
  dev: 'валидационный',
  test: 'тестовый',
  private_test: 'закрытый тестовый',
};

/**
 * Gold labels said in Russian: RuMedNLI's relations (the words its Russian prompt asks for) and RuMedNER's entity
 * types (RuDReC's scheme, Tutubalina et al., 2021). RuMedDaNet's labels are Russian already; diagnosis codes are codes.
 */
const LABEL_NAMES_RU: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  RuMedNLI: { entailment: 'следование', contradiction: 'противоречие', neutral: 'нейтрально' },
  RuMedNER: {
    ADR: 'побочное действие',
    DI: 'болезнь или показание',
    Drugclass: 'класс препарата',
    Drugform: 'форма препарата',
    Drugname: 'название препарата',
    Finding: 'симптом или находка',
  },
};

const ru: Strings = {
  title: 'Отчёт RuMedBench',
  generated: 'Создан',
  summary: 'Сводка',
  summaryNote:
    'Результаты на тестовых наборах в форме статьи: точность/попадание в тройку для RuMedTop3 и RuMedSymptomRec, точность/F1 по сущностям для RuMedNER, иначе точность. Общий балл — среднее баллов пяти открытых задач.',
  scoresWithCi: 'Баллы задач с 95% доверительными интервалами',
  ciNote: 'Перцентильный бутстрэп по тестовым примерам; балл задачи — среднее её метрик.',
  model: 'Модель',
  system: 'Система',
  task: 'Задача',
  metric: 'Метрика',
  value: 'Значение',
  score: 'балл',
  overall: 'Общий балл',
  paper: 'статья',
  paperRowName: (name: string): string => PAPER_ROW_NAMES_RU[name] ?? name,
  metricName: (m: string): string =>
    METRIC_NAMES_RU[m] ?? (/^hit_at_(\d+)$/.test(m) ? `попадание в первые ${m.slice('hit_at_'.length)}` : m),
  splitName: (split: string): string => SPLIT_NAMES_RU[split] ?? split,
  labelName: (task: string, label: string): string => LABEL_NAMES_RU[task]?.[label] ?? label,
  labelWord: 'метка',
  hit3: 'попадание в тройку',
  support: 'в эталоне',
  bootstrapRow: 'бутстрэп',
  bootstrapValue: (resamples: string, seed: number) => `${resamples} повторов, зерно ${seed}`,
  issuesCount: (errors: number, warnings: number) => `ошибок: ${errors}, предупреждений: ${warnings}`,
  notes: 'примечания',
  ms: 'мс',
  sec: 'с',
  median: 'медиана',
  max: 'максимум',
  moreChars: (n: string) => `ещё ${n} символов`,
  notComparedTask: (system: string, task: string) =>
    `${system}: ${task}: не сравнивается — файлы отвечают не на одни и те же примеры или с разными верными ответами.`,
  issuesAsPrinted:
    'Значения (идентификаторы, метки, ожидаемое и найденное) приведены так, как они записаны в файлах.',
  items: 'примеров',
  notScored: 'не оценено',
  unscoredErrors: (n: string) => `ошибок в файле: ${n}; первая: `,
  perTask: 'По задачам',
  scoreChart: (task: string) => `${task}: балл по системам`,
  scoreAxis: 'балл, % (95% ДИ)',
  ci95: '95% ДИ',
  systemsCount: (n: number) => `систем: ${n}`,
  levels: 'Линии: баллы наивного решения и человека из статьи.',
  byLabel: (task: string, n: number) =>
    `${task}: точность и попадание в тройку для ${n} самых частых верных меток`,
  confusion: (task: string) => `${task}: матрица ошибок (строки — верная метка, столбцы — предсказанная)`,
  gold: 'верная',
  predicted: 'предсказанная',
  count: 'примеров',
  byEntity: 'RuMedNER: точность, полнота и F1 по типам сущностей (seqeval, точное совпадение границ и типа)',
  entityType: 'тип сущности',
  percent: '%',
  comparison: 'Парное сравнение с первой системой',
  ranking: 'Какие системы различаются',
  rankingNote: (alpha: number, resamples: number) =>
    `Балл ± стандартная ошибка (на RuMedNLI с кластеризацией по посылке), место с 95% интервалом по ${resamples} парным бутстреп-репликам и группы: системы с общей буквой на этих примерах неразличимы (тесты с поправкой Холма, α ${alpha}: точный тест Макнемара для доли верных, z-тест парных разностей для других средних, парный бутстрэп для RuMedNER и общего балла). Обнаружимая разница — наименьший разрыв, который парное сравнение находит с мощностью 80% при α 0.05.`,
  rankColumns: ['Система', 'Балл ± СО', 'Место (95% интервал)', 'Группа'],
  pairColumns: ['Пара (B − A)', 'Разница [95% ДИ]', 'p (Холм)', 'Тест', 'Различие'],
  pairsCaption: (pairs: number, differ: number, alpha: number) =>
    `Пар проверено на одних и тех же примерах: ${pairs}, различаются при α ${alpha}: ${differ} (p с поправкой Холма по парам задачи)`,
  pairTests: {
    'exact McNemar': 'точный Макнемара',
    'z-test': 'z-тест',
    'z-test, clustered': 'z-тест, по кластерам',
    'paired bootstrap': 'парный бутстрэп',
  } as Record<string, string>,
  yes: 'да',
  no: 'нет',
  detectable: (points: string) => `обнаружимая разница ≈ ${points} п.`,
  overallName: 'Общий балл',
  notRanked: (task: string, overall: boolean, files: string) =>
    `${task} не ранжируется${overall ? ', а потому и общий балл' : ''}: задача ранжируется, только если все системы ответили на одни и те же примеры, а эти файлы отличаются: ${files}.`,
  unrankedFile: (d: UnrankedFile) =>
    d.reason === 'missing'
      ? `у ${d.system} нет файла этой задачи (${d.file})`
      : d.reason === 'unscored'
        ? `${d.system}: ${d.file} не оценён (ошибок: ${d.errors}, см. «Проблемы проверки»)`
        : `${d.system}: ${d.file} отвечает на ${d.items} примеров, из них ${d.foreign} нет в ${d.like}`,
  comparisonNote: (resamples: number) =>
    `B − A на одних и тех же примерах: 95% интервал парного бутстрэпа (на RuMedNLI — по посылкам) и двусторонний p: точный тест Макнемара для точности классификации на независимых примерах (RuMedDaNet, RuMedTest, собственные задачи), иначе рандомизационный тест, на RuMedNLI — по посылкам (${resamples} повторов).`,
  forest: 'Разница с первой системой (B − A) и 95% ДИ',
  delta: 'B − A, пункты',
  pValue: 'p',
  noComparison: (name: string, why: string) => `${name}: не сравнивается (${why}).`,
  noItems: 'в сохранённом результате нет предсказаний по примерам для парного сравнения',
  llm: 'Запуски языковых моделей',
  unparsedChart: 'Нераспознанные ответы по задачам',
  unparsedAxis: 'нераспознано, % примеров',
  latencyChart: 'Задержка запросов',
  latencyAxis: 'задержка, с',
  costChart: 'Стоимость и общий балл',
  costAxis: 'стоимость, USD',
  paretoFront: 'на фронте Парето',
  logScale: 'лог. шкала',
  requests: 'запросов',
  usage: 'Токены, стоимость и скорость',
  promptTokens: 'токены запроса',
  completionTokens: 'токены ответа',
  cost: 'стоимость, USD',
  throughput: 'запросов/с',
  medianLatency: 'медианная задержка',
  p95Latency: 'задержка p95',
  settings: 'Параметры генерации и версии промптов',
  setting: 'Параметр',
  samples: 'примеров',
  unparsed: 'нераспознано',
  failed: 'ошибок запроса',
  wrong: 'неверно',
  mode: 'режим',
  candidates: 'Лучшие кандидаты по log-вероятности (и верный ответ)',
  answerLabel: 'кандидат',
  loglikAcc: 'точность / нормированная по символам / по байтам',
  calibration: 'Калибровка ответов по правдоподобию',
  calibrationNote:
    'Уверенность модели — софтмакс логарифмов правдоподобия вариантов. ECE — ожидаемая ошибка калибровки по 15 интервалам равной ширины (Guo et al., 2017) и по 15 интервалам равного числа примеров (Nixon et al., 2019); оценка Брайера; NLL правильного ответа; точность на самой уверенной половине примеров. Для всех, кроме последней, меньше — лучше.',
  eceWide: 'ECE',
  eceCount: 'ECE, равные по числу интервалы',
  brier: 'Брайер',
  nll: 'NLL',
  surestHalf: 'точность, самые уверенные 50 %',
  reliabilityChart: 'Надёжность: точность против уверенности (прогоны по правдоподобию)',
  coverageChart: 'Точность самых уверенных ответов (выборочное предсказание)',
  confidenceAxis: 'уверенность, %',
  accuracyAxis: 'точность, %',
  coverageAxis: 'доля самых уверенных примеров, %',
  trust: 'Можно ли доверять оценке?',
  trustNote:
    'Что этот прогон (или файлы рядом с ним) говорит о своей оценке: как она меняется с формулировкой инструкции, с искажённым входом и между повторами, и есть ли признаки того, что модель видела тестовые примеры.',
  formulations: 'Формулировки промпта',
  formulationsNote:
    'Каждая формулировка на тех же примерах; лучшая − худшая на них с 95% парным бутстреп-интервалом и p-значением.',
  meanSd: 'среднее ± ст. откл.',
  range: 'размах',
  bestWorst: 'лучшая − худшая',
  perturbations: 'Искажения',
  perturbationsNote:
    'Искажённый − чистый на тех же примерах, с 95% парным бутстреп-интервалом и p-значением.',
  variant: 'вариант',
  clean: 'чистый',
  perturbed: 'искажённый',
  repeats: 'Повторы',
  repeatsNote:
    'Каждый пример задан k раз (зерно генерации + r); оценивается ответ большинства; средняя точность по повторам, доля примеров с одинаковым ответом и примеры, где ответ меняется.',
  meanAccuracy: 'средняя точность',
  consistency: 'тот же ответ, %',
  flipped: 'меняется',
  contamination: 'Проверки на утечку тестов',
  contaminationNote:
    '«Порядок»: Oren et al. (2023) — узнаёт ли модель опубликованный порядок примеров; «подсказка»: Golchin & Surdeanu (2023) — дописывает ли модель пример точнее, если назвать ей набор; «варианты»: Deng et al. (2023) — угадывает ли модель скрытый вариант ответа. Малое p-значение — свидетельство того, что модель видела примеры; большое не доказывает обратного.',
  probe: 'проверка',
  statistic: 'статистика',
  verdict: 'вывод',
  probeNames: { order: 'порядок', guided: 'подсказка', options: 'варианты' },
  verdicts: { contaminated: 'есть признаки утечки', 'no evidence': 'признаков нет' },
  orderStatistic: (difference: string, t: string) => `Δ логарифма вероятности ${difference}, t ${t}`,
  guidedStatistic: (guided: string, general: string) => `ROUGE-L ${guided} против ${general}`,
  optionsStatistic: (exact: string, chance: string) => `точно ${exact}% при случайном ${chance}%`,
  failures: 'Неверные и нераспознанные ответы (открытые тестовые наборы)',
  failuresNote: (shown: number, total: number) =>
    shown < total
      ? `Показано ${shown} из ${total}; все есть в samples.jsonl в папке запуска.`
      : `Всего ${total}.`,
  filter: 'Фильтр',
  prompt: 'Запрос (пример)',
  reply: 'Ответ модели',
  parsed: 'Распознанный ответ',
  reason: 'Почему не распознан',
  none: 'нет',
  baseline: 'Запуски бейзлайнов',
  trainedOn: 'обучено на',
  seconds: 'секунд',
  skipped: 'пропущено',
  encoder: 'энкодер',
  pooling: 'пулинг',
  maxLength: 'макс. длина',
  labels: 'метки',
  issues: 'Проблемы проверки',
  issuesNote: (shown: number, total: number) =>
    shown < total ? `Показано ${shown} из ${total}.` : `Всего ${total}.`,
  provenance: 'Происхождение',
  version: 'версия rumedbench',
  command: 'Команда',
  date: 'Дата',
  split: 'Набор',
  source: 'Источник',
  kind: 'Вход',
  dataFiles: 'Файлы данных (sha256)',
  file: 'файл',
  data: 'Данные',
  chartData: 'Данные графика',
  sortHint: 'Нажмите на заголовок столбца, чтобы отсортировать.',
  overallNote: 'Общий балл считается, только когда оценены все пять открытых задач.',
  limited: (name: string, n: number) =>
    `${name}: оценено только на первых ${n} примерах каждой задачи (llm --limit); не сравнимо с баллами на полных тестовых наборах.`,
  kinds: {
    predictions: 'предсказания',
    llm: 'запуск LLM',
    baseline: 'запуск бейзлайна',
    'eval-json': 'сохранённый eval --json',
    'compare-json': 'сохранённый compare --json',
  },
};

export const STRINGS: Record<Lang, Strings> = { en, ru };
