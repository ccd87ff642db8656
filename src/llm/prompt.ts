/**
 * Chat messages for one item: the task's system prompt and instruction (from its definition in src/tasks/), k
 * worked examples from train, then the item. Examples are drawn once per run with the seed, balanced over labels
 * for classification tasks, and never include the item being asked.
 */

import { createHash } from 'node:crypto';
import { z } from 'zod';
import { readUtf8File } from '../data/text.js';
import { UsageError } from '../errors.js';
import { createRng } from '../metrics/rng.js';
import { promptTemplateSchema } from '../scoring/prompt-template.js';
import type { PromptContext, TaskDefinition, TaskRecord } from '../tasks/types.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A user's override of the wording, per task: any of system, instruction, and an item template. */
export interface PromptTemplate {
  system?: string;
  instruction?: string;
  /** `{{field}}` is replaced by the record's field (arrays joined with spaces). */
  item?: string;
}

const templateFile = z.record(z.string(), promptTemplateSchema);

/** Reads a JSON file `{ "<Task>": { "system"?, "instruction"?, "item"? } }`. */
export function readTemplates(file: string): Record<string, PromptTemplate> {
  let value: unknown;
  try {
    value = JSON.parse(readUtf8File(file));
  } catch (e) {
    throw new UsageError(`${file}: not a readable JSON file (${(e as Error).message})`);
  }
  const parsed = templateFile.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(
      `${file}: ${issue?.path.join('.') || 'top level'}: ${issue?.message}; expected { "<Task>": { "system"?, "instruction"?, "item"? } }`,
    );
  }
  return parsed.data as Record<string, PromptTemplate>;
}

interface PromptOptions {
  shots: number;
  seed: number;
  /** Replaces the task's system prompt; an empty string sends none. */
  system?: string;
  template?: PromptTemplate;
  context: PromptContext;
  /** One of the task's formulations of the instruction (`--prompts`), by id. */
  variant?: string;
}

/** The k examples for a run: seeded, balanced over labels for classification, one more drawn as a spare. */
export function drawExamples(
  task: TaskDefinition,
  train: readonly TaskRecord[],
  k: number,
  seed: number,
): TaskRecord[] {
  if (k === 0 || train.length === 0) return [];
  const rng = createRng(seed);
  const shuffled = [...train];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [shuffled[i], shuffled[j]] = [shuffled[j] as TaskRecord, shuffled[i] as TaskRecord];
  }
  if (task.kind !== 'classification') return shuffled.slice(0, k + 1);
  // Round-robin over labels, in the task's label order, so that k examples cover the labels evenly.
  const byLabel = new Map(task.labels.map((l) => [l, shuffled.filter((r) => r.gold === l)]));
  const out: TaskRecord[] = [];
  for (let round = 0; out.length < k + 1 && round < train.length; round++) {
    for (const l of task.labels) {
      const r = byLabel.get(l)?.[round];
      if (r && out.length < k + 1) out.push(r);
    }
  }
  return out;
}

function fill(template: string, raw: Readonly<Record<string, unknown>>): string {
  return template.replace(/\{\{\s*([^}\s]+)\s*\}\}/g, (_, f: string) => {
    const v = raw[f];
    return Array.isArray(v) ? v.join(' ') : String(v ?? '');
  });
}

/** The messages for one item. */
export function buildMessages(
  task: TaskDefinition,
  record: TaskRecord,
  examples: readonly TaskRecord[],
  options: PromptOptions,
): ChatMessage[] {
  const p = task.prompt;
  const system = options.system ?? options.template?.system ?? p.system;
  const variant =
    options.variant === undefined ? undefined : p.variants.find((v) => v.id === options.variant);
  const instruction = options.template?.instruction ?? (variant ?? p).instruction(options.context);
  const render = (raw: Readonly<Record<string, unknown>>) =>
    options.template?.item ? fill(options.template.item, raw) : p.render(raw);
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  const shots = examples.filter((e) => e.id !== record.id).slice(0, options.shots);
  shots.forEach((e, i) => {
    messages.push({ role: 'user', content: i === 0 ? `${instruction}\n\n${render(e.raw)}` : render(e.raw) });
    messages.push({ role: 'assistant', content: p.answer(e.gold as string | string[], e.raw) });
  });
  messages.push({
    role: 'user',
    content: shots.length === 0 ? `${instruction}\n\n${render(record.raw)}` : render(record.raw),
  });
  return messages;
}

/** A short stable key of a request (messages and sampling): what the run journal and the cache key on. */
export function requestKey(
  messages: readonly ChatMessage[],
  params: Readonly<Record<string, unknown>>,
): string {
  return createHash('sha256').update(JSON.stringify({ messages, params })).digest('hex').slice(0, 32);
}

/**
 * `all` or a list of ids, checked against the tasks' formulations. Here, not in ./prompt-variants.ts (which runs
 * and compares them), so that reading the flag does not load the comparison and scoring modules (#64).
 */
export function parsePromptVariants(spec: string, tasks: readonly TaskDefinition[]): string[] {
  const known = [...new Set(tasks.flatMap((t) => t.prompt.variants.map((v) => v.id)))];
  const ids = spec.trim() === 'all' ? known : spec.split(',').map((x) => x.trim());
  const unknown = ids.filter((id) => !known.includes(id));
  if (unknown.length > 0 || ids.length === 0)
    throw new UsageError(`--prompts: all, or ids among ${known.join(', ')}; got "${spec}"`);
  return ids;
}
