/** What an encoder reads of a task record (kept apart from the tokenizer, so that importing it loads nothing heavy). */
import type { TaskDefinition, TaskRecord } from '../tasks/types.js';

export type TextInput = string | readonly [string, string];

/** A text task's input: one field as a text, two as a pair (context + question, premise + hypothesis), in order. */
export function taskInput(task: TaskDefinition, record: TaskRecord): TextInput {
  const fields = task.inputFields.map((f) => String(record.raw[f] ?? ''));
  if (fields.length === 1) return fields[0] as string;
  if (fields.length === 2) return [fields[0] as string, fields[1] as string];
  throw new Error(`${task.name} has ${fields.length} input fields; an encoder takes one text or a pair`);
}
