/**
 * The Russian report is Russian (docs/reports.md: `--lang ru`): a report of a naive baseline run on every task and an
 * LLM run on the five public tasks, with the paper's rows, the ranking, the paired comparison, the charts and their
 * tables, the LLM sections and the provenance, has no Latin-script word outside <code>, addresses and an allow-list
 * of names, and writes dates and counts as the Russian locale does (Intl). So is a report of a run that shows the
 * parsers' reasons and notes, validation lines and the whole trust section (formulations, perturbations, repeats,
 * contamination probes), on fixture data the test writes.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
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

describe('the Russian report of a run with parser reasons, validation lines and a trust section', () => {
  const servers: FakeOpenAI[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it('says them in Russian: no English word outside code, ids and addresses', async () => {
    const data = fixtureDataDir();
    // Replies of every kind a parser has words for: a yes or no by the prompt's hash; "не знаю" (no answer), "да или
    // нет" (two offered), an empty reply and one the token limit cut off; RuMedTop3 a Cyrillic С and a subcode.
    const reply = (body: ChatRequestBody) => {
      const last = body.messages.at(-1)?.content ?? '';
      const h = createHash('sha256')
        .update(`${last}${body.seed ?? ''}`)
        .digest()[0] as number;
      if (last.includes('МКБ')) return 'Ответ: С50.1, A10';
      if (h % 9 === 0) return 'Не знаю.';
      if (h % 9 === 1) return 'Ответ: да или нет';
      if (h % 9 === 2) return { content: '', finishReason: 'length' as const };
      if (h % 9 === 3) return { content: 'Ответ: мож', finishReason: 'length' as const };
      return `Ответ: ${h % 2 ? 'да' : 'нет'}`;
    };
    const server = await startFakeOpenAI({ reply });
    servers.push(server);
    const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-report-ru-trust-'));
    const run = join(tmp, 'run');
    await rumedbenchOk(
      ...['llm', '--base-url', server.url, '--model', 'fake', '--data', data, '--no-progress'],
      ...['--tasks', 'RuMedDaNet,RuMedTop3', '--limit', '30', '--bootstrap', '0', '--out', run],
      ...['--prompts', 'p1,p2', '--perturb', 'yo,case', '--repeats', '3'],
    );
    await rumedbenchOk(
      ...['contamination', '--base-url', server.url, '--model', 'fake', '--data', data],
      ...['--tasks', 'RuMedDaNet', '--probes', 'order,guided', '--out', run, '--json'],
    );
    // A predictions folder whose only file answers an item the split does not hold and leaves the others out.
    const broken = join(tmp, 'broken');
    mkdirSync(broken);
    writeFileSync(join(broken, 'RuMedDaNet.jsonl'), '{"pairID": "not-an-item", "prediction": "да"}\n');
    const out = join(tmp, 'report.html');
    // The broken file's errors make the command exit 1; the report is written all the same, its lines listed.
    const made = await rumedbench(
      ...['report', run, broken, '--name', 'fake,broken', '--data', data, '--lang', 'ru', '--out', out],
    );
    expect([made.code, made.stderr]).toEqual([1, expect.stringContaining('wrote')]);
    const html = readFileSync(out, 'utf8');
    const doc = parseHtml(html);
    const trust = byId(doc, 'trust');
    expect(
      [
        ['trust', trust],
        ['issues', byId(doc, 'issues')],
      ]
        .filter(([, e]) => !e)
        .map(([id]) => id),
    ).toEqual([]);
    const trustText = textOf(trust as Element);
    // Each part of the trust section, the probes' verdicts in Russian; the samples' reasons and notes too.
    expect(
      [
        'Формулировки промпта',
        'Искажения',
        'Повторы',
        'Проверки на утечку тестов',
        'порядок',
        'подсказка',
      ].filter((w) => !trustText.includes(w)),
    ).toEqual([]);
    expect(trustText).toMatch(/признаков нет|есть признаки утечки/);
    const body = textOf(elements(doc, (e) => e.tagName === 'body')[0] as Element);
    expect(
      [
        'в ответе нет «да» или «нет» (или синонима)',
        'неоднозначно: ответ предлагает на выбор да и нет',
        'пусто: в ответе нет текста',
        'обрезан: ответ оборвался на лимите токенов',
        'кириллическая буква С прочитана как латинская C',
        'такого примера нет в наборе',
        'нет предсказания для примера набора',
      ].filter((w) => !body.includes(w)),
    ).toEqual([]);
    const allowed = new Set([...ALLOWED, 'fake', 'broken', 'rumedbench', 'llm', 'sha256', 'p95']);
    const words = latinWords(html.replace(/<pre>[\s\S]*?<\/pre>/g, ' '), allowed, '<body').filter(
      (w) => !/^[A-Z]\d\d(?:\.\d+)?$/.test(w),
    );
    expect(words).toEqual([]);
  });
});
