/**
 * `rumedbench serve` as a process: the admin commands, a server killed with SIGKILL under a stream of uploads
 * (every upload answered 201 is there exactly once after a restart), and two server processes on one PostgreSQL
 * database serving one board.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbenchWith as rumedbenchEnv } from '../helpers/cli.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';
import { eventually, startServe as startServeOn, TEST_ADMIN_TOKEN, uploadTo } from '../helpers/server.js';

/** The suite's data and uploads: a small folder and predictions the tests write, not ../shared. */
const DATA = { RUMEDBENCH_DATA: fixtureDataDir() };
const PREDICTIONS = writeFixturePredictions(
  DATA.RUMEDBENCH_DATA,
  mkdtempSync(join(tmpdir(), 'rumedbench-serve-p-')),
);
const danet = () => ({ name: 'RuMedDaNet.jsonl', data: readFileSync(join(PREDICTIONS, 'RuMedDaNet.jsonl')) });
const startServe = (args: string[], env: NodeJS.ProcessEnv = {}) => startServeOn(args, { ...DATA, ...env });
const rumedbench = (...args: string[]) => rumedbenchEnv(DATA, ...args);
const rumedbenchWith = (env: NodeJS.ProcessEnv, ...args: string[]) =>
  rumedbenchEnv({ ...DATA, ...env }, ...args);
const sqliteFile = () => join(mkdtempSync(join(tmpdir(), 'rumedbench-serve-')), 'board.sqlite');

describe('rumedbench serve (on fixture data the test writes)', () => {
  it('refuses a weak admin token, and manages team tokens from the command line', async () => {
    const db = sqliteFile();
    const refused = await rumedbenchWith(
      { RUMEDBENCH_ADMIN_TOKEN: 'password' },
      'serve',
      '--db',
      db,
      '--port',
      '0',
    );
    expect([refused.code, refused.stderr.trim()]).toEqual([
      1,
      'error: RUMEDBENCH_ADMIN_TOKEN: the admin secret is refused: it has 8 characters; at least 24 are needed',
    ]);

    const created = await rumedbench('serve', 'token', 'create', '--team', 'Team A', '--db', db);
    expect(created.code).toBe(0);
    const token = /token: (rmb_\S+)/.exec(created.stdout)?.[1] as string;
    const id = /id: +(\S+)/.exec(created.stdout)?.[1] as string;
    expect(token).toMatch(/^rmb_[\w-]{43}$/);
    const list = await rumedbench('serve', 'token', 'list', '--db', db);
    expect(list.stdout).toContain(`${id}  Team A`);
    const server = await startServe(['--db', db, '--no-anonymous']);
    try {
      const anon = await uploadTo(server.url, [danet()], { model: 'm', kind: 'LLM' });
      expect([anon.status, anon.body.code]).toEqual([401, 'TOKEN_REQUIRED']);
      const ok = await uploadTo(
        server.url,
        [danet()],
        { model: 'm', kind: 'LLM' },
        { authorization: `Bearer ${token}` },
      );
      expect([ok.status, ok.body.status]).toEqual([201, 'scored']);
      expect((await rumedbench('serve', 'token', 'revoke', id, '--db', db)).code).toBe(0);
      const revoked = await uploadTo(
        server.url,
        [danet()],
        { model: 'm', kind: 'LLM' },
        { authorization: `Bearer ${token}` },
      );
      expect(revoked.status).toBe(401);
    } finally {
      await server.stop();
    }
    expect((await rumedbench('serve', 'token', 'revoke', id, '--db', db)).stderr).toContain(
      `no active token with id ${id}`,
    );
  });

  it('says in one line that its port is in use, and exits 1', async () => {
    const held = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => held.once('listening', r));
    const port = String((held.address() as AddressInfo).port);
    try {
      const r = await rumedbenchWith(
        { RUMEDBENCH_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
        'serve',
        '--db',
        sqliteFile(),
        '--port',
        port,
      );
      expect([r.code, r.stderr.trim()]).toEqual([
        1,
        `error: cannot listen on 127.0.0.1:${port}: the port is in use (another server, or an earlier one still running); give another --port`,
      ]);
    } finally {
      held.close();
    }
  });

  it('loses nothing when killed with SIGKILL under a stream of uploads: each answered upload is there once', async () => {
    const db = sqliteFile();
    const args = ['--db', db, '--anonymous-per-minute', '100000', '--threads', '2'];
    let server = await startServe(args);
    const answered = new Map<string, string>(); // key → id
    const sent = new Set<string>();
    let killed = false;
    const client = async (c: number) => {
      for (let i = 0; i < 40 && !killed; i++) {
        const key = `k-${c}-${i}`;
        sent.add(key);
        try {
          const r = await uploadTo(
            server.url,
            [danet()],
            { model: key, kind: 'LLM' },
            { 'idempotency-key': key },
          );
          if (r.status === 201) answered.set(key, r.body.id as string);
        } catch {
          return; // the connection died with the server
        }
      }
    };
    const clients = Promise.all([0, 1, 2, 3, 4, 5].map(client));
    while (answered.size < 20) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGKILL');
    killed = true;
    await clients;
    const before = new Map(answered);
    expect(before.size).toBeGreaterThanOrEqual(20);

    server = await startServe(args);
    try {
      for (const [, id] of before) {
        const r = await fetch(`${server.url}/api/submissions/${id}`);
        expect(r.status).toBe(200);
      }
      // Every key sent, sent again: those that landed are answered from the first time, the rest land now; once each.
      for (const key of sent) {
        const r = await uploadTo(
          server.url,
          [danet()],
          { model: key, kind: 'LLM' },
          { 'idempotency-key': key },
        );
        expect([200, 201]).toContain(r.status);
        if (before.has(key)) expect([r.status, r.body.id]).toEqual([200, before.get(key)]);
      }
      const board = (await (await fetch(`${server.url}/api/boards/public`)).json()) as {
        entries: { model: string }[];
      };
      const models = board.entries.map((e) => e.model).sort();
      expect(models).toEqual([...sent].sort());
    } finally {
      await server.stop();
    }
  }, 120_000);

  describe.skipIf(!PG_URL)(`on PostgreSQL (${PG_URL ? 'server found' : NO_PG_REASON})`, () => {
    it('runs two server processes on one database as one service', async () => {
      const db = await freshDatabase('postgres');
      // Started together: the migrations run once, under the migrator's lock.
      const [a, b] = await Promise.all([startServe(['--db', db]), startServe(['--db', db])]);
      try {
        const uploads = await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            uploadTo(i % 2 ? a.url : b.url, [danet()], {
              model: `m${String(i).padStart(2, '0')}`,
              kind: 'LLM',
            }),
          ),
        );
        expect(uploads.map((u) => u.status)).toEqual(Array(16).fill(201));
        const boardOf = async (url: string) =>
          (
            (await (await fetch(`${url}/api/boards/public`)).json()) as {
              entries: { id: string; model: string }[];
            }
          ).entries;
        // Each process shows its own uploads at once and the other's once its cache of the board is checked again.
        const all = (entries: { model: string }[]) => entries.length === 16;
        const [onA, onB] = [
          await eventually(() => boardOf(a.url), all),
          await eventually(() => boardOf(b.url), all),
        ];
        expect(onA.map((e) => e.model).sort()).toEqual(
          Array.from({ length: 16 }, (_, i) => `m${String(i).padStart(2, '0')}`),
        );
        expect(onB).toEqual(onA);
        // A session made by one process is good on the other: one key, kept in the database.
        const login = await fetch(`${a.url}/admin/login`);
        const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
        const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())?.[1] as string;
        const signed = await fetch(`${a.url}/admin/login`, {
          method: 'POST',
          body: new URLSearchParams({ _csrf: csrf, token: TEST_ADMIN_TOKEN }),
          headers: { cookie },
          redirect: 'manual',
        });
        const session = (signed.headers.get('set-cookie') ?? '').split(';')[0] as string;
        const onOther = await fetch(`${b.url}/admin`, { headers: { cookie: session }, redirect: 'manual' });
        expect(onOther.status).toBe(200);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    }, 120_000);

    it('fails loudly, not quietly, when its database cannot be reached', async () => {
      const r = await rumedbenchWith(
        { RUMEDBENCH_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
        'serve',
        '--db',
        'postgres://nobody@127.0.0.1:1/none',
        '--port',
        '0',
      );
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        'error: cannot open the database postgres://nobody@127.0.0.1:1/none: connect ECONNREFUSED 127.0.0.1:1; nothing accepts connections at 127.0.0.1:1: start PostgreSQL there, or correct the host and port in --db',
      );
    });
  });
});
