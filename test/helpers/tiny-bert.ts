/** A generated random BERT folder in a fresh temporary folder (see src/encoders/synthetic.ts). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SyntheticBertOptions, writeSyntheticBert } from '../../src/encoders/synthetic.js';

export function tinyBert(options: SyntheticBertOptions = {}): string {
  return writeSyntheticBert(join(mkdtempSync(join(tmpdir(), 'rumedbench-bert-')), 'model'), options);
}
