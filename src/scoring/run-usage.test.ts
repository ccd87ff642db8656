import { describe, expect, it } from 'vitest';
import type { LlmDetails } from './run-log.js';
import { parseRunUsage, runUsageOf } from './run-usage.js';

const details = (over: Partial<LlmDetails>): LlmDetails =>
  ({ mode: 'generate', tasks: {}, label_space: {}, skipped: {}, ...over }) as LlmDetails;

describe('run usage', () => {
  it('takes the tokens, requests, cost and batch from a summary, and nothing it did not report', () => {
    expect(
      runUsageOf(
        details({
          usage: { prompt_tokens: 1200, completion_tokens: 300, reasoning_tokens: 250 },
          requests: { total: 12, sent_this_run: 12, wall_s: 1, throughput_rps: 12 },
          cost: 0.0123,
          batch: { provider: 'openai', batches: ['batch_1'], discount: 0.5 },
        }),
      ),
    ).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 300,
      reasoning_tokens: 250,
      requests: 12,
      cost_usd: 0.0123,
      batch: true,
    });
    // No cached or reasoning counts claimed where the replies gave none; no cost where the run had no prices.
    expect(runUsageOf(details({ usage: { prompt_tokens: 5, completion_tokens: 1 } }))).toEqual({
      prompt_tokens: 5,
      completion_tokens: 1,
    });
    // A server that reported no tokens: nothing to send.
    expect(runUsageOf(details({ usage: { prompt_tokens: 0, completion_tokens: 0 } }))).toBeUndefined();
    expect(runUsageOf(details({}))).toBeUndefined();
  });

  it('reads what an upload says and names what is wrong', () => {
    expect(parseRunUsage('{"prompt_tokens":10,"completion_tokens":2,"cost_usd":0.5}')).toEqual({
      usage: { prompt_tokens: 10, completion_tokens: 2, cost_usd: 0.5 },
    });
    const problems = (text: string) =>
      'problems' in parseRunUsage(text) ? parseRunUsage(text) : { problems: [] };
    expect(problems('{')).toEqual({ problems: ['not JSON'] });
    expect(problems('[]')).toEqual({ problems: [expect.stringContaining('object')] });
    expect(problems('{"prompt_tokens":-1,"completion_tokens":0}')).toEqual({
      problems: [expect.stringMatching(/^prompt_tokens: /)],
    });
    expect(problems('{"prompt_tokens":1,"completion_tokens":1,"cost_usd":Infinity}')).toEqual({
      problems: ['not JSON'],
    });
    expect(problems('{"prompt_tokens":1,"completion_tokens":1,"cost_usd":1e300}')).toEqual({
      problems: [expect.stringMatching(/^cost_usd: /)],
    });
    expect(problems('{"prompt_tokens":1,"completion_tokens":1,"cached_prompt_tokens":2}')).toEqual({
      problems: ['cached_prompt_tokens: more than prompt_tokens'],
    });
    expect(problems('{"prompt_tokens":1,"completion_tokens":1,"note":"<b>"}')).toEqual({
      problems: [expect.stringContaining('note')],
    });
  });
});
