/**
 * The log-likelihood prompt of an item: the one place its wording is put together, read by `llm --mode loglik`
 * (src/llm/loglik.ts), by the lm-evaluation-harness export (src/data/lm-eval-export.ts) and by the check of an
 * lm-eval run's prompts against ours (src/scoring/lm-eval.ts), so the three can never drift apart.
 */
import type { TaskDefinition } from './types.js';

/** The context before the candidates: system prompt, instruction, worked examples, the item, and "Ответ:". */
export function loglikContext(task: TaskDefinition, item: string, shots = ''): string {
  const spec = task.prompt.loglik;
  if (!spec) throw new Error(`${task.name} is not scored by log-likelihood`);
  return `${task.prompt.system}\n\n${spec.instruction}\n\n${shots}${item}\nОтвет:`;
}
