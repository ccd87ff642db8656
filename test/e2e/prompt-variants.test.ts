/**
 * `llm --prompts all` on fixture data against a loopback server whose answers depend on the wording it is asked in:
 * each formulation a run folder of its own, its instruction in its prompts and its id and version in its manifest;
 * per task the scores, their mean, sd and range, and best − worst on the same items, as computed by hand.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getTask } from '../../src/tasks/registry.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { type ChatRequestBody, useFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
/** "Одним словом" makes it say yes to everything; otherwise a yes or no from a hash of the whole prompt. */
const reply = (body: ChatRequestBody) => {
  const last = body.messages.at(-1)?.content ?? '';
  if (last.includes('одним словом')) return 'Ответ: да';
  return `Ответ: ${(createHash('sha256').update(last).digest()[0] as number) % 2 ? 'да' : 'нет'}`;
};

describe('llm --prompts (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({ reply });

  it('runs each formulation beside the run and gives mean, sd, range and best − worst', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-prompts-')), 'run');
    const r = await rumedbenchOk(
      ...['llm', '--base-url', server().url, '--model', 'fake', '--data', DATA, '--tasks', 'RuMedDaNet'],
      ...['--limit', '30', '--bootstrap', '200', '--prompts', 'all', '--out', out],
    );
    expect(r.stdout).toMatch(/RuMedDaNet\s+p1 \d+\.\d\d {2}p2/);
    const v = JSON.parse(readFileSync(join(out, 'prompt-variants.json'), 'utf8'));
    expect(v.variants).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    const t = v.tasks.RuMedDaNet;
    const dirOf = (id: string) => (id === 'p1' ? out : join(out, 'prompts', id));
    const scores = v.variants.map((id: string) => {
      const s = JSON.parse(readFileSync(join(dirOf(id), 'summary.json'), 'utf8'));
      const m = JSON.parse(readFileSync(join(dirOf(id), 'manifest.json'), 'utf8'));
      expect([id, m.prompt_variant, m.prompt_versions.RuMedDaNet]).toEqual([
        id,
        id === 'p1' ? null : id,
        getTask('RuMedDaNet').prompt.variants.find((x) => x.id === id)?.version,
      ]);
      const asked = JSON.parse(
        readFileSync(join(dirOf(id), 'samples.jsonl'), 'utf8').split('\n')[0] as string,
      );
      const instruction = getTask('RuMedDaNet')
        .prompt.variants.find((x) => x.id === id)
        ?.instruction({}) as string;
      expect(asked.messages.at(-1).content.startsWith(instruction)).toBe(true);
      expect(t.scores[id].score).toBe(s.tasks.RuMedDaNet.score);
      return s.tasks.RuMedDaNet.score as number;
    });
    const mean = scores.reduce((a: number, b: number) => a + b, 0) / 5;
    const sd = Math.sqrt(scores.reduce((a: number, b: number) => a + (b - mean) ** 2, 0) / 4);
    expect([t.mean, t.sd, t.min, t.max]).toEqual([mean, sd, Math.min(...scores), Math.max(...scores)]);
    expect(t.scores[t.best].score).toBe(t.max);
    expect(t.scores[t.worst].score).toBe(t.min);
    expect(t.best_vs_worst.delta).toBeCloseTo(t.max - t.min, 10);
    // The yes-to-everything wording scores the share of "да" in the gold: the fixture's half.
    expect(t.scores.p5.score).toBe(50);
    // The report of the run shows them in its trust section.
    await rumedbenchOk('report', out, '--data', DATA, '--out', join(out, 'report.html'));
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<h2>Is the score trustworthy?</h2>');
    expect(html).toContain('<h3>Prompt formulations</h3>');
    expect(html).toContain(`${t.mean.toFixed(2)} ± ${t.sd.toFixed(2)}`);
    expect(html).toContain(`${t.min.toFixed(2)}–${t.max.toFixed(2)}`);
    const bad = await rumedbench(
      'llm',
      '--base-url',
      server().url,
      '--model',
      'fake',
      '--data',
      DATA,
      '--prompts',
      'p9',
      '--out',
      join(out, 'x'),
    );
    expect([bad.code, bad.stderr]).toEqual([
      2,
      expect.stringContaining('--prompts: all, or ids among p1, p2, p3, p4, p5'),
    ]);
  });
});
