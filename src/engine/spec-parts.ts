/**
 * The parts of a run spec that its providers' own schemas are made of (./providers/): the defaults, the checks of a
 * key's variable and of header names. Apart from spec.ts so that a provider module and the spec can both use them
 * without importing each other.
 */
import { z } from 'zod';

/** The defaults of an LLM run, in one place: the spec fills them, the flags' help shows them. */
export const LLM_DEFAULTS = {
  contextSize: 4096,
  timeoutMs: 120_000,
  maxRetries: 6,
  maxWaitS: 60,
  maxReplyBytes: 4 << 20,
  /** Requests in a row that cannot reach the server or time out before the run stops (the circuit breaker). */
  downAfter: 5,
  split: 'test',
  mode: 'generate',
  shots: 0,
  seed: 0,
  temperature: 0,
  maxTokens: 1024,
  repeats: 1,
  bootstrap: 1000,
} as const;

export const whole = (min: number) => z.number().int().min(min);

/**
 * The name of the environment variable holding a model server's key. The project's own variables are refused: an
 * endpoint named `RUMEDBENCH_ADMIN_TOKEN` would send the board's admin secret to a model server with every request.
 */
export const apiKeyEnv = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name (letters, digits, _)')
  .refine((n) => !/^RUMEDBENCH_/i.test(n), {
    message:
      "names one of rumedbench's own secrets (RUMEDBENCH_*): keep a model server's key in a variable of its own",
  });

/** The same check for a flag or a plan field: the problem in words, or undefined. */
export function apiKeyEnvProblem(name: string): string | undefined {
  const r = apiKeyEnv.safeParse(name);
  return r.success ? undefined : r.error.issues[0]?.message;
}

/**
 * Header names that carry credentials (`Authorization`, `X-Api-Key`, Azure's `Api-Key`, `Ocp-Apim-Subscription-Key`,
 * any name with key, token or secret in it, cookies): a spec is written into run folders, plans and the queue, so
 * their values come from the environment (`header_env`), never from the spec itself.
 */
export const SECRET_HEADER = /^(authorization|proxy-authorization|cookie)$|key|token|secret|passw/i;

/** Why a header given as a literal value may not be (it carries a credential), or undefined. */
export function secretHeaderProblem(name: string): string | undefined {
  return SECRET_HEADER.test(name)
    ? `the header "${name}" carries a credential: give its value through an environment variable (--header-env "${name}: VAR", plan setting header_env), never in the spec, the plan or the command line`
    : undefined;
}

export const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name');
