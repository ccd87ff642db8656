// Writes the README's screenshots (docs/images/): a board with upstream's reference rows uploaded, and a report of
// three of them. Needs the data and reference predictions in ../shared (or RUMEDBENCH_DATA) and Debian's Chromium.
// Run after `npm run build`: node scripts/screenshots.js
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'bin', 'rumedbench.js');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const data = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const refs = join(shared, 'reference-predictions');
const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-shots-'));
const tasks = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'];

const server = spawn(
  process.execPath,
  [cli, 'serve', '--port', '0', '--db', join(tmp, 'b.sqlite'), '--data', data],
  {
    env: { ...process.env, RUMEDBENCH_ADMIN_TOKEN: 'screenshots-admin-Secret-4f7Kq9ZxL2mW8pR3' },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const url = await new Promise((r) => {
  let err = '';
  server.stderr.on('data', (d) => {
    err += d;
    const m = /leaderboard on (http:\/\/\S+)/.exec(err);
    if (m) r(m[1]);
  });
});
for (const [dir, model, kind] of [
  ['linear_models', 'TF-IDF + logistic regression (upstream)', 'feature-based'],
  ['bilstm', 'BiLSTM (upstream)', 'encoder'],
]) {
  const fd = new FormData();
  for (const t of tasks)
    fd.append('file', new Blob([readFileSync(join(refs, dir, `${t}.jsonl`))]), `${t}.jsonl`);
  fd.append('model', model);
  fd.append('kind', kind);
  await fetch(`${url}/api/submissions`, { method: 'POST', body: fd });
}
execFileSync(process.execPath, [
  cli,
  'report',
  join(refs, 'linear_models'),
  join(refs, 'bilstm'),
  '--name',
  'Feature-based,BiLSTM',
  '--reference',
  '--data',
  data,
  '--out',
  join(tmp, 'report.html'),
  '--quiet',
]);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox'],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 640 } });
await page.goto(url);
await page.screenshot({ path: join(root, 'docs', 'images', 'board.png') });
await page.goto(`file://${join(tmp, 'report.html')}`);
await page.screenshot({
  path: join(root, 'docs', 'images', 'report.png'),
  clip: { x: 0, y: 0, width: 1200, height: 900 },
});
await page.setViewportSize({ width: 1200, height: 900 });
await browser.close();
server.kill();
console.log('docs/images/board.png, docs/images/report.png');
