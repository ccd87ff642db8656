// One side of `npm run bench:bilstm`, ours: train the BiLSTM classifier of ../src/baselines/bilstm.ts on a task's
// train split (its first LIMIT records, all where 0), with the dev split's first LIMIT for early stopping, for at
// most EPOCHS epochs. Prints one JSON line per epoch (as the reference script does) and one with the peak RSS.
// Usage: node bilstm-task.js DATA TASK LIMIT EPOCHS [THREADS]
import { trainBilstm } from '../dist/baselines/bilstm.js';
import { getTask, loadSplit } from '../dist/index.js';

const [dataDir, name, limitArg = '0', epochsArg = '50', threadsArg = '2'] = process.argv.slice(2);
const limit = Number(limitArg) || undefined;
const task = getTask(name);
const cut = (rows) => (limit ? rows.slice(0, limit) : rows);
const train = cut(await loadSplit(task, 'train', { dataDir }));
const dev = cut(await loadSplit(task, 'dev', { dataDir }));
// CPU seconds of each epoch (user + system), read when its progress line comes: on a shared machine the wall time
// depends on the neighbours, the CPU time much less.
const cpu = [];
let mark = process.cpuUsage();
const model = trainBilstm(task, train, {
  seed: 0,
  dev,
  epochs: Number(epochsArg),
  threads: Number(threadsArg),
  progress: (l) => {
    if (/: epoch \d+\//.test(l)) {
      const u = process.cpuUsage(mark);
      cpu.push((u.user + u.system) / 1e6);
      mark = process.cpuUsage();
    }
    console.error(l);
  },
});
const saved = model.serialize();
const { history } = saved.meta;
for (const h of history)
  console.log(
    JSON.stringify({
      epoch: h.epoch,
      seconds: h.seconds,
      cpu_seconds: cpu[h.epoch - 1],
      train_loss: h.train_loss,
      dev_loss: h.dev_loss,
    }),
  );
console.log(
  JSON.stringify({
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
    epochs: history.length,
    vocab: saved.strings.vocabulary.length,
  }),
);
