// Part of `npm run bench:baselines`: the feature-based tasks in one process, as `rumedbench baseline tfidf` runs
// them. Prints the process's peak memory (worker threads included). Usage: node baselines-together.js DATA OUT TASK...
import { getTask, runBaseline } from '../dist/index.js';

const [dataDir, outDir, ...tasks] = process.argv.slice(2);
await runBaseline({ method: 'tfidf', tasks: tasks.map(getTask), dataDir, outDir, bootstrap: 0 });
console.log(JSON.stringify({ peak_mb: process.resourceUsage().maxRSS / 1024 }));
