/**
 * A command must never end in silence. Node.js exits, with code 0, when nothing is left to wait on, even while a
 * promise of the command is still pending (a download whose stream was dropped without an error, a callback never
 * called): a run that wrote nothing looked like success. Here the process's end is watched: a command whose promise
 * has not settled when the event loop empties ends with exit code 3 and says so, with the `--resume` hint.
 */

/** The exit code of a command that stopped before it finished (as a run stopped for RUN_INCOMPLETE). */
export const UNFINISHED_EXIT = 3;

/** Watches `answered` (the command's promise) until the process ends; see the module's comment. */
export function failIfUnfinished(answered: Promise<unknown>, write: (text: string) => void): void {
  let settled = false;
  const done = () => {
    settled = true;
  };
  answered.then(done, done);
  process.once('beforeExit', () => {
    if (settled) return;
    write(
      'rumedbench: error: the command ended before its work did (an operation it was waiting for never finished, and nothing was left to wait on); nothing after that point was written. Continue with the same command and --resume, which keeps every answer journaled so far\n',
    );
    process.exitCode = UNFINISHED_EXIT;
  });
}
