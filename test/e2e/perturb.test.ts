/**
 * `llm --perturb` on fixture data against loopback servers: each perturbation a run folder of its own beside the
 * clean run, compared item by item with it (perturbations.json); typos at the rate asked, seeded; shuffled options
 * read back in the original numbering, so a model that picks an option by its text answers the same shuffled or not.
 */

import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { f2, signed } from '../../src/report/format.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { type ChatRequestBody, useFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

/** Yes/no by a hash of the whole prompt; for an exam item, the number of the option that reads right. */
const reply = (body: ChatRequestBody) => {
  const last = body.messages.at(-1)?.content ?? '';
  const right = /^(\d)[.)]\s*(12–20 в минуту|адреналин)/m.exec(last);
  if (right) return `Ответ: ${right[1]}`;
  const h = createHash('sha256').update(last).digest()[0] as number;
  return `Ответ: ${h % 2 ? 'да' : 'нет'}`;
};

describe('llm --perturb (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({ reply });
  const llm = (out: string, ...more: string[]) => [
    ...[
      'llm',
      '--base-url',
      server().url,
      '--model',
      'fake',
      '--data',
      DATA,
      '--bootstrap',
      '200',
      '--out',
      out,
    ],
    ...more,
  ];

  it('runs each perturbation beside the clean run and compares them item by item', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-perturb-')), 'run');
    const r = await rumedbenchOk(
      ...llm(out, '--tasks', 'RuMedDaNet', '--limit', '30', '--perturb', 'typos=0.1,yo,case'),
    );
    expect(r.stdout).toMatch(/typos=0\.1\s+RuMedDaNet\s+30/);
    const p = JSON.parse(readFileSync(join(out, 'perturbations.json'), 'utf8'));
    expect(Object.keys(p.variants)).toEqual(['typos=0.1', 'yo', 'case']);
    const clean = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    for (const [name, dir] of [
      ['typos=0.1', 'typos-0.1'],
      ['yo', 'yo'],
      ['case', 'case'],
    ] as const) {
      const v = p.variants[name].tasks.RuMedDaNet;
      const perturbed = JSON.parse(readFileSync(join(out, 'perturbed', dir, 'summary.json'), 'utf8'));
      expect([name, v.n, v.clean, v.perturbed]).toEqual([
        name,
        30,
        clean.tasks.RuMedDaNet.score,
        perturbed.tasks.RuMedDaNet.score,
      ]);
      expect(v.delta.delta).toBeCloseTo(v.perturbed - v.clean, 10);
      expect(v.delta.ci[0]).toBeLessThanOrEqual(v.delta.delta);
    }
    // The report of the run shows each variant's delta from clean in its trust section.
    await rumedbenchOk('report', out, '--data', DATA, '--out', join(out, 'report.html'));
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<h3>Perturbations</h3>');
    const yo = p.variants.yo.tasks.RuMedDaNet;
    expect(html).toContain(`${signed(yo.delta.delta)} [${f2(yo.delta.ci[0])}, ${f2(yo.delta.ci[1])}]`);
    // Typos: about the rate asked, of the letters of the item's text (the instruction is left alone).
    const item = (dir: string) =>
      lines(readFileSync(join(dir, 'samples.jsonl'), 'utf8')).map((s) => {
        const text = s.messages.at(-1).content as string;
        return text.slice(text.indexOf('Текст:'));
      });
    const [a, b] = [item(out), item(join(out, 'perturbed', 'typos-0.1'))];
    let letters = 0;
    let changed = 0;
    a.forEach((t, i) => {
      const u = b[i] as string;
      expect(u.length).toBe(t.length);
      for (let k = 0; k < t.length; k++)
        if (/[а-яё]/i.test(t[k] as string)) {
          letters++;
          if (t[k] !== u[k]) changed++;
        }
    });
    expect(changed / letters).toBeGreaterThan(0.07);
    expect(changed / letters).toBeLessThan(0.13);
    // Case: the item's fields in lower case (the prompt's own labels, "Текст:" and "Вопрос:", stay as they are).
    const fields = (t: string) => t.replace('Текст:', '').replace('Вопрос:', '');
    expect(
      item(join(out, 'perturbed', 'case')).every((t) => fields(t) === fields(t).toLocaleLowerCase('ru')),
    ).toBe(true);
    expect(item(out).every((t) => fields(t) === fields(t).toLocaleLowerCase('ru'))).toBe(false);
    // Seeded: the same perturbation again gives the same prompts.
    const again = join(mkdtempSync(join(tmpdir(), 'rumedbench-perturb-')), 'run');
    await rumedbenchOk(...llm(again, '--tasks', 'RuMedDaNet', '--limit', '30', '--perturb', 'typos=0.1'));
    expect(item(join(again, 'perturbed', 'typos-0.1'))).toEqual(b);
  });

  it('shuffles the exam options and reads the answer back in the original numbering', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-perturb-')), 'run');
    await rumedbenchOk(
      ...llm(out, '--tasks', 'RuMedTest', '--split', 'private_test', '--perturb', 'shuffle-options'),
    );
    const answers = (zip: string) =>
      lines(Buffer.from(unzipSync(readFileSync(zip))['RuMedTest.jsonl'] as Uint8Array).toString('utf8')).map(
        (x) => [x.idx, x.answer],
      );
    const clean = answers(join(out, 'submission.zip'));
    expect(clean.map(([, a]) => a).sort()).toEqual([...Array(30).fill('1'), ...Array(30).fill('2')].sort());
    expect(answers(join(out, 'perturbed', 'shuffle-options', 'submission.zip'))).toEqual(clean);
    const shown = lines(readFileSync(join(out, 'perturbed', 'shuffle-options', 'samples.jsonl'), 'utf8')).map(
      (s) => s.reply,
    );
    expect(new Set(shown).size).toBeGreaterThan(2);
    const bad = await rumedbench(...llm(join(out, 'x'), '--perturb', 'typos=2'));
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--perturb typos=RATE')]);
  });
});
