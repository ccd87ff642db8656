/** A plan accepts every short form its flag accepts (#58 item 4): `shard: auto/N`, `allow_failures: 2.5%`. */
import { afterEach, describe, expect, it } from 'vitest';
import { specValueOf } from '../plans/settings.js';
import { parseAllowance, parseShard, resolveShard } from './short-forms.js';

const SLURM = process.env.SLURM_ARRAY_TASK_ID;
afterEach(() => {
  if (SLURM === undefined) delete process.env.SLURM_ARRAY_TASK_ID;
  else process.env.SLURM_ARRAY_TASK_ID = SLURM;
});

describe('short forms, one reader for the flag and the plan', () => {
  it('reads a shard as the flag does, auto/N from the array job, and in a plan too', () => {
    expect(parseShard('2/8')).toEqual({ index: 2, count: 8 });
    expect(parseShard('auto/8')).toEqual({ index: 'auto', count: 8 });
    expect(() => parseShard('9/8')).toThrow('--shard: I/N with 1 ≤ I ≤ N (e.g. 2/8), or auto/N; got "9/8"');
    expect(resolveShard({ index: 'auto', count: 4 }, { SLURM_ARRAY_TASK_ID: '5' })).toEqual({
      index: 2,
      count: 4,
    });
    process.env.SLURM_ARRAY_TASK_ID = '6';
    expect(specValueOf('shard', 'auto/4', 'plan.yaml')).toEqual({ index: 3, count: 4 });
    expect(specValueOf('shard', '2/4', 'plan.yaml')).toEqual({ index: 2, count: 4 });
    // Not a short form: left for the spec's schema to name.
    expect(specValueOf('shard', '5/4', 'plan.yaml')).toBe('5/4');
  });

  it('reads an allowance as the flag does', () => {
    expect(parseAllowance('12')).toEqual({ count: 12 });
    expect(parseAllowance('2.5%')).toEqual({ percent: 2.5 });
    expect(() => parseAllowance('1.5')).toThrow('--allow-failures: a whole number of requests (12)');
    expect(specValueOf('allow_failures', '2.5%', 'plan.yaml')).toEqual({ percent: 2.5 });
    expect(specValueOf('allow_failures', 3, 'plan.yaml')).toEqual({ count: 3 });
    // The plan used to read "1.5" as a count of 1.5 requests; now the schema is handed what the flag refuses.
    expect(specValueOf('allow_failures', '1.5', 'plan.yaml')).toBe('1.5');
  });
});
