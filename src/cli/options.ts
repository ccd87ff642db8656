/** Flag parsing shared by the commands: every value is checked here, before any work starts. */
import { UsageError } from '../errors.js';
import { SPLITS, type Split } from '../tasks/types.js';

export function parseSplit(value: string): Split {
  if (!(SPLITS as readonly string[]).includes(value)) {
    throw new UsageError(`--split must be one of ${SPLITS.join(', ')}, got "${value}"`);
  }
  return value as Split;
}
