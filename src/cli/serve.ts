/** `rumedbench serve` and its admin commands: thin wrappers over the leaderboard service. */
import { writeFileSync } from 'node:fs';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { renderTable } from '../report/table.js';
import { campaignsOf } from '../server/campaigns/service.js';
import * as q from '../server/db/queries.js';
import { HttpError } from '../server/errors.js';
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
  tokenPerMinute: number;
  quotaPerDay: number;
  maxUploadMb: number;
  threads?: number;
  trustProxy?: boolean;
  secureCookies?: boolean;
  publicUrl?: string;
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
    tokenPerMinute: flags.tokenPerMinute,
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
    ...(flags.publicUrl ? { publicUrl: flags.publicUrl } : {}),
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

export interface CampaignFlags {
  task: string;
  split: 'test' | 'private_test';
  items: string;
  overlap: number;
  seed: number;
  annotators: number;
  name?: string;
  baseUrl: string;
  data?: string;
  db?: string;
}

export async function runCampaignCreate(flags: CampaignFlags, io: CliIo): Promise<number> {
  const items = flags.items === 'all' ? 'all' : Number(flags.items);
  if (items !== 'all' && (!Number.isInteger(items) || items < 1))
    throw new UsageError('--items: a positive number, or all');
  let base: URL;
  try {
    base = new URL(flags.baseUrl);
  } catch {
    throw new UsageError(`--base-url must be a URL, got "${flags.baseUrl}"`);
  }
  const { campaign, invitations } = await withLeaderboard(flags, (lb) =>
    campaignsOf(lb)
      .create({
        task: flags.task,
        split: flags.split,
        items,
        overlap: flags.overlap,
        seed: flags.seed,
        annotators: flags.annotators,
        ...(flags.name ? { name: flags.name } : {}),
      })
      .catch((e: unknown) => {
        throw e instanceof HttpError ? new UsageError(e.message) : e;
      }),
  );
  io.out(
    `campaign ${campaign.id}: ${campaign.name}, ${(JSON.parse(campaign.items) as string[]).length} items, overlap ${campaign.overlap}\n` +
      `${renderTable(
        ['annotator', 'invitation link (shown once)'],
        invitations.map((i) => [i.label, new URL(`/annotate/${i.token}`, base).toString()]),
        2,
      )}\n`,
  );
  return EXIT.ok;
}

export async function runCampaignAction(
  action: 'list' | 'close' | 'publish' | 'export',
  id: string | undefined,
  flags: { data?: string; db?: string; out?: string },
  io: CliIo,
): Promise<number> {
  return withLeaderboard(flags, async (lb) => {
    const campaigns = campaignsOf(lb);
    try {
      if (action === 'list') {
        const rows = await campaigns.list();
        io.out(
          `${renderTable(
            ['id', 'name', 'task', 'split', 'items', 'overlap', 'status'],
            rows.map((c) => [
              c.id,
              c.name,
              c.task,
              c.split,
              String((JSON.parse(c.items) as string[]).length),
              String(c.overlap),
              c.status,
            ]),
            4,
          )}\n`,
        );
      } else if (action === 'close') {
        await campaigns.setStatus(id as string, 'closed');
        io.out(`closed ${id}: its links no longer work\n`);
      } else if (action === 'publish') {
        const sid = await campaigns.publish(id as string);
        const d = await campaigns.detail(id as string);
        io.out(
          `published as submission ${sid}: ${d.coverage.answered} of ${d.coverage.sampled} items; observed agreement ${
            d.agreement.observed === null ? '–' : (100 * d.agreement.observed).toFixed(1)
          }%\n`,
        );
      } else {
        const text = await campaigns.export(id as string);
        if (flags.out) writeFileSync(flags.out, text);
        else io.out(text);
      }
    } catch (e) {
      throw e instanceof HttpError ? new UsageError(e.message) : e;
    }
    return EXIT.ok;
  });
}
