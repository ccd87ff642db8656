/**
 * An upload's metadata, checked at the edge: what it may say of itself (model, kind, link, …), and what it may not
 * (a team name without that team's token, the human kind, which only campaigns give).
 */
import { z } from 'zod';
import { cleanName, cleanText } from '../../data/clean-text.js';
import { parseRunUsage } from '../../scoring/run-usage.js';
import { trustSummarySchema } from '../../scoring/trust-files.js';
import { FIELD_LIMITS, KINDS } from '../db/schema.js';

/** The submission kinds and field limits, for the forms that show them. */
export { FIELD_LIMITS, KINDS, UPLOAD_KINDS } from '../db/schema.js';

import { HttpError } from '../errors.js';

/**
 * The fields people are shown (on pages, in the JSON API, in the CSV), cleaned as names where the upload is accepted:
 * no controls, escape sequences, bidi overrides or zero-width characters (issue #42); a description keeps its lines.
 */
const SHOWN_FIELDS: ReadonlyMap<string, { multiline: boolean }> = new Map([
  ['model', { multiline: false }],
  ['team', { multiline: false }],
  ['params', { multiline: false }],
  ['link', { multiline: false }],
  ['description', { multiline: true }],
]);

/** The trust summary's length at most (the multipart reader caps a field at 4 × the description's limit). */
const TRUST_MAX = 16_000;
/** The usage's length at most: a handful of numbers. */
const USAGE_MAX = 1_000;

const boolish = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off', ''])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes' || v === 'on');
const text = (max: number) =>
  z
    .string({ error: (iss) => (iss.input === undefined ? 'required' : 'must be text') })
    .trim()
    .max(max, `at most ${max} characters`);

/** The metadata of an upload, checked at the edge. */
export const metadataSchema = z.object({
  model: text(FIELD_LIMITS.model).min(1, 'required'),
  team: text(FIELD_LIMITS.team).default(''),
  description: text(FIELD_LIMITS.description).default(''),
  link: z
    .string()
    .trim()
    .max(FIELD_LIMITS.link, `at most ${FIELD_LIMITS.link} characters`)
    .refine((v) => {
      if (v === '') return true;
      try {
        const u = new URL(v);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
      } catch {
        return false;
      }
    }, 'an http:// or https:// URL')
    .transform((v) => (v === '' ? null : v))
    .default(''),
  kind: z.enum(KINDS, { error: `one of ${KINDS.join(', ')}` }),
  params: text(FIELD_LIMITS.params)
    .transform((v) => (v === '' ? null : v))
    .default(''),
  open_weights: boolish.default(false),
  board: z.enum(['auto', 'public', 'closed']).default('auto'),
  /** What the run's trust files say (`submit` of a run folder sends it): probe verdicts, formulations' spread. */
  trust: z
    .string()
    .max(TRUST_MAX, `at most ${TRUST_MAX} characters`)
    .default('')
    .transform((v, ctx) => {
      if (v.trim() === '') return null;
      let raw: unknown;
      try {
        raw = JSON.parse(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not JSON' });
        return z.NEVER;
      }
      const r = trustSummarySchema.safeParse(raw);
      if (r.success) return r.data;
      for (const i of r.error.issues.slice(0, 3)) {
        // A key that is not a task (or probe) says which, not only that a key was wrong.
        const inner = i.code === 'invalid_key' ? i.issues[0]?.message : undefined;
        ctx.addIssue({
          code: 'custom',
          message: `${i.path.map(String).join('.') || '(top)'}: ${inner ? `not ${inner}` : i.message}`,
        });
      }
      return z.NEVER;
    }),
  /** What the run spent (`submit` of an LLM run sends it): tokens, and cost where the run was priced. */
  usage: z
    .string()
    .max(USAGE_MAX, `at most ${USAGE_MAX} characters`)
    .default('')
    .transform((v, ctx) => {
      if (v.trim() === '') return null;
      const r = parseRunUsage(v);
      if ('usage' in r) return r.usage;
      for (const message of r.problems) ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }),
});
export type Metadata = z.output<typeof metadataSchema>;

/** The fields an upload may carry (a form's `_csrf` aside): the schema's. */
export const UPLOAD_FIELDS: readonly string[] = Object.keys(metadataSchema.shape);

/**
 * Checks an upload's or an admin edit's metadata. An upload (`who` given) is refused the human kind (human rows come
 * from campaigns) and a team name unless a token gives it: nobody can pose as a team or as the human row.
 */
export function parseMetadata(fields: Record<string, unknown>, who?: Uploader): Metadata {
  // NUL and lone surrogates are replaced before anything is checked or stored (PostgreSQL refuses them); names are
  // cleaned before they are checked, so that a name of nothing but controls is refused as empty.
  const r = metadataSchema.safeParse(
    Object.fromEntries(
      Object.entries(fields).map(([k, v]) => {
        if (typeof v !== 'string') return [k, v];
        const shown = SHOWN_FIELDS.get(k);
        return [k, shown ? cleanName(v, shown) : cleanText(v)];
      }),
    ),
  );
  const problems = r.success
    ? []
    : r.error.issues.map((i) => `${i.path.join('.') || 'metadata'}: ${i.message}`);
  if (who && r.success) {
    if (r.data.kind === 'human')
      problems.push('kind: "human" rows come only from the platform\'s evaluation campaigns');
    if (who.tokenId === null && r.data.team !== '')
      problems.push('team: a team name comes from a team token; anonymous uploads are shown as anonymous');
  }
  if (r.success && problems.length === 0) return r.data;
  throw new HttpError(400, 'INVALID_METADATA', `invalid metadata: ${problems.join('; ')}`, { problems });
}

/** Who sends an upload: a team's token, or an anonymous address. */
export interface Uploader {
  tokenId: string | null;
  team: string | null;
  address: string;
}
