/**
 * The platform's allow-list against an attacker who registers a model server: a name that resolves to this machine
 * is refused when added; a name that passed when added and resolves to 127.0.0.1 later never leads a worker to a
 * loopback listener (it counts its connections: none); and no endpoint names a variable the workers hold for
 * themselves.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../../test/helpers/engines.js';
import { fixtureDataDir } from '../../test/helpers/fixture-data.js';
import type { Resolve } from '../data/public-address.js';
import { createLogger } from '../log.js';
import { addEndpoint, checkEndpoint, type Endpoint, listEndpoints, vetEndpoint } from './endpoints.js';
import { openQueue, SCHEMA } from './store.js';
import { enqueuePlan, queuedCells } from './submit.js';
import { Worker } from './worker.js';

const resolvesTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

const endpoint = (over: Partial<Endpoint> = {}): Endpoint => ({
  name: 'team-model',
  provider: 'openai',
  base_url: 'http://model.example:8000/v1',
  model: 'm',
  api_key_env: null,
  ...over,
});

describe('endpoint add: the host resolved, every address checked', () => {
  it('refuses a name that resolves to loopback (or to a public and a private address); allows it with --allow-private', async () => {
    const refused = await vetEndpoint(endpoint(), {
      resolve: resolvesTo('93.184.216.34', '127.0.0.1'),
    }).catch((e: Error) => e.message);
    expect(refused).toBe(
      '--base-url: model.example resolves to 127.0.0.1, which is a loopback address (this machine); pass --allow-private if the model server really is there',
    );
    expect(await vetEndpoint(endpoint(), { resolve: resolvesTo('93.184.216.34') })).toEqual({
      ...endpoint(),
      allow_private: false,
    });
    expect(await vetEndpoint(endpoint(), { allowPrivate: true, resolve: resolvesTo('127.0.0.1') })).toEqual({
      ...endpoint(),
      allow_private: true,
    });
  });

  it('refuses every spelling the attacker tried, by its text', () => {
    const urls = [
      'http://localhost.:8000/v1',
      'http://[::7f00:1]:8000/v1',
      'http://[::ffff:0:7f00:1]:8000/v1',
      'http://[fec0::1]/v1',
      'http://100.100.100.200/v1',
      'http://[fd00:ec2::254]/v1',
      'http://[64:ff9b::a9fe:a9fe]/v1',
      'http://[2002:a9fe:a9fe::]/v1',
    ];
    const problems = urls.map((u) => {
      try {
        checkEndpoint(endpoint({ base_url: u }));
        return 'accepted';
      } catch (e) {
        return /^--base-url: .*(; pass --allow-private if the model server really is there|: a cloud's metadata or platform service is never a model server)$/.test(
          (e as Error).message,
        )
          ? 'refused'
          : (e as Error).message;
      }
    });
    expect(problems).toEqual(urls.map(() => 'refused'));
  });

  // Issue #57, finding 5: Azure's wireserver and port 0 passed `endpoint add`; --allow-private lifted every check.
  it('refuses every documented cloud metadata or platform address, and port 0, even with --allow-private', async () => {
    const urls = [
      'http://168.63.129.16/v1',
      'http://169.254.169.254/v1',
      'http://[fd00:ec2::254]/v1',
      'http://100.100.100.200/v1',
      'http://169.254.170.2/v1',
      'http://169.254.170.23/v1',
      'http://[fd00:ec2::23]/v1',
      'http://[fd20:ce::254]/v1',
      'http://169.254.0.23/v1',
      'http://[fd00:c1::a9fe:a9fe]/v1',
      'http://192.0.0.192/v1',
      'http://[::ffff:168.63.129.16]/v1',
      'http://[64:ff9b::a83f:8110]/v1',
      'http://metadata.google.internal/v1',
      'http://metadata.tencentyun.com/v1',
      'http://model.example:0/v1',
    ];
    const outcome = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (e) {
        return /^--base-url: /.test((e as Error).message) && !/allow-private/.test((e as Error).message)
          ? 'refused'
          : (e as Error).message;
      }
    };
    for (const allowPrivate of [false, true])
      expect(
        urls.map((u) => outcome(() => checkEndpoint(endpoint({ base_url: u }), { allowPrivate }))),
      ).toEqual(urls.map(() => 'refused'));
    expect(outcome(() => checkEndpoint(endpoint({ base_url: 'http://168.63.129.16/v1' })))).toBe('refused');
    expect(
      (() => {
        try {
          checkEndpoint(endpoint({ base_url: 'http://168.63.129.16/v1' }), { allowPrivate: true });
          return 'accepted';
        } catch (e) {
          return (e as Error).message;
        }
      })(),
    ).toBe(
      "--base-url: 168.63.129.16 is Azure's platform wireserver (learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16): a cloud's metadata or platform service is never a model server",
    );
    // A name is judged by what it resolves to, with --allow-private too.
    const viaName = await vetEndpoint(endpoint(), {
      allowPrivate: true,
      resolve: resolvesTo('10.0.0.5', '169.254.169.254'),
    }).catch((e: Error) => e.message);
    expect(viaName).toMatch(
      /^--base-url: model\.example resolves to 169\.254\.169\.254, which is the instance metadata/,
    );
    // A private model server stays allowed with --allow-private.
    expect(
      (await vetEndpoint(endpoint(), { allowPrivate: true, resolve: resolvesTo('10.0.0.5') })).allow_private,
    ).toBe(true);
  });

  it('refuses a key variable the workers hold for themselves, in one line naming it', () => {
    const names = [
      'DATABASE_URL',
      'PGPASSWORD',
      'AWS_SECRET_ACCESS_KEY',
      'RUMEDBENCH_X',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'AZURE_CLIENT_SECRET',
    ];
    const messages = names.map((n) => {
      try {
        checkEndpoint(endpoint({ api_key_env: n }), { allowPrivate: true });
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    });
    for (const [i, n] of names.entries()) {
      expect(messages[i]).toMatch(new RegExp(`^--api-key-env ${n}: `));
      expect(messages[i]).not.toContain('\n');
    }
    expect(messages[1]).toBe(
      "--api-key-env PGPASSWORD: PGPASSWORD is one of the workers' own variables (the queue's database, PG*, cloud credentials AWS_*, GOOGLE_*/GCP_*, AZURE_*, RUMEDBENCH_*, …), never sent to a model server: keep the model's key in a variable of its own",
    );
    expect(checkEndpoint(endpoint({ api_key_env: 'TEAM_MODEL_KEY' })).api_key_env).toBe('TEAM_MODEL_KEY');
  });
});

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe.skipIf(!PG_URL)('a worker at connection time (PostgreSQL)', () => {
  it('a name that passed at endpoint add but resolves to 127.0.0.1 later: no connection reaches the loopback listener', async () => {
    let connections = 0;
    const listener = createServer((_req, res) => res.end('{}'));
    listener.on('connection', () => connections++);
    servers.push(listener);
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
    const base = `http://model.example:${(listener.address() as AddressInfo).port}/v1`;

    const url = await freshDatabase('postgres');
    const queue = await openQueue(url);
    const lines: string[] = [];
    const log = createLogger('info', (l) => lines.push(l));
    try {
      // When added, the name resolved to a public address.
      await addEndpoint(queue, endpoint({ base_url: base }), { resolve: resolvesTo('93.184.216.34') });
      expect((await listEndpoints(queue)).map((e) => e.allow_private)).toEqual([false]);
      const plan = join(mkdtempSync(join(tmpdir(), 'rumedbench-guard-')), 'plan.yaml');
      writeFileSync(
        plan,
        [
          'name: guard',
          'split: test',
          'tasks: [RuMedDaNet]',
          `data: ${fixtureDataDir()}`,
          'defaults: {temperature: 0, max_tokens: 16, concurrency: 2, bootstrap: 0}',
          'models:',
          `  - {name: team-model, provider: openai, base_url: "${base}", model: m}`,
          '',
        ].join('\n'),
      );
      const evaluation = async () => {
        const p = await queuedCells(plan, log);
        return enqueuePlan(queue, {
          name: p.plan.name,
          file: p.plan.file,
          sha256: 'x',
          maxInFlight: 8,
          cells: p.queued,
          jobSize: 200,
          kind: 'evaluation',
        });
      };
      // Now it resolves to this machine: the worker without --allow-private, and one with it (the endpoint was
      // not added with it), both refuse at connection.
      for (const allowPrivate of [false, true]) {
        const { id } = await evaluation();
        await new Worker({
          db: queue,
          exitWhenIdle: true,
          heartbeatS: 1,
          log,
          allowPrivate,
          resolve: resolvesTo('127.0.0.1'),
        }).run();
        const cells = await queue.pool.query<{ status: string; error: string }>(
          `SELECT status, error FROM ${SCHEMA}.cells WHERE plan_id = $1`,
          [id],
        );
        expect(cells.rows).toEqual([
          {
            status: 'failed',
            error: `${base}/chat/completions: not connected: model.example resolves to 127.0.0.1, which is a loopback address (this machine); a worker connects only to public addresses: start it with --allow-private if the model server really is on this machine or its network (and, for the platform's evaluations, add its endpoint with --allow-private)`,
          },
        ]);
      }
      expect(connections).toBe(0);

      // A server off the list is refused by the allow-list first, whatever the worker allows.
      writeFileSync(plan, readFileSync(plan, 'utf8').replace('model: m}', 'model: not-listed}'));
      const { id } = await evaluation();
      await new Worker({
        db: queue,
        exitWhenIdle: true,
        heartbeatS: 1,
        log,
        resolve: resolvesTo('127.0.0.1'),
      }).run();
      const off = await queue.pool.query<{ error: string }>(
        `SELECT error FROM ${SCHEMA}.cells WHERE plan_id = $1`,
        [id],
      );
      expect(off.rows).toEqual([
        {
          error: `refused: ${base} (model not-listed) is not on the platform's allow-list (rumedbench serve endpoint add)`,
        },
      ]);
      expect(connections).toBe(0);
    } finally {
      await queue.close();
    }
  });
});

if (!PG_URL) describe('a worker at connection time (PostgreSQL)', () => it.skip(NO_PG_REASON, () => {}));
