/**
 * The settings a run folder's requests were asked with, and what `--resume` does when they change (issue #59 item 7).
 * A request's key is a hash of everything that makes it (model, sampling, max tokens, prompt), so a changed setting
 * makes other requests, and the answers already paid for the old ones would be asked and paid again. Each run records
 * its settings in `settings.jsonl` (a line when they differ from the last), so that the refusal can name which setting
 * changed, old → new; `--resume --reask` asks again only the items whose request changed, after saying what that is,
 * and keeps the old answers in the journal as they are.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { type Logger, redactSecrets } from '../log.js';
import type { RecordedBatch } from './batch.js';
import type { Journal, JournalEntry } from './journal.js';
import type { LlmRequest } from './requests.js';
import type { LlmRunOptions } from './run.js';

export const SETTINGS_FILE = 'settings.jsonl';

/** The settings that make a run's requests, each under the flag that sets it (the values as the flag reads them). */
export type RequestSettings = Record<string, unknown>;

/** The request-making settings of a run: the flag, and its value (null where unset). */
export function requestSettingsOf(
  options: Omit<LlmRunOptions, 'provider'>,
  model: unknown,
  dataFiles: Record<string, string>,
): RequestSettings {
  const p = options.params;
  return {
    '--model': model ?? null,
    '--mode': options.mode,
    '--label-words': options.labelWords ?? false,
    '--temperature': p.temperature,
    '--max-tokens': p.maxTokens,
    '--seed': options.seed,
    '--stop': p.stop ?? [],
    '--reasoning-effort': p.reasoningEffort ?? null,
    '--thinking-budget': p.thinkingBudget ?? null,
    '--system': options.system ?? null,
    '--shots': options.shots,
    '--template': options.templates ?? null,
    '--prompt-variant': options.promptVariant ?? null,
    '--perturb': options.perturb ?? null,
    // The data a prompt is made of: another file gives other prompts (and, with shots, other examples).
    '--data': dataFiles,
  };
}

const show = (v: unknown): string => {
  const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v ?? null);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

/** The settings that differ, in words: `--max-tokens 64 → 512`. The data is named, not shown (its files' hashes). */
export function describeChanges(was: RequestSettings, now: RequestSettings): string[] {
  const out: string[] = [];
  for (const flag of new Set([...Object.keys(was), ...Object.keys(now)])) {
    const a = JSON.stringify(was[flag] ?? null);
    const b = JSON.stringify(now[flag] ?? null);
    if (a === b) continue;
    out.push(
      flag === '--data' ? '--data (other data files)' : `${flag} ${show(was[flag])} → ${show(now[flag])}`,
    );
  }
  return out;
}

/** The settings lines of a run folder, oldest first; an unreadable line (torn by a kill) is skipped. */
export function readSettings(outDir: string): RequestSettings[] {
  const file = join(outDir, SETTINGS_FILE);
  if (!existsSync(file)) return [];
  const out: RequestSettings[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const r = JSON.parse(line) as { settings?: RequestSettings };
      if (r.settings && typeof r.settings === 'object') out.push(r.settings);
    } catch {
      // A line torn by a kill says nothing; the line before it (or the refusal's general words) stands.
    }
  }
  return out;
}

/** Records the settings a run asks with, when they are not the folder's last (written before anything is sent). */
export function recordSettings(outDir: string, settings: RequestSettings): void {
  const last = readSettings(outDir).at(-1);
  if (last && describeChanges(last, settings).length === 0) return;
  const file = join(outDir, SETTINGS_FILE);
  // A torn last line (a kill mid-write) is ended first, so that this line is read whole.
  const torn =
    existsSync(file) && !readFileSync(file, 'utf8').endsWith('\n') && readFileSync(file).length > 0;
  appendFileSync(
    file,
    `${torn ? '\n' : ''}${redactSecrets(JSON.stringify({ at: new Date().toISOString(), settings }))}\n`,
  );
}

/**
 * Paid answers the journal holds for this run's items under requests the run does not make, counted only where the
 * item's own request is not answered yet (after `--reask`, an item answered under the new settings is whole).
 */
export function answersOfOtherRequests(journal: Journal, requests: readonly LlmRequest[]): JournalEntry[] {
  const itemOf = (task: string, split: string, id: string) => JSON.stringify([task, split, id]);
  const keys = new Set(requests.map((j) => j.key));
  const open = new Set(
    requests
      .filter((j) => journal.get(j.key)?.status !== 'ok')
      .map((j) => itemOf(j.task.name, j.split, j.record.id)),
  );
  return journal
    .all()
    .filter((e) => e.status === 'ok' && !keys.has(e.key) && open.has(itemOf(e.task, e.split, e.id)));
}

/** The changes between the folder's recorded settings and these, in words (the last recorded set that differs). */
function changesSince(outDir: string, now: RequestSettings): string | undefined {
  const recorded = readSettings(outDir);
  for (let i = recorded.length - 1; i >= 0; i--) {
    const changes = describeChanges(recorded[i] as RequestSettings, now);
    if (changes.length > 0) return changes.join(', ');
  }
  return undefined;
}

const GENERAL =
  'a setting that changes a request differs from the run’s: --model, --temperature, --seed, --max-tokens, --stop, the prompt or the system prompt';

/**
 * `--resume` (or `--retry-errors`) in a folder whose requests were made with other settings: refused in one line naming
 * what changed, unless `reask` (then the items are asked again, and what that pays for is said first). A waiting batch
 * of other requests is refused either way: collected under these settings, its paid answers would match nothing.
 */
export function checkResumeSettings(o: {
  outDir: string;
  journalFile: string;
  journal: Journal;
  requests: readonly LlmRequest[];
  settings: RequestSettings;
  waiting: readonly RecordedBatch[];
  reask: boolean;
  log: Logger;
}): void {
  const changed = changesSince(o.outDir, o.settings);
  const which = changed !== undefined ? `changed since they were asked: ${changed}` : GENERAL;
  const keys = new Set(o.requests.map((j) => j.key));
  for (const b of o.waiting) {
    const foreign = b.keys.filter((k) => !keys.has(k)).length;
    if (foreign > 0)
      throw new UsageError(
        `batch ${b.id} holds ${foreign} request(s) this run would not ask (${which}): collecting it would drop its paid answers. Resume with the settings it was made with (they collect it), or give a new --out`,
      );
  }
  const orphaned = answersOfOtherRequests(o.journal, o.requests);
  if (orphaned.length === 0) return;
  const items = new Set(orphaned.map((e) => `${e.task}\n${e.split}\n${e.id}`)).size;
  if (!o.reask)
    throw new UsageError(
      `${o.journalFile} holds ${orphaned.length} paid answer(s) for ${items} of this run's items that these settings would not use (${which}): continuing would ask them again and pay twice. Resume with the settings they were asked with, give a new --out, or add --reask to ask those items again under these settings (the old answers stay in the journal)`,
    );
  o.log.warn(
    `--reask: ${items} item(s) answered under other settings (${changed ?? 'a setting that changes a request'}) are asked again and paid again; their ${orphaned.length} old answer(s) stay in ${o.journalFile}, unused`,
  );
}
