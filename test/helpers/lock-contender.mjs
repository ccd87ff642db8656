// A process that takes a run folder's lock when told to (test/e2e/run-lock.test.ts): on {dir, at} it waits, spinning,
// until the wall clock reaches `at` (ms, fractional) (so that two processes start the same microsecond), tries the lock, answers
// {won}, and releases it on {release}. The lock function comes from the built files, as the CLI uses it.
import { lockRunFolder } from '../../dist/llm/run-lock.js';

let release;
process.on('message', (m) => {
  if (m.release) {
    release?.();
    release = undefined;
    process.send({ released: true });
    return;
  }
  while (performance.timeOrigin + performance.now() < m.at) {
    // spin: a timer's resolution would spread the starts over a millisecond
  }
  try {
    release = lockRunFolder(m.dir);
    process.send({ won: true });
  } catch (e) {
    process.send({ won: false, error: e.code === undefined ? String(e.message).slice(0, 40) : e.code });
  }
});
process.send({ ready: true });
