/**
 * Reading a definition file (issue #45): as every user file is read (strict UTF-8, one refusal naming the encoding),
 * a data file given in its place refused once, and the keys for people optional.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RumedbenchError } from '../errors.js';
import { loadTaskFile } from './definition-file.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-deffile-'));

const DEFINITION = `schema: rumedbench.task/1
name: RuHospQA
description: Нужна ли госпитализация пациенту?
licence: CC BY 4.0
splits: [test]
id: qid
inputs: [question]
gold: answer
type: classification
labels: [да, нет]
metrics: [accuracy]
`;

/** Windows-1251 bytes of a text (what Notepad on a Russian Windows saves): А–я at 0xC0–0xFF, Ё/ё at 0xA8/0xB8. */
function cp1251(text: string): Buffer {
  return Buffer.from(
    [...text].map((c) => {
      const code = c.codePointAt(0) as number;
      if (code < 0x80) return code;
      if (code >= 0x410 && code <= 0x44f) return code - 0x410 + 0xc0;
      if (code === 0x401) return 0xa8;
      if (code === 0x451) return 0xb8;
      throw new Error(`no cp1251 byte for ${c}`);
    }),
  );
}

/** What loading throws: its code and message. */
function refusal(file: string): { code: string; message: string } | undefined {
  try {
    loadTaskFile(file);
    return undefined;
  } catch (e) {
    if (!(e instanceof RumedbenchError)) throw e;
    return { code: e.code, message: e.message };
  }
}

describe('loadTaskFile', () => {
  it('refuses a definition in Windows-1251 once, naming the encoding, instead of reading U+FFFD into its prompts', () => {
    const file = join(tmp(), 'RuHospQA.yaml');
    writeFileSync(file, cp1251(DEFINITION));
    expect(refusal(file)).toEqual({
      code: 'BAD_ENCODING',
      message: `${file}: the file is not UTF-8: it looks like Windows-1251 (cp1251); save it as UTF-8 (iconv -f cp1251 -t utf-8)`,
    });
    // The same text in UTF-8 (with a byte-order mark, as Notepad writes it) is read, its Russian intact.
    writeFileSync(file, `\uFEFF${DEFINITION}`);
    const task = loadTaskFile(file);
    expect([task.name, task.guidelines]).toEqual(['RuHospQA', 'Нужна ли госпитализация пациенту?']);
  });
});

describe('loadTaskFile: what is not a definition', () => {
  it('refuses a data file given as a definition once, saying what it is, not with a YAML error per line', () => {
    const dir = tmp();
    const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ qid: `q${i}`, question: 'Жалобы?' }));
    const said = (file: string) => ({
      code: 'TASK_INVALID',
      message: `${file}: this is a data file (JSONL: one record per line), not a task definition; a definition (.yaml, .yml or .json) names it under files:`,
    });
    const jsonl = join(dir, 'test.jsonl');
    writeFileSync(jsonl, `${rows.join('\n')}\n`);
    expect(refusal(jsonl)).toEqual(said(jsonl));
    // The same lines under a definition's extension: known by what they hold.
    const json = join(dir, 'test.json');
    writeFileSync(json, `${rows.join('\n')}\n`);
    expect(refusal(json)).toEqual(said(json));
  });

  it('reads a definition without licence (for people, as title and citation are)', () => {
    const file = join(tmp(), 'RuHospQA.yaml');
    writeFileSync(file, DEFINITION.replace('licence: CC BY 4.0\n', ''));
    expect(loadTaskFile(file).name).toBe('RuHospQA');
  });
});
