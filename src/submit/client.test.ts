/** What `submit` sends of a path's kind (issue #45): a run's summary says it; without one, nothing is guessed. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMetadata } from '../server/submissions/metadata.js';
import { collectUpload } from './client.js';

const line = `${JSON.stringify({ pairID: 'p1', answer: 'да' })}\n`;

describe('collectUpload', () => {
  it('labels a plain predictions folder "unknown" unless --kind says what made it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-submit-kind-'));
    writeFileSync(join(dir, 'RuMedDaNet.jsonl'), line);
    const plain = collectUpload(dir, {});
    expect([plain.files.map((f) => f.name), plain.metadata]).toEqual([
      ['RuMedDaNet.jsonl'],
      { model: dir.split('/').at(-1), kind: 'unknown' },
    ]);
    // A leaderboard takes it as sent, and shows it so.
    expect(parseMetadata(plain.metadata, { tokenId: null, team: null, address: '127.0.0.1' }).kind).toBe(
      'unknown',
    );
    expect(collectUpload(dir, { kind: 'encoder' }).metadata.kind).toBe('encoder');
    // A zip, a single file: no summary either.
    expect(collectUpload(join(dir, 'RuMedDaNet.jsonl'), {}).metadata).toEqual({
      model: 'RuMedDaNet',
      kind: 'unknown',
    });
  });
});
