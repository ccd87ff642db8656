// One task of `npm run bench:baselines`, our side: load train and test, fit TF-IDF and the one-vs-rest logistic
// regression (both cores), predict the test set. Prints one JSON object: wall time of that span, the process's peak
// memory (worker threads included), the feature count and the test metrics. Usage: node feature-based-task.js DATA TASK
import {
  buildItemStats,
  fitTransform,
  getTask,
  inputText,
  loadSplit,
  metricsOf,
  TFIDF_OPTIONS,
  trainTfidf,
} from '../dist/index.js';

const [dataDir, name] = process.argv.slice(2);
const task = getTask(name);
const t0 = performance.now();
const train = await loadSplit(task, 'train', { dataDir });
const test = await loadSplit(task, 'test', { dataDir });
const model = await trainTfidf(task, train, { seed: 0 });
const predictions = model.predict(test);
const wall = (performance.now() - t0) / 1000;
const stats = buildItemStats(
  task,
  test.map((r, i) => ({ id: r.id, gold: r.gold, prediction: predictions[i] })),
);
const metrics = metricsOf(stats);
// The vocabulary size, counted the way scikit-learn counts vocabulary_ (a separate fit, outside the timed span).
const features = fitTransform(
  train.map((r) => inputText(task, r)),
  TFIDF_OPTIONS,
).model.index.size;
console.log(
  JSON.stringify({
    task: name,
    wall_s: wall,
    peak_mb: process.resourceUsage().maxRSS / 1024,
    features,
    accuracy: metrics.accuracy,
    hit_at_3: metrics.hit_at_3 ?? null,
  }),
);
