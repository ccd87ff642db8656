/**
 * The Latin-script words of a Russian page or report that are not names: what the tests of Russian pages
 * (src/server/russian-pages.test.ts) and of the Russian report (test/e2e/report-russian.test.ts) look for.
 */
import { TASKS } from '../../src/tasks/registry.js';

/** Names a Russian page may write in Latin script: tasks, the paper's rows and authors, formats, units, mechanisms. */
export const ALLOWED: ReadonlySet<string> = new Set([
  ...TASKS.map((t) => t.name),
  'RuMedBench',
  'MedBench',
  'RuMedOverall',
  'ECG2Pathology',
  'RuPoolBERT',
  'RuBERT',
  'BiLSTM',
  'TF-IDF',
  'BERT',
  'Blinov',
  'et',
  'al',
  'Blum',
  'Hardt',
  // The contamination probes' sources (the report's trust section) and one of their statistics.
  'Oren',
  'Golchin',
  'Surdeanu',
  'Deng',
  'ROUGE-L',
  'Ladder',
  'LLM',
  'CSV',
  'JSON',
  'API',
  'USD',
  'jsonl',
  'JSONL',
  'Enter',
  'seqeval',
  'zip',
  'Task',
  'McNemar',
  'PostgreSQL',
  'F1',
  'UTC',
  'medbench',
  'ru',
]);

/**
 * The Latin-script words of a page's visible text that are not allowed names, each once, in order. Code (`<code>`:
 * commands, ids, a log's raw details), addresses, paths and flags are not words of a language, and are left out.
 */
export function latinWords(
  html: string,
  allowed: ReadonlySet<string>,
  from: '<main' | '<body' = '<main',
): string[] {
  const end = from === '<main' ? '</main>' : '</body>';
  const body = html.slice(html.indexOf(from), html.lastIndexOf(end));
  const text = (body || html)
    .replace(/<(script|style|code)\b[\s\S]*?<\/\1>/g, ' ')
    .replace(/https?:\/\/[^\s<]+/g, ' ')
    // A file's path and a command's flag are addresses and code too, where a sentence names them.
    .replace(/(^|[\s(«])\/[^\s<»),;]+/g, '$1 ')
    .replace(/(^|[\s(«])--[a-z][\w-]*/g, '$1 ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&[a-z#0-9]+;/g, ' ');
  const out = new Set<string>();
  for (const m of text.matchAll(/[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9]|[A-Za-z]/g)) {
    const w = m[0];
    if (allowed.has(w) || w.length === 1) continue;
    out.add(w);
  }
  return [...out];
}
