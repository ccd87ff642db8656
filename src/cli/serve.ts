/**
 * `rumedbench serve` and its admin commands: their flags, declared once, and thin wrappers over the leaderboard
 * service. The server's modules (Hono, Kysely, the database drivers, the worker pool) load when a command runs, so
 * that the program starts without them.
 */
import { writeFileSync } from 'node:fs';
import { resolveDataDir } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { renderTable } from '../report/table.js';
import { parseTrustedProxies, type TrustedProxies } from '../server/client-address.js';
import { HttpError } from '../server/errors.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

const server = async () => {
  const [serve, upload] = await Promise.all([import('../server/serve.js'), import('../server/upload.js')]);
  return { ...serve, DEFAULT_LIMITS: upload.DEFAULT_LIMITS };
};

/** Every serve command takes these. */
export const DB_FLAGS = {
  data: flag.dataFlag(),
  db: flag.text(
    '--db <file|url>',
    'SQLite file or postgres:// URL (default: $DATABASE_URL, else the user data folder)',
  ),
} satisfies FlagTable;
export type DbFlags = FlagsOf<typeof DB_FLAGS>;

export const IMPORT_GOLD_FLAGS = {
  ...DB_FLAGS,
  split: flag.choice(
    '--split <split>',
    "the split the gold is of: private_test, the closed tests'; test, a public-board task whose test records only its host holds (ECG2Pathology)",
    ['private_test', 'test'],
    { default: 'private_test' },
  ),
} satisfies FlagTable;

export const SERVE_FLAGS = {
  ...DB_FLAGS,
  port: flag.count('--port <n>', 'port', { min: 0, default: 8080 }),
  host: flag.text('--host <host>', 'address to listen on', { default: '127.0.0.1' }),
  anonymous: flag.on('--no-anonymous', 'refuse uploads without a team token'),
  anonymousPerMinute: flag.count('--anonymous-per-minute <n>', 'anonymous uploads per address and minute', {
    min: 1,
    default: 20,
  }),
  tokenPerMinute: flag.count(
    '--token-per-minute <n>',
    'uploads per team token and minute (rejected ones count too)',
    {
      min: 1,
      default: 60,
    },
  ),
  apiPerMinute: flag.count(
    '--api-per-minute <n>',
    "reads of a board's JSON API and CSV export per address (IPv6: /64) and minute (0: no limit)",
    { min: 0, default: 120 },
  ),
  quotaPerDay: flag.count(
    '--quota-per-day <n>',
    'uploads per token and per address (IPv6: /64) and UTC day, any board; rejected public ones are given back (0: no quota)',
    { min: 0, default: 0 },
  ),
  closedQuotaPerDay: flag.count(
    '--closed-quota-per-day <n>',
    'uploads on hidden gold (the closed board; a host-held public test, ECG2Pathology) per token and per address and UTC day, rejected ones too (0: no quota)',
    { min: 0, default: 5 },
  ),
  closedAnonymous: flag.on(
    '--closed-anonymous',
    'take anonymous uploads on hidden gold too (each address then climbs a ladder of its own: an attacker with two addresses learns single items by comparing their first releases)',
  ),
  closedRelease: flag.choice(
    '--closed-release <how>',
    'closed-board scores: ladder (released only when a team beats its best by a standard error) or exact',
    ['ladder', 'exact'],
    { default: 'ladder' },
  ),
  maxUploadMb: flag.count('--max-upload-mb <n>', 'largest request body, MiB', { min: 1, default: 16 }),
  threads: flag.count('--threads <n>', 'scoring workers', { min: 1 }),
  trustedProxies: flag.custom(
    '--trusted-proxies <list>',
    "your proxies' addresses and networks, comma-separated (10.0.0.0/8,::1; loopback, private_ranges): X-Forwarded-For is read only from their connections; a bare count n (X-Forwarded-For's n-th value from the right, from whoever connects) is taken with a warning (0: the peer)",
    (v) => {
      try {
        return parseTrustedProxies(v);
      } catch (e) {
        throw new UsageError(`--trusted-proxies: ${(e as Error).message}`);
      }
    },
    { default: 0 as TrustedProxies },
  ),
  trustProxy: flag.on(
    '--trust-proxy',
    "the same as --trusted-proxies 1 (a hop count: warned about; give the proxy's address with --trusted-proxies instead)",
  ),
  secureCookies: flag.on('--secure-cookies', 'mark cookies Secure (when served over HTTPS)'),
  publicUrl: flag.text(
    '--public-url <url>',
    'the address browsers use (behind a proxy): only its Host is answered, forms must come from its origin',
  ),
  logFormat: flag.choice(
    '--log-format <format>',
    'text: each line after its ISO 8601 time; json: one object a line (time, level, msg)',
    ['text', 'json'],
    { default: 'text' },
  ),
  metricsPort: flag.count(
    '--metrics-port <n>',
    'serve Prometheus metrics (/metrics, with /healthz and /readyz) on this port of 127.0.0.1 (default: off)',
    { min: 0 },
  ),
} satisfies FlagTable;
export type ServeFlags = FlagsOf<typeof SERVE_FLAGS>;

export const TOKEN_CREATE_FLAGS = {
  ...DB_FLAGS,
  team: flag.text('--team <name>', 'team', { required: true }),
};
export const CAMPAIGN_CREATE_FLAGS = {
  ...DB_FLAGS,
  task: flag.text('--task <task>', 'the task to annotate', { required: true }),
  split: flag.choice('--split <split>', 'test or private_test', ['test', 'private_test'], {
    default: 'test',
  }),
  items: flag.text('--items <n>', 'items to sample (stratified by gold label where known), or all', {
    default: 'all',
  }),
  overlap: flag.count('--overlap <k>', 'annotators per item', { min: 1, default: 1 }),
  annotators: flag.count('--annotators <n>', 'annotators', { min: 1, default: 3 }),
  seed: flag.seedFlag('seed of the sample and the assignment'),
  name: flag.text('--name <text>', 'a name for the campaign'),
  baseUrl: flag.text('--base-url <url>', 'the address annotators reach', {
    default: 'http://127.0.0.1:8080',
  }),
} satisfies FlagTable;
export type CampaignFlags = FlagsOf<typeof CAMPAIGN_CREATE_FLAGS>;
export const CAMPAIGN_EXPORT_FLAGS = {
  ...DB_FLAGS,
  out: flag.text('--out <file>', 'write to a file instead of stdout'),
};

/** `--db`, else DATABASE_URL, else an SQLite file in the per-user data folder. */
const dbTarget = async (flag: string | undefined): Promise<string> =>
  flag ?? (process.env.DATABASE_URL || undefined) ?? (await server()).defaultDbFile();

export async function runServe(flags: ServeFlags, given: CliIo): Promise<number> {
  // A server runs for days: every line says when, or is one JSON object.
  const io: CliIo = {
    ...given,
    log: given.log.as?.(flags.logFormat === 'json' ? 'json' : 'time') ?? given.log,
  };
  // The server's PostgreSQL connections (the board's and the queue's) name themselves in pg_stat_activity.
  process.env.PGAPPNAME ||= 'rumedbench-serve';
  const maxBodyBytes = flags.maxUploadMb * (1 << 20);
  const { startServer, DEFAULT_LIMITS, SHUTDOWN_GRACE_MS } = await server();
  const running = await startServer({
    dataDir: resolveDataDir(flags.data),
    db: await dbTarget(flags.db),
    host: flags.host,
    port: flags.port,
    anonymous: flags.anonymous,
    anonymousPerMinute: flags.anonymousPerMinute,
    tokenPerMinute: flags.tokenPerMinute,
    apiPerMinute: flags.apiPerMinute,
    quotaPerDay: flags.quotaPerDay,
    closedQuotaPerDay: flags.closedQuotaPerDay,
    closedAnonymous: flags.closedAnonymous,
    closedRelease: flags.closedRelease,
    limits: {
      ...DEFAULT_LIMITS,
      maxBodyBytes,
      maxFileBytes: maxBodyBytes * 2,
      maxTotalBytes: maxBodyBytes * 4,
    },
    log: io.log,
    ...(process.env.RUMEDBENCH_ADMIN_TOKEN ? { adminToken: process.env.RUMEDBENCH_ADMIN_TOKEN } : {}),
    ...(flags.threads !== undefined ? { threads: flags.threads } : {}),
    trustedProxies:
      flags.trustProxy && typeof flags.trustedProxies === 'number'
        ? Math.max(1, flags.trustedProxies)
        : flags.trustedProxies,
    ...(flags.secureCookies ? { secureCookies: true } : {}),
    ...(flags.publicUrl ? { publicUrl: flags.publicUrl } : {}),
    ...(flags.metricsPort !== undefined ? { metricsPort: flags.metricsPort } : {}),
  });
  await new Promise<void>((resolve) => {
    let stopping = false;
    // The first signal stops: new connections refused, idle ones closed, requests under way given the grace period,
    // then cut; the database then closed, for a few seconds at most. A second signal exits at once.
    const stop = () => {
      if (stopping) {
        io.log.warn('second signal: exiting now');
        process.exit(EXIT.ok);
      }
      stopping = true;
      io.log.info(`stopping… (requests under way get ${SHUTDOWN_GRACE_MS / 1000} s)`);
      setTimeout(() => {
        io.log.warn('the database did not close in time; exiting');
        process.exit(EXIT.ok);
      }, SHUTDOWN_GRACE_MS + 5000).unref();
      running.close().then(resolve, resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return EXIT.ok;
}

type Server = Awaited<ReturnType<typeof server>>;

/** Opens the leaderboard's services on the database for one admin command: the command calls them, never SQL. */
async function withLeaderboard<T>(
  flags: DbFlags,
  f: (lb: Awaited<ReturnType<Server['openLeaderboard']>>) => Promise<T>,
) {
  const s = await server();
  const lb = await s.openLeaderboard({
    dataDir: resolveDataDir(flags.data),
    db: await dbTarget(flags.db),
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
  flags: FlagsOf<typeof IMPORT_GOLD_FLAGS>,
  io: CliIo,
): Promise<number> {
  const r = await withLeaderboard(flags, (lb) => lb.gold.importGold(dir, { split: flags.split }));
  io.out(
    `${renderTable(
      ['task', 'answers'],
      Object.entries(r.tasks).map(([t, n]) => [t, String(n)]),
    )}\nimported (${r.split}); ${r.rescored} ${r.board}-board submission(s) re-scored\n`,
  );
  return EXIT.ok;
}

export async function runTokenCreate(flags: FlagsOf<typeof TOKEN_CREATE_FLAGS>, io: CliIo): Promise<number> {
  const { id, token, team, warning } = await withLeaderboard(flags, (lb) => lb.admin.createToken(flags.team));
  io.out(`team:  ${team}\nid:    ${id}\ntoken: ${token}\n`);
  if (warning) io.log.warn(warning.message);
  io.log.info(
    'the token is shown once and stored only as a hash; send it as "Authorization: Bearer <token>"',
  );
  return EXIT.ok;
}

export async function runTokenRevoke(id: string, flags: DbFlags, io: CliIo): Promise<number> {
  const ok = await withLeaderboard(flags, (lb) => lb.admin.revokeToken(id));
  if (!ok) throw new UsageError(`no active token with id ${id}`);
  io.out(`revoked ${id}\n`);
  return EXIT.ok;
}

export async function runTokenList(flags: DbFlags, io: CliIo): Promise<number> {
  // Teams named before names were cleaned come cleaned (`tokens`): a name must not act on the terminal.
  const tokens = await withLeaderboard(flags, (lb) => lb.admin.tokens());
  io.out(
    `${renderTable(
      ['id', 'team', 'created', 'revoked'],
      tokens.map((t) => [t.id, t.team, t.created_at, t.revoked_at ?? '']),
      4,
    )}\n`,
  );
  return EXIT.ok;
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
    lb.campaigns
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
  flags: DbFlags & { out?: string | undefined },
  io: CliIo,
): Promise<number> {
  return withLeaderboard(flags, async (lb) => {
    const campaigns = lb.campaigns;
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
