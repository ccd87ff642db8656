/** RuMedTop3: the ICD-10 code (three characters) of a diagnosis from the patient's symptoms. */
import { z } from 'zod';
import { text } from './fields.js';
import type { RankingTask } from './types.js';

export const ICD10_CODE = /^[A-Z][0-9]{2}$/;

export const rumedTop3 = {
  name: 'RuMedTop3',
  title: 'ICD-10 code from symptoms',
  kind: 'ranking',
  idField: 'idx',
  goldField: 'code',
  inputFields: ['symptoms'],
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'hit_at_3'],
  labelPattern: ICD10_CODE,
  labelDescription: 'a three-character ICD-10 code such as "M54" (Latin letter, two digits)',
  recordSchema: z.looseObject({
    idx: text,
    symptoms: text,
    code: z.string().regex(ICD10_CODE, 'must be a three-character ICD-10 code such as "M54"').optional(),
  }),
} as const satisfies RankingTask<'RuMedTop3'>;
