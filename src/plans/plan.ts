/** A plan as read from its file (./file.ts): its own module, so that what expands it (./cells.ts) imports no reader. */

export interface PlanModel {
  name: string;
  provider: string;
  settings: Record<string, unknown>;
  /** `file:line:col` of its entry, for a problem its cells' specs meet. */
  where: string;
}

export interface Plan {
  file: string;
  name: string;
  split: 'test' | 'private_test' | 'both';
  tasks: string[];
  data?: string;
  defaults: Record<string, unknown>;
  models: PlanModel[];
  /** Axis → its values, in the file's order. */
  matrix: [string, unknown[]][];
  /** Requests in flight per endpoint across the cells that share it (default: the largest cell's concurrency). */
  maxInFlight?: number;
  /** On workers: rounds in which a cell's failed requests go back to the queue (3), and the first round's delay. */
  retryRounds?: number;
  retryDelayS?: number;
  /** Old keys read as their fields, one line each: `file:line:col: "max_wait" is an old name: …`. */
  warnings: string[];
}
