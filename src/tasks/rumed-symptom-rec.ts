/** RuMedSymptomRec: the symptom a doctor should check next, given an incomplete description. */
import { z } from 'zod';
import { text } from './fields.js';
import type { RankingTask } from './types.js';

export const rumedSymptomRec = {
  name: 'RuMedSymptomRec',
  title: 'symptom to check next',
  kind: 'ranking',
  idField: 'idx',
  goldField: 'code',
  inputFields: ['symptoms'],
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'hit_at_3'],
  // Free-text symptom names: anything non-blank is well formed; names outside the train inventory are counted.
  labelPattern: /\S/,
  labelDescription: 'a symptom name from the train inventory, such as "сухой кашель"',
  recordSchema: z.looseObject({ idx: text, symptoms: text, code: text.optional() }),
} as const satisfies RankingTask<'RuMedSymptomRec'>;
