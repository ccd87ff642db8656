/**
 * The documentation cannot drift from the CLI: every code block marked ```sh runnable in the README, the docs and
 * CONTRIBUTING.md is run, in order, page by page, with bash in an empty folder, `rumedbench` on the PATH (the built
 * CLI), the fixture data as RUMEDBENCH_DATA and a loopback OpenAI-compatible server standing in for the
 * `http://localhost:8000/v1` the examples name. Every relative link of those pages must lead to a file that exists.
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, REPO_ROOT } from '../helpers/data.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The blocks of a page marked runnable, in order. */
function runnableBlocks(text: string): string[] {
  return [...text.matchAll(/^```sh runnable\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

const reply = (body: ChatRequestBody): string => {
  const last = body.messages.at(-1)?.content ?? '';
  if (/«да» или «нет»/.test(last)) return 'Ответ: да';
  if (/entailment|contradiction|neutral/.test(last)) return 'Ответ: neutral';
  return 'Ответ: 1';
};

let sharedDir: string | undefined;
/** The folder every page's examples run in, one after another. */
function shared(): string {
  if (sharedDir) return sharedDir;
  sharedDir = mkdtempSync(join(tmpdir(), 'rumedbench-docs-'));
  // `import … from 'rumedbench'` in an example resolves to this package.
  mkdirSync(join(sharedDir, 'node_modules'));
  symlinkSync(REPO_ROOT, join(sharedDir, 'node_modules', 'rumedbench'), 'dir');
  return sharedDir;
}

describe('documentation', () => {
  let server: FakeOpenAI;
  let bin: string;
  beforeAll(async () => {
    server = await startFakeOpenAI({ reply });
    bin = mkdtempSync(join(tmpdir(), 'rumedbench-docs-bin-'));
    writeFileSync(join(bin, 'rumedbench'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(bin, 'rumedbench'), 0o755);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('marks examples as runnable on the pages that promise one', () => {
    const withExamples = PAGES.filter(
      (p) => runnableBlocks(readFileSync(join(REPO_ROOT, p), 'utf8')).length > 0,
    );
    expect(withExamples).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/data.md',
        'docs/scoring.md',
        'docs/baselines.md',
        'docs/llm.md',
        'docs/trust.md',
        'docs/plans.md',
        'docs/reports.md',
        'docs/leaderboard.md',
        'docs/library.md',
        'docs/troubleshooting.md',
        'docs/adding-a-task.md',
      ]),
    );
  });

  for (const page of PAGES) {
    const blocks = runnableBlocks(readFileSync(join(REPO_ROOT, page), 'utf8'));
    if (blocks.length === 0) continue;
    it(`runs the examples of ${page}`, async () => {
      // One folder for every page, in the order a newcomer reads them (README first): a quick start that reuses
      // another's output folder fails here as it would for them.
      const dir = shared();
      for (const [i, block] of blocks.entries()) {
        const script = block.replaceAll('http://localhost:8000/v1', server.url);
        // Asynchronously: the loopback model server answers from this process.
        const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
          const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
            cwd: dir,
            env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, RUMEDBENCH_DATA: fixtureDataDir() },
          });
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => {
            stdout += d;
          });
          child.stderr.on('data', (d: Buffer) => {
            stderr += d;
          });
          const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
          child.on('close', (status) => {
            clearTimeout(timer);
            done({ status, stdout, stderr });
          });
        });
        expect(
          r.status,
          `${page}, block ${i + 1}:\n${block}\n--- stderr:\n${r.stderr}\n--- stdout:\n${r.stdout}`,
        ).toBe(0);
      }
    }, 240_000);
  }

  it('links only to files that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = readFileSync(join(REPO_ROOT, page), 'utf8');
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(resolve(dirname(join(REPO_ROOT, page)), target))) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
