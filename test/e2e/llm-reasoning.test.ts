/**
 * A reasoning model behind the OpenAI protocol: its reasoning kept apart from its answers, its reasoning and cached
 * tokens in the ledger, a reply cut off while reasoning counted as such, and the reasoning settings sent.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSplit } from '../../src/data/load.js';
import { getTask } from '../../src/tasks/registry.js';
import { rumedbenchOk } from '../helpers/cli.js';
import { type FakeOpenAI, type ReasoningReply, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { closedAfterEach, llmArgs, readJsonl } from '../helpers/llm-run.js';

const DATA = fixtureDataDir();
const track = closedAfterEach<FakeOpenAI>();

describe('llm with a reasoning model (fixture data)', () => {
  it('keeps reasoning apart from answers, counts its tokens, and names replies cut off while reasoning', async () => {
    const task = getTask('RuMedDaNet');
    const records = (await loadSplit(task, 'test', { dataDir: DATA })).slice(0, 8);
    const byItem = new Map(records.map((r, i) => [task.prompt.render(r.raw), { r, i }]));
    const wrong = (gold: string) => (gold === 'да' ? 'нет' : 'да');
    // Item by item: reasoning in `reasoning_content`, in `reasoning`, inline and opened by the template, then one
    // reply cut off while reasoning; every reasoning weighs the wrong answer in the answer's own words.
    const reply = (last: string): ReasoningReply => {
      const hit = byItem.get(last.slice(last.indexOf('\n\n') + 2));
      if (!hit) return { content: 'нет такого вопроса' };
      const gold = hit.r.gold as string;
      const musing = `Может быть, «Ответ: ${wrong(gold)}»? Проверим по тексту.`;
      const answer = `Ответ: ${gold}`;
      switch (hit.i % 4) {
        case 0:
          return { content: answer, reasoning: musing, cachedTokens: 8 };
        case 1:
          return { content: answer, reasoning: musing, reasoningField: 'reasoning' };
        case 2:
          return { content: `${musing}</think>\n\n${answer}` };
        default:
          return hit.i === 3
            ? { content: '', reasoning: musing, finishReason: 'length' }
            : { content: answer, reasoning: musing };
      }
    };
    const server = await startFakeOpenAI({
      reply: (body) => reply(body.messages[body.messages.length - 1]?.content ?? ''),
    });
    track(server);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-reasoning-'));
    const { stdout, stderr } = await rumedbenchOk(
      ...llmArgs(
        { url: server.url, out, data: DATA, tasks: 'RuMedDaNet', limit: 8, model: 'fake-r1' },
        ...['--reasoning-effort', 'high', '--thinking-budget', '256', '--json'],
      ),
    );
    // The settings reach the server: OpenAI's field, and the chat template's.
    expect(server.requests[0]?.body).toMatchObject({
      reasoning_effort: 'high',
      chat_template_kwargs: { thinking_budget: 256 },
    });
    const samples = readJsonl(join(out, 'samples.jsonl'));
    const byId = new Map(samples.map((s) => [s.id, s]));
    for (const [i, r] of records.entries()) {
      const s = byId.get(r.id);
      const musing = `Может быть, «Ответ: ${wrong(r.gold as string)}»? Проверим по тексту.`;
      if (i === 3) {
        // Cut off while reasoning: no answer, counted apart from unparsed answers, its reasoning kept.
        expect(s).toMatchObject({
          status: 'unparsed',
          flag: 'truncated_in_reasoning',
          reply: '',
          reasoning: musing,
        });
        continue;
      }
      // The answer read from the answer alone, whatever the reasoning said; the reasoning kept beside it.
      expect(s).toMatchObject({
        status: 'parsed',
        correct: true,
        reply: `Ответ: ${r.gold}`,
        reasoning: musing,
      });
    }
    const summary = JSON.parse(stdout);
    expect(summary.llm.tasks.RuMedDaNet.replies.truncated_in_reasoning).toBe(1);
    expect(stderr).toMatch(/RuMedDaNet: 1 of 8 replies .*raise --max-tokens/);
    // The ledger is what the server reported, summed: reasoning tokens from the six replies that counted them, the
    // cut-off one included (the two inline ones the server did not count, and they are not guessed); cached tokens
    // from two.
    const reported = samples.filter((s) => s.usage?.reasoning_tokens !== undefined);
    expect(reported).toHaveLength(6);
    const sum = (k: string) => samples.reduce((n, s) => n + (s.usage?.[k] ?? 0), 0);
    expect(summary.llm.usage).toMatchObject({
      prompt_tokens: sum('prompt_tokens'),
      completion_tokens: sum('completion_tokens'),
      reasoning_tokens: sum('reasoning_tokens'),
      cached_prompt_tokens: 16,
    });
    // What the fake server counts for a reasoning: a token per four characters.
    const counted = records
      .filter((_, i) => i % 4 !== 2)
      .map((r) =>
        Math.ceil(`Может быть, «Ответ: ${wrong(r.gold as string)}»? Проверим по тексту.`.length / 4),
      );
    expect(summary.llm.usage.reasoning_tokens).toBe(counted.reduce((a, b) => a + b, 0));
    expect(summary.llm.usage.tasks.RuMedDaNet).toEqual({
      prompt_tokens: sum('prompt_tokens'),
      completion_tokens: sum('completion_tokens'),
      reasoning_tokens: sum('reasoning_tokens'),
      cached_prompt_tokens: 16,
    });
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.spec).toMatchObject({ reasoning_effort: 'high', thinking_budget: 256 });
    expect(manifest.command).toContain('--reasoning-effort high --thinking-budget 256');
  });
});
