/** The embedded engine end to end: a tiny random GGUF written by the test, every task, through node-llama-cpp. */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbenchOk } from '../helpers/cli.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import { writeTinyGguf } from '../helpers/tiny-gguf.js';

describe.skipIf(!DATA_DIR)(`llm --provider llama (${DATA_DIR ? 'data found' : NO_DATA_REASON})`, () => {
  it('runs a few samples of every task through a local GGUF model: plumbing, not accuracy', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-llama-'));
    const gguf = join(dir, 'tiny.gguf');
    writeTinyGguf(gguf);
    const out = join(dir, 'run');
    const { stdout } = await rumedbenchOk(
      ...[
        'llm',
        '--provider',
        'llama',
        '--model',
        gguf,
        '--context-size',
        '2048',
        '--split',
        'both',
        '--limit',
        '2',
      ],
      ...['--max-tokens', '24', '--out', out, '--bootstrap', '0', '--no-progress', '--json'],
    );
    const summary = JSON.parse(stdout);
    const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(samples).toHaveLength(2 * 8);
    // Every request got a reply; a random model's replies are mostly unreadable, and are counted so.
    expect(samples.every((s) => s.status !== 'failed' && typeof s.reply === 'string')).toBe(true);
    expect(Object.keys(summary.llm.tasks).sort()).toEqual([
      'RuMedDaNet',
      'RuMedNER',
      'RuMedNLI',
      'RuMedSymptomRec',
      'RuMedTest',
      'RuMedTop3',
    ]);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ provider: 'llama', model: 'tiny.gguf', context_size: 2048 });
    expect(manifest.gguf_sha256).toBe(createHash('sha256').update(readFileSync(gguf)).digest('hex'));
    // RuMedNER decodes under its JSON schema: whatever the model says starts as a JSON list.
    for (const s of samples.filter((x) => x.task === 'RuMedNER'))
      expect(s.reply.trimStart().startsWith('[')).toBe(true);
  });
});
