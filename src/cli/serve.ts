/** `rumedbench serve` and its admin commands: thin wrappers over the leaderboard service. */
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { renderTable } from '../report/table.js';
import * as q from '../server/db/queries.js';
import { defaultDbFile, openLeaderboard, startServer } from '../server/serve.js';
import { DEFAULT_LIMITS } from '../server/upload.js';
import { type CliIo, EXIT } from './io.js';

export interface ServeFlags {
  data?: string;
  db?: string;
  port: number;
  host: string;
  anonymous: boolean;
  anonymousPerMinute: number;
  quotaPerDay: number;
  maxUploadMb: number;
  threads?: number;
  trustProxy?: boolean;
  secureCookies?: boolean;
}

/** `--db`, else DATABASE_URL, else an SQLite file in the per-user data folder. */
export const dbTarget = (flag: string | undefined): string =>
  flag ?? (process.env.DATABASE_URL || undefined) ?? defaultDbFile();

export async function runServe(flags: ServeFlags, io: CliIo): Promise<number> {
  const maxBodyBytes = flags.maxUploadMb * (1 << 20);
  const running = await startServer({
    dataDir: resolveDataDir(flags.data),
    db: dbTarget(flags.db),
    host: flags.host,
    port: flags.port,
    anonymous: flags.anonymous,
    anonymousPerMinute: flags.anonymousPerMinute,
    quotaPerDay: flags.quotaPerDay,
    limits: {
      ...DEFAULT_LIMITS,
      maxBodyBytes,
      maxFileBytes: maxBodyBytes * 2,
      maxTotalBytes: maxBodyBytes * 4,
    },
    log: io.log,
    ...(process.env.RUMEDBENCH_ADMIN_TOKEN ? { adminToken: process.env.RUMEDBENCH_ADMIN_TOKEN } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    ...(flags.trustProxy ? { trustProxy: true } : {}),
    ...(flags.secureCookies ? { secureCookies: true } : {}),
  });
  await new Promise<void>((resolve) => {
    const stop = () => {
      io.log.info('stopping…');
      running.close().then(resolve, resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return EXIT.ok;
}

async function withLeaderboard<T>(
  flags: { data?: string; db?: string },
  f: (lb: Awaited<ReturnType<typeof openLeaderboard>>) => Promise<T>,
) {
  const lb = await openLeaderboard({
    dataDir: resolveDataDir(flags.data),
    db: dbTarget(flags.db),
    threads: 1,
  });
  try {
    return await f(lb);
  } finally {
    await lb.close();
  }
}

export async function runImportGold(
  dir: string,
  flags: { data?: string; db?: string },
  io: CliIo,
): Promise<number> {
  const r = await withLeaderboard(flags, (lb) => lb.importGold(dir));
  io.out(
    `${renderTable(
      ['task', 'answers'],
      Object.entries(r.tasks).map(([t, n]) => [t, String(n)]),
    )}\nimported; ${r.rescored} closed-board submission(s) re-scored\n`,
  );
  return EXIT.ok;
}

export async function runTokenCreate(
  flags: { team: string; data?: string; db?: string },
  io: CliIo,
): Promise<number> {
  const { id, token } = await withLeaderboard(flags, (lb) => lb.createToken(flags.team));
  io.out(`team:  ${flags.team}\nid:    ${id}\ntoken: ${token}\n`);
  io.log.info(
    'the token is shown once and stored only as a hash; send it as "Authorization: Bearer <token>"',
  );
  return EXIT.ok;
}

export async function runTokenRevoke(
  id: string,
  flags: { data?: string; db?: string },
  io: CliIo,
): Promise<number> {
  const ok = await withLeaderboard(flags, (lb) => q.revokeToken(lb.db.db, id));
  if (!ok) throw new UsageError(`no active token with id ${id}`);
  io.out(`revoked ${id}\n`);
  return EXIT.ok;
}

export async function runTokenList(flags: { data?: string; db?: string }, io: CliIo): Promise<number> {
  const tokens = await withLeaderboard(flags, (lb) => q.listTokens(lb.db.db));
  io.out(
    `${renderTable(
      ['id', 'team', 'created', 'revoked'],
      tokens.map((t) => [t.id, t.team, t.created_at, t.revoked_at ?? '']),
      4,
    )}\n`,
  );
  return EXIT.ok;
}
