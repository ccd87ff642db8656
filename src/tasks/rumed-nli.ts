/** RuMedNLI: natural language inference on clinical sentence pairs (translated MedNLI). */
import { z } from 'zod';
import { text } from './fields.js';
import type { ClassificationTask } from './types.js';

const LABELS = ['entailment', 'contradiction', 'neutral'] as const;

export const rumedNli = {
  name: 'RuMedNLI',
  title: 'clinical natural language inference',
  kind: 'classification',
  idField: 'pairID',
  goldField: 'gold_label',
  inputFields: ['ru_sentence1', 'ru_sentence2'],
  splits: ['train', 'dev', 'test', 'private_test'],
  inOverall: true,
  metrics: ['accuracy'],
  labels: LABELS,
  naiveLabel: 'neutral',
  recordSchema: z.looseObject({
    pairID: text,
    ru_sentence1: text,
    ru_sentence2: text,
    gold_label: z.enum(LABELS).optional(),
  }),
} as const satisfies ClassificationTask<'RuMedNLI'>;
