/**
 * The Russian report is Russian (docs/reports.md: `--lang ru`): a report of a naive baseline run on every task and an
 * LLM run on the five public tasks, with the paper's rows, the ranking, the paired comparison, the charts and their
 * tables, the LLM sections and the provenance, has no Latin-script word outside <code>, addresses and an allow-list
 * of names, and writes dates and counts as the Russian locale does (Intl).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import { byId, type Element, elements, parseHtml, textOf } from '../helpers/html.js';
import { ALLOWED, latinWords } from '../helpers/latin-words.js';
import { smallLlmRun } from '../helpers/llm-run.js';

const FIVE = 'RuMedTop3,RuMedSymptomRec,RuMedDaNet,RuMedNLI,RuMedNER';

describe.skipIf(!DATA_DIR)(`the Russian report (${DATA_DIR ? 'data found' : NO_DATA_REASON})`, () => {
  const servers: FakeOpenAI[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it('has no English word outside code, ids and addresses, and writes dates and counts the Russian way', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-report-ru-'));
    const naive = join(tmp, 'naive');
    await rumedbenchOk('baseline', 'naive', '--out', naive);
    const llm = await smallLlmRun('model-x', 5, {
      tasks: FIVE,
      extra: ['--price-prompt', '1', '--price-completion', '2'],
    });
    servers.push(llm.server);
    const out = join(tmp, 'report.html');
    await rumedbenchOk(
      'report',
      naive,
      llm.dir,
      '--name',
      'naive,model-x',
      '--reference',
      '--lang',
      'ru',
      '--out',
      out,
    );
    const html = readFileSync(out, 'utf8');
    const doc = parseHtml(html);

    // Every section a report of two systems draws is there, so that the words below are the whole report's.
    expect(
      ['summary', 'ranking', 'tasks', 'comparison', 'llm', 'baselines', 'provenance'].filter(
        (id) => !byId(doc, id),
      ),
    ).toEqual([]);

    // Names a report writes in Latin script besides the pages' ones: the systems, the program and its command,
    // diagnosis codes (ICD-10: RuMedTop3's labels), the hash's name, the latency quantile. A prompt and a reply
    // (<pre>) are the item's and the model's own text, quoted whole.
    const allowed = new Set([...ALLOWED, 'naive', 'model-x', 'rumedbench', 'llm', 'sha256', 'p95']);
    const words = latinWords(html.replace(/<pre>[\s\S]*?<\/pre>/g, ' '), allowed, '<body').filter(
      (w) => !/^[A-Z]\d\d(?:\.\d+)?$/.test(w),
    );
    expect(words).toEqual([]);

    // The date as Russian writes it (the ISO moment in <time datetime>), counts with a no-break space.
    const header = textOf(elements(doc, (e) => e.tagName === 'header')[0] as Element);
    expect(header).toMatch(/Создан \d{1,2} [а-я]+ 20\d\d г\. в \d\d:\d\d UTC/);
    const provenance = textOf(byId(doc, 'provenance') as Element);
    expect(provenance).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:/);
    expect(provenance).toContain('1\u00a0000 повторов, зерно 0');
  });
});
