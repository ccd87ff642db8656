/**
 * The short forms a value takes on the command line and in a plan alike (`--shard 2/8` and `shard: 2/8`, `auto/8`;
 * `--allow-failures 2.5%` and `allow_failures: 2.5%`): read here, once, so that a plan accepts every value the flag
 * accepts. A form not recognised is left to the caller: a flag refuses it (these throw, naming the flag), a plan
 * hands it to the spec's schema, which names the field.
 */
import { UsageError } from '../errors.js';

/** `I/N` (I from 1) or `auto/N`; undefined when `v` is neither. */
export function shardForm(v: string): { index: number | 'auto'; count: number } | undefined {
  const m = /^(\d+|auto)\/(\d+)$/.exec(v.trim());
  const count = Number(m?.[2]);
  const index = m?.[1] === 'auto' ? 'auto' : Number(m?.[1]);
  if (!m || count < 1 || (index !== 'auto' && (index < 1 || index > count))) return undefined;
  return { index, count };
}

/** `--shard I/N` (I from 1) or `auto/N`. */
export function parseShard(v: string): { index: number | 'auto'; count: number } {
  const s = shardForm(v);
  if (!s) throw new UsageError(`--shard: I/N with 1 ≤ I ≤ N (e.g. 2/8), or auto/N; got "${v}"`);
  return s;
}

/** The shard this process runs: auto/N reads the array index a Slurm or Kubernetes job gives each of its tasks. */
export function resolveShard(
  s: { index: number | 'auto'; count: number },
  env: NodeJS.ProcessEnv = process.env,
): { index: number; count: number } {
  if (s.index !== 'auto') return { index: s.index, count: s.count };
  const raw = env.SLURM_ARRAY_TASK_ID ?? env.JOB_COMPLETION_INDEX;
  if (raw === undefined || !/^\d+$/.test(raw))
    throw new UsageError(
      '--shard auto/N: neither SLURM_ARRAY_TASK_ID (a Slurm array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set',
    );
  // Arrays number their tasks from 0 or from 1: either way, index mod N gives each of N tasks its own shard.
  return { index: (Number(raw) % s.count) + 1, count: s.count };
}

/** A count of requests (`12`) or a share of them (`2.5%`); undefined when `v` is neither. */
export function allowanceForm(v: string): { count: number } | { percent: number } | undefined {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(v.trim());
  const n = m ? Number(m[1]) : Number.NaN;
  if (!m || (m[2] === '%' ? n > 100 : !Number.isInteger(n))) return undefined;
  return m[2] === '%' ? { percent: n } : { count: n };
}

/** `--allow-failures`: a count (`12`) or a share of the run's requests (`2.5%`). */
export function parseAllowance(v: string): { count: number } | { percent: number } {
  const a = allowanceForm(v);
  if (!a)
    throw new UsageError(
      `--allow-failures: a whole number of requests (12) or a percentage (2.5%), got "${v}"`,
    );
  return a;
}
