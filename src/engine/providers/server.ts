/**
 * What the providers that are model servers share (OpenAI-compatible servers, Anthropic's Messages API): their spec
 * fields, how a client of theirs is opened with its key and headers from the environment, and their variables.
 */
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { type ClientOptions, checkBaseUrl, type RetryNotice } from '../../llm/client.js';
import type { Provider } from '../../llm/provider.js';
import type { Logger } from '../../log.js';
import { apiKeyEnv, headerName, LLM_DEFAULTS, secretHeaderProblem, whole } from '../spec-parts.js';
import type { OpenProviderOptions } from './record.js';

/** A model server's fields, less its name. */
export const serverFields = {
  model: z.string().min(1),
  base_url: z.string().min(1),
  /** The environment variable that holds the key: a spec never holds a secret. */
  api_key_env: apiKeyEnv.optional(),
  headers: z
    .record(headerName, z.string())
    .default({})
    .superRefine((h, ctx) => {
      for (const name of Object.keys(h)) {
        const problem = secretHeaderProblem(name);
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
    }),
  /** Headers whose values are read from environment variables by the process that runs the spec. */
  header_env: z.record(headerName, apiKeyEnv).default({}),
  down_after: whole(0).default(LLM_DEFAULTS.downAfter),
  timeout_ms: whole(1).default(LLM_DEFAULTS.timeoutMs),
  max_retries: whole(0).default(LLM_DEFAULTS.maxRetries),
  max_wait_s: whole(1).default(LLM_DEFAULTS.maxWaitS),
  max_reply_bytes: whole(1024).default(LLM_DEFAULTS.maxReplyBytes),
};

/** A model server's spec. */
export interface ServerSpec {
  name: string;
  model: string;
  base_url: string;
  api_key_env?: string | undefined;
  headers: Record<string, string>;
  header_env: Record<string, string>;
  down_after: number;
  timeout_ms: number;
  max_retries: number;
  max_wait_s: number;
  max_reply_bytes: number;
}

/** A server's client from its spec: the key and header values read from `o.env`, never from the spec. */
export function openServer(
  Client: new (options: ClientOptions & { model: string }) => Provider,
  p: ServerSpec,
  o: OpenProviderOptions,
): Provider {
  checkBaseUrl(p.base_url);
  const env = o.env ?? process.env;
  let apiKey: string | undefined;
  if (p.api_key_env) {
    apiKey = env[p.api_key_env];
    if (!apiKey) throw new UsageError(`--api-key-env ${p.api_key_env}: that environment variable is not set`);
  }
  const headers = { ...p.headers };
  for (const [name, variable] of Object.entries(p.header_env)) {
    const value = env[variable];
    if (!value)
      throw new UsageError(`--header-env "${name}: ${variable}": that environment variable is not set`);
    headers[name] = value;
  }
  return new Client({
    baseUrl: p.base_url,
    model: p.model,
    headers,
    downAfter: p.down_after,
    timeoutMs: p.timeout_ms,
    maxRetries: p.max_retries,
    maxInFlight: o.concurrency,
    maxWaitMs: p.max_wait_s * 1000,
    maxReplyBytes: p.max_reply_bytes,
    onRetry: retryNotices(o.log),
    ...(apiKey ? { apiKey } : {}),
    ...(o.guard ? { guard: o.guard } : {}),
  });
}

/** The variables a server's spec reads: its key, its headers'. */
export const serverVariables = (p: ServerSpec): { variable: string; holds: string }[] => [
  ...(p.api_key_env ? [{ variable: p.api_key_env, holds: 'key' }] : []),
  ...Object.entries(p.header_env).map(([header, variable]) => ({ variable, holds: `header ${header}` })),
];

/**
 * Says on stderr why the run waits, when the wait is long enough to look like a hang (3 s or more, or after a
 * timed-out request), at most once a second.
 */
function retryNotices(log: Logger): (n: RetryNotice) => void {
  let last = 0;
  return (n) => {
    const now = Date.now();
    if ((n.waitMs < 3000 && !/timed out/.test(n.reason)) || now - last < 1000) return;
    last = now;
    log.warn(
      `waiting ${(n.waitMs / 1000).toFixed(0)} s before retry ${n.attempt} of ${n.maxRetries}: ${n.reason}`,
    );
  };
}
