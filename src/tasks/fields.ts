/** Schema building blocks shared by the task modules. */
import { z } from 'zod';

/** A non-empty string after trimming: ids and texts. */
export const text = z.string().refine((s) => s.trim().length > 0, { message: 'must be a non-empty string' });

/** IOB2 tags over the given entity types, plus `O`. */
export function iob2Tags(entityTypes: readonly string[]): readonly string[] {
  return ['O', ...entityTypes.flatMap((t) => [`B-${t}`, `I-${t}`])];
}
