/**
 * What every provider behind a model server shares: its resilient client (retries, pauses, caps, breaker), and the
 * client's calls and settings handed through once. A protocol's provider (OpenAI's, Anthropic's) extends it and
 * says only where it sends and how its key travels; before, each copied these lines.
 */
import { type ClientOptions, type RequestOptions, ResilientClient } from './client.js';

export abstract class ServerProvider {
  /** How requests reach the server and survive it (shared with the protocol's batch calls). */
  readonly client: ResilientClient;

  constructor(
    /** The protocol's main endpoint (its chat URL), named in retry notices and errors. */
    protected readonly url: string,
    options: ClientOptions,
    /** The headers that carry the key (and the protocol's version). */
    auth: () => Record<string, string>,
  ) {
    this.client = new ResilientClient(options, auth, url);
  }

  /** The base URL, without a trailing slash. */
  get base(): string {
    return this.client.base;
  }

  /** The reply cap of one request (`--max-reply-bytes`). */
  get replyCap(): number {
    return this.client.replyCap;
  }

  /** One attempt's time limit (`--timeout-ms`). */
  get timeoutMs(): number {
    return this.client.timeoutMs;
  }

  /** One request with the client's retries, breaker and caps: the batch API's calls. */
  async call<T>(url: string, body: unknown, options: RequestOptions = {}) {
    return this.client.call<T>(url, body, options);
  }

  /** One request, one attempt: creating a batch, looked up before it is tried again (./batch.ts). */
  async callOnce<T>(url: string, body: unknown, options: RequestOptions = {}) {
    return this.client.callOnce<T>(url, body, options);
  }

  limitInFlight(n: number): void {
    this.client.limitInFlight(n);
  }

  checkBeforeRetry(check: () => Promise<void>): void {
    this.client.checkBeforeRetry(check);
  }

  breakerWaitMs(): number {
    return this.client.breakerWaitMs();
  }
}
