/** RuMedDaNet: yes/no questions on a medical passage. */
import { z } from 'zod';
import { text } from './fields.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['да', 'нет'] as const;

export const rumedDaNet = {
  name: 'RuMedDaNet',
  title: 'yes/no question answering',
  kind: 'classification',
  idField: 'pairID',
  goldField: 'answer',
  inputFields: ['context', 'question'],
  splits: ['train', 'dev', 'test', 'private_test'],
  inOverall: true,
  metrics: ['accuracy'],
  labels: LABELS,
  naiveLabel: 'да',
  recordSchema: z.looseObject({
    pairID: text,
    context: text,
    question: text,
    answer: z.enum(LABELS).optional(),
  }),
} as const satisfies ClassificationTask<'RuMedDaNet'>;
