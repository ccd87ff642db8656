/**
 * Fixed-window counters per key (an address, a token), held in this process. Behind several processes each keeps
 * its own windows, so a client can reach N times the limit across N processes: the README says so.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    /** Windows kept at most; past it the oldest are forgotten (a flood of addresses cannot grow memory). */
    private readonly maxKeys = 10_000,
  ) {}

  /** Seconds until `key` may act again, or 0 when it may now. Counts nothing. */
  retryAfter(key: string, now = Date.now()): number {
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Counts one act of `key`; answers the seconds to wait when it is over the limit (then nothing is counted). */
  hit(key: string, now = Date.now()): number {
    if (this.limit <= 0) return 0;
    const wait = this.retryAfter(key, now);
    if (wait > 0) return wait;
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      this.windows.delete(key);
      this.windows.set(key, { start: now, count: 1 });
      if (this.windows.size > this.maxKeys) {
        const oldest = this.windows.keys().next().value as string;
        this.windows.delete(oldest);
      }
    } else w.count++;
    return 0;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }
}
