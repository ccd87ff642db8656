import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_DIR, NO_DATA_REASON } from '../../test/helpers/data.js';
import { readFieldStrings } from './field-scan.js';
import { readJsonlLines } from './jsonl.js';
import { TextEncodingError } from './text.js';

/** What parsing every line whole gives: the reference the scan must agree with. */
async function parsedWhole(file: string, field: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const line of await readJsonlLines(file)) {
    const v = 'value' in line ? (line.value as Record<string, unknown> | null)?.[field] : undefined;
    if (typeof v === 'string') out.add(v);
  }
  return out;
}

function fileWith(content: string | Buffer): string {
  const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-scan-')), 'train.jsonl');
  writeFileSync(file, content);
  return file;
}

describe('readFieldStrings', () => {
  it('agrees with parsing each line whole, on lines made to mislead a scan', async () => {
    const lines = [
      '{"idx": "1", "code": "A01"}',
      '{ "code" : "B02" , "idx": "2" }',
      '{"idx": "3", "symptoms": "\\"code\\": \\"Z99\\"", "code": "C03"}', // the key inside a string first
      '{"idx": "4", "symptoms": "{, \\"code\\": \\"Z98\\"}"}', // only inside a string: no label
      '{"idx": "5", "nested": {"code": "Z97"}}', // nested: not the top-level field
      '{"idx": "6", "nested": {"code": "Z96"}, "code": "D04"}',
      '{"idx": "7", "code": "Z95", "code": "E05"}', // twice: JSON.parse keeps the last
      '{"idx": "8", "\\u0063ode": "F06"}', // the key written with an escape
      '{"idx": "9", "code": "G\\u0030\\"7"}', // escapes in the value
      '{"idx": "10", "code": 11}', // not a string: no label
      '{"idx": "11", "code": null}',
      '{"idx": "12", "code": "H08"', // not JSON: no label
      '',
      '   ',
      '["code", "Z94"]',
      '{"idx": "13", "code": "Кириллица"}\r',
      '{"idx": "14", "code":"I09"}',
    ];
    const file = fileWith(`\uFEFF${lines.join('\n')}`);
    const scanned = await readFieldStrings(file, 'code');
    expect(scanned).toEqual(await parsedWhole(file, 'code'));
    expect([...scanned].sort()).toEqual(
      ['A01', 'B02', 'C03', 'D04', 'E05', 'F06', 'G0"7', 'I09', 'Кириллица'].sort(),
    );
  });

  it('reads lines across chunk boundaries, and refuses bytes that are not UTF-8 once', async () => {
    const many = Array.from({ length: 40_000 }, (_, i) =>
      JSON.stringify({ idx: String(i), text: 'ж'.repeat(i % 50), code: `L${i % 97}` }),
    );
    const file = fileWith(`${many.join('\n')}\n`);
    const scanned = await readFieldStrings(file, 'code');
    expect(scanned.size).toBe(97);
    expect(scanned).toEqual(await parsedWhole(file, 'code'));
    const cp1251 = fileWith(
      Buffer.from([...Buffer.from('{"code": "'), 0xc0, 0xe1, 0xe2, ...Buffer.from('"}\n')]),
    );
    const error = await readFieldStrings(cp1251, 'code').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TextEncodingError);
    expect((error as Error).message).toContain('Windows-1251');
  });

  it.skipIf(!DATA_DIR)(
    `gives the train files' labels exactly (${DATA_DIR ? 'data found' : NO_DATA_REASON})`,
    async () => {
      for (const task of ['RuMedTop3', 'RuMedSymptomRec']) {
        const file = join(DATA_DIR as string, task, 'train_v1.jsonl');
        const scanned = await readFieldStrings(file, 'code');
        expect(scanned.size).toBeGreaterThan(50);
        expect(scanned).toEqual(await parsedWhole(file, 'code'));
      }
    },
  );
});
