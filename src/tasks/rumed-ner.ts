/** RuMedNER: named entities in drug reviews (RuDReC), one IOB2 tag per token. */
import { z } from 'zod';
import { iob2Tags, text } from './fields.js';
import type { TaggingTask } from './types.js';

const ENTITY_TYPES = ['ADR', 'DI', 'Drugclass', 'Drugform', 'Drugname', 'Finding'] as const;
const TAGS = iob2Tags(ENTITY_TYPES);

export const rumedNer = {
  name: 'RuMedNER',
  title: 'drug-review named entities',
  kind: 'tagging',
  idField: 'idx',
  goldField: 'ner_tags',
  inputFields: ['tokens'],
  tokensField: 'tokens',
  entityTypes: ENTITY_TYPES,
  tags: TAGS,
  splits: ['train', 'dev', 'test'],
  inOverall: true,
  metrics: ['accuracy', 'f1'],
  recordSchema: z
    .looseObject({
      idx: text,
      tokens: z.array(z.string()).min(1, 'must list at least one token'),
      ner_tags: z
        .array(z.string().refine((t) => TAGS.includes(t), { message: `must be one of ${TAGS.join(', ')}` }))
        .optional(),
    })
    .refine((r) => r.ner_tags === undefined || r.ner_tags.length === r.tokens.length, {
      message: 'ner_tags must have one tag per token',
      path: ['ner_tags'],
    }),
} as const satisfies TaggingTask<'RuMedNER'>;
