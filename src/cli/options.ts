/** Flag parsing shared by the commands: every value is checked here, before any work starts. */
import { UsageError } from '../errors.js';
import { SPLITS, type Split } from '../tasks/types.js';

export function parseCount(name: string, min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new UsageError(`${name} must be an integer ≥ ${min}, got "${value}"`);
    return n;
  };
}

export function parseSplit(value: string): Split {
  if (!(SPLITS as readonly string[]).includes(value)) {
    throw new UsageError(`--split must be one of ${SPLITS.join(', ')}, got "${value}"`);
  }
  return value as Split;
}
