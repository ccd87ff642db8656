/** `rumedbench data download` and `rumedbench data info`. */
import { downloadData } from '../data/download.js';
import { dataInfo } from '../data/info.js';
import { resolveDataDir } from '../data/paths.js';
import { renderTable } from '../report/table.js';
import { parseTaskList } from '../tasks/registry.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const DOWNLOAD_FLAGS = {
  dir: flag.text('--dir <dir>', 'target folder (default: $RUMEDBENCH_DATA, else the user cache folder)'),
  baseUrl: flag.text(
    '--base-url <url>',
    'mirror to fetch from (default: $RUMEDBENCH_DATA_URL, else upstream)',
  ),
  tasks: flag.tasksFlag(),
  proxy: flag.proxyFlag(),
} satisfies FlagTable;
export type DownloadFlags = FlagsOf<typeof DOWNLOAD_FLAGS>;

export const INFO_FLAGS = {
  data: flag.dataFlag(),
  tasks: flag.tasksFlag(),
  top: flag.count('--top <n>', 'labels shown per split', { min: 0, default: 3 }),
  json: flag.jsonFlag(),
} satisfies FlagTable;
export type InfoFlags = FlagsOf<typeof INFO_FLAGS>;

export async function runDownload(flags: DownloadFlags, io: CliIo): Promise<number> {
  const dir = resolveDataDir(flags.dir);
  const tasks = parseTaskList(flags.tasks).map((t) => t.name);
  io.log.info(`data folder: ${dir}`);
  io.log.info(
    'the RuMedBench data (sb-ai-lab/MedBench) is distributed under CC BY-NC 4.0: attribution, non-commercial use',
  );
  const reports = await downloadData({
    dir,
    tasks,
    logger: io.log,
    ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl } : {}),
  });
  const failed = reports.filter((r) => r.status === 'failed');
  io.out(
    `${renderTable(
      ['file', 'status', 'verified'],
      reports.map((r) => [
        r.path,
        r.status,
        // A file that failed was not verified, whatever checksum the manifest knows for it.
        r.status === 'failed'
          ? '–'
          : r.check === 'git blob'
            ? 'git blob sha1'
            : r.verified
              ? 'sha256'
              : 'no checksum known',
      ]),
    )}\n`,
  );
  if (
    failed.length > 0 &&
    failed.length === reports.length &&
    failed.every((r) => /request failed/.test(r.error ?? ''))
  )
    io.log.error(
      'no file could be fetched: this machine may be offline or behind a proxy (set HTTPS_PROXY); or copy the data from a machine that has it and give --data DIR',
    );
  return failed.length > 0 ? EXIT.submissionErrors : EXIT.ok;
}

export async function runInfo(flags: InfoFlags, io: CliIo): Promise<number> {
  const dir = resolveDataDir(flags.data);
  const infos = await dataInfo(dir, { tasks: parseTaskList(flags.tasks), top: flags.top });
  if (flags.json) {
    io.out(`${JSON.stringify({ data_dir: dir, splits: infos })}\n`);
    return EXIT.ok;
  }
  const rows = infos.map((i) => [
    i.task,
    i.split,
    i.status === 'ok' ? String(i.records) : i.status.toUpperCase(),
    i.status === 'ok' ? (i.withGold === i.records ? 'yes' : i.withGold === 0 ? 'no' : `${i.withGold}`) : '',
    i.distinctLabels !== undefined && i.withGold ? String(i.distinctLabels) : '',
    (i.topLabels ?? []).map((l) => `${l.label} ${l.count}`).join(', '),
    i.length ? `${i.length.median} / ${Math.round(i.length.mean)} / ${i.length.max} ${i.length.unit}` : '',
  ]);
  io.out(`data folder: ${dir}\n\n`);
  io.out(
    `${renderTable(['task', 'split', 'records', 'gold', 'labels', 'top labels', 'length median/mean/max'], rows)}\n`,
  );
  for (const i of infos.filter((x) => x.status !== 'ok')) io.log.warn(`${i.file}: ${i.status}: ${i.problem}`);
  return EXIT.ok;
}
