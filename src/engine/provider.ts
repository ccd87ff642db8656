/**
 * A provider from its spec: the OpenAI-compatible client, Anthropic's Messages API, or a local GGUF model. Keys come from the environment of the
 * process that runs the spec (a worker reads its own), never from the spec.
 */
import { existsSync } from 'node:fs';
import type { ConnectGuard } from '../data/public-address.js';
import { UsageError } from '../errors.js';
import { AnthropicProvider } from '../llm/anthropic.js';
import { checkBaseUrl, type RetryNotice } from '../llm/client.js';
import { OpenAIProvider } from '../llm/openai.js';
import type { Provider } from '../llm/provider.js';
import type { Logger } from '../log.js';
import type { ProviderSpec } from './spec.js';

export interface OpenProviderOptions {
  /** Requests in flight (openai); sequences evaluated in parallel (llama). */
  concurrency: number;
  log: Logger;
  /** Where keys and header values are read (default: this process's environment; a worker gives only its own). */
  env?: NodeJS.ProcessEnv;
  /** Connect only to public addresses (the platform's workers without `--allow-private`). */
  guard?: ConnectGuard;
}

export async function openProvider(p: ProviderSpec, o: OpenProviderOptions): Promise<Provider> {
  if (p.name === 'llama') {
    if (!existsSync(p.model))
      throw new UsageError(`--provider llama needs --model PATH.gguf; ${p.model} does not exist`);
    const { LlamaProvider } = await import('../llm/llama.js');
    // N sequences of one context, evaluated in batches by node-llama-cpp.
    return LlamaProvider.load({
      modelPath: p.model,
      contextSize: p.context_size,
      gpu: p.gpu,
      sequences: o.concurrency,
      ...(p.threads !== undefined ? { threads: p.threads } : {}),
    });
  }
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
  const Client = p.name === 'anthropic' ? AnthropicProvider : OpenAIProvider;
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
