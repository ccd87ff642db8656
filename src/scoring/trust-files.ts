/**
 * The files a run folder may hold beside its summary about whether its score can be trusted: `prompt-variants.json`
 * (`llm --prompts`), `perturbations.json` (`llm --perturb`) and `contamination.json` (`contamination --out` the run
 * folder). One schema for each, its one writer (called by the command that makes it) and its one reader (the
 * report's, and the board's for an uploaded run).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { readUtf8File } from '../data/text.js';
import { isTaskName } from '../tasks/registry.js';
import { RunFolderError } from './run-log.js';

const interval = z.tuple([z.number(), z.number()]);
const delta = z.object({ delta: z.number(), ci: interval, p: z.number() });

export const promptVariantsSchema = z.object({
  variants: z.array(z.string()),
  tasks: z.record(
    z.string(),
    z.object({
      scores: z.record(z.string(), z.object({ score: z.number(), ci: interval.nullable(), dir: z.string() })),
      mean: z.number(),
      sd: z.number(),
      min: z.number(),
      max: z.number(),
      best: z.string(),
      worst: z.string(),
      best_vs_worst: delta,
    }),
  ),
});
export type PromptVariantsFile = z.output<typeof promptVariantsSchema>;

export const perturbationsSchema = z.object({
  seed: z.number(),
  variants: z.record(
    z.string(),
    z.object({
      dir: z.string(),
      skipped: z.record(z.string(), z.string()),
      tasks: z.record(
        z.string(),
        z.object({ n: z.number(), clean: z.number(), perturbed: z.number(), delta }),
      ),
    }),
  ),
});
export type PerturbationsFile = z.output<typeof perturbationsSchema>;

const verdict = z.enum(['contaminated', 'no evidence']);
const probeBase = { n: z.number(), p_value: z.number(), alpha: z.number(), verdict };
export const contaminationSchema = z.object({
  model: z.string(),
  split: z.string(),
  settings: z.record(z.string(), z.unknown()),
  tasks: z.record(
    z.string(),
    z.object({
      order: z
        .object({
          ...probeBase,
          probe: z.literal('order'),
          mean_difference: z.number(),
          statistic: z.number(),
        })
        .passthrough()
        .optional(),
      guided: z
        .object({
          ...probeBase,
          probe: z.literal('guided'),
          rouge_guided: z.number(),
          rouge_general: z.number(),
        })
        .passthrough()
        .optional(),
      options: z
        .union([
          z
            .object({
              ...probeBase,
              probe: z.literal('options'),
              exact_match: z.number(),
              chance: z.number(),
            })
            .passthrough(),
          z.object({ skipped: z.string() }),
        ])
        .optional(),
    }),
  ),
});
export type ContaminationFile = z.output<typeof contaminationSchema>;

const FILES = {
  promptVariants: ['prompt-variants.json', promptVariantsSchema],
  perturbations: ['perturbations.json', perturbationsSchema],
  contamination: ['contamination.json', contaminationSchema],
} as const;

function write(dir: string, name: string, value: unknown): void {
  writeFileSync(join(dir, name), `${JSON.stringify(value, null, 2)}\n`);
}

/** The one writer of prompt-variants.json. */
export const writePromptVariants = (dir: string, v: z.input<typeof promptVariantsSchema>): void =>
  write(dir, FILES.promptVariants[0], v);
/** The one writer of perturbations.json. */
export const writePerturbations = (dir: string, v: z.input<typeof perturbationsSchema>): void =>
  write(dir, FILES.perturbations[0], v);
interface ProbeWritten {
  probe: string;
  n: number;
  p_value: number;
  alpha: number;
  verdict: 'contaminated' | 'no evidence';
}
/** The one writer of contamination.json (each probe's own fields besides those the schema requires). */
export const writeContamination = (
  dir: string,
  v: {
    model: string;
    split: string;
    settings: Record<string, unknown>;
    tasks: Record<
      string,
      { order?: ProbeWritten; guided?: ProbeWritten; options?: ProbeWritten | { skipped: string } }
    >;
  },
): void => write(dir, FILES.contamination[0], v);

export interface TrustFiles {
  promptVariants?: PromptVariantsFile;
  perturbations?: PerturbationsFile;
  contamination?: ContaminationFile;
}

/** The one reader: whichever of the three files the folder holds, each checked against its schema. */
export function readTrustFiles(dir: string): TrustFiles {
  const out: TrustFiles = {};
  for (const [key, [name, schema]] of Object.entries(FILES) as [
    keyof TrustFiles,
    (typeof FILES)[keyof TrustFiles],
  ][]) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(readUtf8File(file));
    } catch (e) {
      throw new RunFolderError(file, `not valid JSON (${(e as Error).message})`);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success)
      throw new RunFolderError(
        file,
        `not a ${name}: ${parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`)
          .join('; ')}`,
      );
    (out as Record<string, unknown>)[key] = parsed.data;
  }
  return out;
}

const finite = z.number().refine(Number.isFinite, 'a finite number');
const taskName = z.string().refine((s): boolean => isTaskName(s), 'a RuMedBench task');

/**
 * What a board shows of a run's trust files, sent with an upload (`submit` of a run folder): per task, each
 * contamination probe's verdict and p-value, and the spread of the score over the prompt formulations. The server
 * checks it against this schema like any other field of an upload: it is hostile until proven otherwise.
 */
export const trustSummarySchema = z
  .object({
    contamination: z
      .record(
        taskName,
        z.partialRecord(
          z.enum(['order', 'guided', 'options']),
          z
            .object({
              n: z.number().int().min(0),
              p_value: finite.pipe(z.number().min(0).max(1)),
              alpha: finite.pipe(z.number().min(0).max(1)),
              verdict,
            })
            .strict()
            // The probes' rule (llm/contamination.ts): contaminated exactly when p < α.
            .refine((p) => p.p_value < p.alpha === (p.verdict === 'contaminated'), {
              message: 'the verdict disagrees with p and α (contaminated exactly when p < α)',
            }),
        ),
      )
      .optional(),
    formulations: z
      .record(
        taskName,
        z
          .object({ variants: z.number().int().min(2), mean: finite, sd: finite, min: finite, max: finite })
          .strict()
          .refine((f) => f.sd >= 0, { message: 'sd must not be negative' })
          .refine((f) => f.min <= f.mean && f.mean <= f.max, { message: 'min ≤ mean ≤ max must hold' }),
      )
      .optional(),
  })
  .strict();

/** The trust summary's tasks must be among the tasks uploaded with it. */
export function trustTasksProblem(trust: TrustSummary, uploaded: readonly string[]): string | undefined {
  const named = new Set([
    ...Object.keys(trust.contamination ?? {}),
    ...Object.keys(trust.formulations ?? {}),
  ]);
  const extra = [...named].filter((t) => !uploaded.includes(t));
  return extra.length > 0 ? `trust: names ${extra.join(', ')}, which the upload does not include` : undefined;
}
export type TrustSummary = z.output<typeof trustSummarySchema>;

/** A run folder's trust files, reduced to what a board shows (no paths, no items). Undefined when there are none. */
export function summarizeTrust(files: TrustFiles): TrustSummary | undefined {
  const out: TrustSummary = {};
  if (files.contamination) {
    const c: NonNullable<TrustSummary['contamination']> = {};
    for (const [task, probes] of Object.entries(files.contamination.tasks)) {
      const row: Record<
        string,
        { n: number; p_value: number; alpha: number; verdict: 'contaminated' | 'no evidence' }
      > = {};
      for (const name of ['order', 'guided', 'options'] as const) {
        const p = probes[name];
        if (p && 'p_value' in p)
          row[name] = { n: p.n, p_value: p.p_value, alpha: p.alpha, verdict: p.verdict };
      }
      if (Object.keys(row).length > 0) c[task] = row;
    }
    if (Object.keys(c).length > 0) out.contamination = c;
  }
  if (files.promptVariants) {
    const f: NonNullable<TrustSummary['formulations']> = {};
    for (const [task, v] of Object.entries(files.promptVariants.tasks))
      f[task] = { variants: Object.keys(v.scores).length, mean: v.mean, sd: v.sd, min: v.min, max: v.max };
    if (Object.keys(f).length > 0) out.formulations = f;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
