/** The one-line progress bar of an LLM run on stderr, redrawn at most every 200 ms. */
import type { RunProgress } from '../llm/send.js';

export function progressBar(write: (text: string) => void = (t) => process.stderr.write(t)) {
  let last = 0;
  return (p: RunProgress, final: boolean): void => {
    const now = Date.now();
    if (!final && now - last < 200) return;
    last = now;
    const rate = p.done / Math.max(1e-3, (now - p.startedAt) / 1000);
    const eta = rate > 0 ? Math.round((p.total - p.done) / rate) : 0;
    const acc = p.graded > 0 ? `${((100 * p.correct) / p.graded).toFixed(1)}%` : '–';
    const width = 24;
    const filled = Math.round((width * p.done) / Math.max(1, p.total));
    write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${p.done}/${p.total} acc ${acc} unparsed ${p.unparsed} tokens ${p.tokens} ETA ${eta}s   ${final ? '\n' : ''}`,
    );
  };
}
