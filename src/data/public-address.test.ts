import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { resolver } from '../../test/helpers/resolver.js';
import {
  addressProblem,
  hostNameProblem,
  PrivateAddressError,
  platformAddressProblem,
  publicOnly,
  publicOnlyLookup,
  resolvedHostProblem,
} from './public-address.js';
import { send } from './transport.js';

const LOOPBACK = 'a loopback address (this machine)';
const LINK_LOCAL = 'a link-local address (where cloud metadata services answer, 169.254.169.254 among them)';
const IMDS =
  "the instance metadata service of AWS, Azure, Google Cloud, Oracle Cloud, IBM Cloud, DigitalOcean, OpenStack and others: a cloud's metadata or platform service is never a model server";
const PRIVATE = 'a private address (10/8, 172.16/12, 192.168/16)';

describe('addressProblem: every form that reaches this machine, a private network or a metadata service', () => {
  it('refuses each, saying which range (and which IPv4 address an IPv6 one carries)', () => {
    const refused = [
      '127.0.0.1',
      '127.1.2.3',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.100.100.200',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '240.0.0.1',
      '192.0.2.1',
      '::1',
      '::',
      '::7f00:1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:0:7f00:1',
      '::ffff:a9fe:a9fe',
      'fec0::1',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      'ff02::1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::7f00:1',
      '64:ff9b:1::a9fe:a9fe',
      '2002:a9fe:a9fe::',
      '2002:7f00:1::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '2001:db8::1',
      '4000::1',
      'not-an-address',
    ];
    expect(Object.fromEntries(refused.map((a) => [a, addressProblem(a)]))).toEqual({
      '127.0.0.1': `127.0.0.1 is ${LOOPBACK}`,
      '127.1.2.3': `127.1.2.3 is ${LOOPBACK}`,
      '0.0.0.0': '0.0.0.0 is the unspecified address (this machine)',
      '10.1.2.3': `10.1.2.3 is ${PRIVATE}`,
      '172.16.0.1': `172.16.0.1 is ${PRIVATE}`,
      '172.31.255.255': `172.31.255.255 is ${PRIVATE}`,
      '192.168.1.1': `192.168.1.1 is ${PRIVATE}`,
      '169.254.169.254': `169.254.169.254 is ${IMDS}`,
      '100.100.100.200':
        "100.100.100.200 is Alibaba Cloud's instance metadata service: a cloud's metadata or platform service is never a model server",
      '100.64.0.1':
        "100.64.0.1 is a shared (carrier-grade NAT) address, 100.64/10 (Alibaba Cloud's metadata service is at 100.100.100.200)",
      '224.0.0.1': '224.0.0.1 is a multicast address',
      '255.255.255.255': '255.255.255.255 is the broadcast address',
      '240.0.0.1': '240.0.0.1 is a reserved address',
      '192.0.2.1': '192.0.2.1 is a reserved address',
      '::1': `::1 is ${LOOPBACK}`,
      '::': ':: is the unspecified address (this machine)',
      '::7f00:1': `::7f00:1 carries 127.0.0.1 (IPv4-compatible, ::a.b.c.d), ${LOOPBACK}`,
      '::ffff:127.0.0.1': `::ffff:127.0.0.1 carries 127.0.0.1 (IPv4-mapped, ::ffff:a.b.c.d), ${LOOPBACK}`,
      '::ffff:7f00:1': `::ffff:7f00:1 carries 127.0.0.1 (IPv4-mapped, ::ffff:a.b.c.d), ${LOOPBACK}`,
      '::ffff:0:7f00:1': `::ffff:0:7f00:1 carries 127.0.0.1 (IPv4-translated, ::ffff:0:a.b.c.d), ${LOOPBACK}`,
      '::ffff:a9fe:a9fe': `::ffff:a9fe:a9fe carries 169.254.169.254 (IPv4-mapped, ::ffff:a.b.c.d), ${IMDS}`,
      'fec0::1': 'fec0::1 is a site-local address (fec0::/10)',
      'fe80::1': `fe80::1 is ${LINK_LOCAL}`,
      'fd00:ec2::254':
        "fd00:ec2::254 is AWS's IPv6 instance metadata service: a cloud's metadata or platform service is never a model server",
      'fc00::1':
        "fc00::1 is a unique-local address, fc00::/7 (AWS's IPv6 metadata service is at fd00:ec2::254)",
      'ff02::1': 'ff02::1 is a multicast address',
      '64:ff9b::a9fe:a9fe': `64:ff9b::a9fe:a9fe carries 169.254.169.254 (NAT64, 64:ff9b::/96), ${IMDS}`,
      '64:ff9b::7f00:1': `64:ff9b::7f00:1 carries 127.0.0.1 (NAT64, 64:ff9b::/96), ${LOOPBACK}`,
      '64:ff9b:1::a9fe:a9fe': '64:ff9b:1::a9fe:a9fe is a local-use NAT64 address (64:ff9b:1::/48)',
      '2002:a9fe:a9fe::': `2002:a9fe:a9fe:: carries 169.254.169.254 (6to4, 2002::/16), ${IMDS}`,
      '2002:7f00:1::1': `2002:7f00:1::1 carries 127.0.0.1 (6to4, 2002::/16), ${LOOPBACK}`,
      '2001:0:4136:e378:8000:63bf:3fff:fdd2':
        '2001:0:4136:e378:8000:63bf:3fff:fdd2 is a Teredo address (2001::/32)',
      '2001:db8::1': '2001:db8::1 is a reserved address',
      '4000::1': '4000::1 is outside the global unicast space (2000::/3)',
      'not-an-address': 'not-an-address is not an IP address',
    });
  });

  it('passes public addresses, in every form that carries one', () => {
    const pass = [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '100.63.255.255',
      '100.128.0.1',
      '172.32.0.1',
      '2001:4860:4860::8888',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '[2001:4860:4860::8888]',
    ];
    expect(pass.map((a) => [a, addressProblem(a)])).toEqual(pass.map((a) => [a, undefined]));
  });
});

describe('hostNameProblem: a host by its text', () => {
  it('refuses local and metadata names (trailing dots stripped) and refused literals, in URL spelling', () => {
    const hosts = [
      'localhost',
      'localhost.',
      'LOCALHOST..',
      'api.localhost',
      'metadata.google.internal.',
      'metadata',
      'instance-data.ec2.internal',
      '[::7f00:1]',
      '[::ffff:0:7f00:1]',
      '[fec0::1]',
      '100.100.100.200',
      '[fd00:ec2::254]',
      '[64:ff9b::a9fe:a9fe]',
      '[2002:a9fe:a9fe::]',
    ];
    expect(hosts.map((h) => [h, hostNameProblem(h) !== undefined])).toEqual(hosts.map((h) => [h, true]));
    expect(hostNameProblem('localhost.')).toBe('localhost. names this machine or a metadata service');
    expect(hostNameProblem('[::7f00:1]')).toBe(
      `::7f00:1 carries 127.0.0.1 (IPv4-compatible, ::a.b.c.d), ${LOOPBACK}`,
    );
    expect(['api.openai.com', 'gpu-1.example.org', '8.8.8.8'].map(hostNameProblem)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('resolvedHostProblem: a name is judged by every address it resolves to', () => {
  it('refuses a name with one refused address among public ones, and a name that does not resolve', async () => {
    const resolve = resolver({
      'public.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'mixed.example': ['93.184.216.34', '127.0.0.1'],
      'aws6.example': ['fd00:ec2::254'],
    });
    expect(
      await Promise.all(
        ['public.example', 'mixed.example', 'aws6.example', 'nowhere.example', 'localhost.'].map((h) =>
          resolvedHostProblem(h, resolve),
        ),
      ),
    ).toEqual([
      undefined,
      `mixed.example resolves to 127.0.0.1, which is ${LOOPBACK}`,
      "aws6.example resolves to fd00:ec2::254, which is AWS's IPv6 instance metadata service: a cloud's metadata or platform service is never a model server",
      'nowhere.example does not resolve (ENOTFOUND): its addresses cannot be checked',
      'localhost. names this machine or a metadata service',
    ]);
  });

  it('the connect-time lookup hands the socket only the checked addresses, or fails', async () => {
    const lookup = publicOnlyLookup(resolver({ 'a.example': ['8.8.8.8', '2001:4860:4860::8888'] }));
    const call = (host: string, options: { all?: boolean; family?: number }) =>
      new Promise<unknown>((r) => lookup(host, options, (e, address, family) => r(e ?? { address, family })));
    expect(await call('a.example', { all: true })).toEqual({
      address: [
        { address: '8.8.8.8', family: 4 },
        { address: '2001:4860:4860::8888', family: 6 },
      ],
      family: undefined,
    });
    expect(await call('a.example', { family: 6 })).toEqual({ address: '2001:4860:4860::8888', family: 6 });
    const turned = publicOnlyLookup(resolver({ 'a.example': ['8.8.8.8', '127.0.0.1'] }), 'the hint');
    const e = await new Promise<unknown>((r) => turned('a.example', { all: true }, (err) => r(err)));
    expect(e).toBeInstanceOf(PrivateAddressError);
    expect((e as PrivateAddressError).message).toBe(
      `a.example resolves to 127.0.0.1, which is ${LOOPBACK}; the hint`,
    );
  });
});

describe('the allow-private guard: a private network yes, a metadata service never (issue #57)', () => {
  it('hands the socket a private address, and refuses a name that resolves to a metadata or platform address', async () => {
    const lookup = publicOnlyLookup(
      resolver({ 'lan.example': ['10.1.2.3'], 'meta.example': ['10.1.2.3', '169.254.169.254'] }),
      'the hint',
      { allowPrivate: true },
    );
    const call = (host: string) =>
      new Promise<unknown>((r) => lookup(host, {}, (e, address, family) => r(e ?? { address, family })));
    expect(await call('lan.example')).toEqual({ address: '10.1.2.3', family: 4 });
    const e = await call('meta.example');
    expect(e).toBeInstanceOf(PrivateAddressError);
    expect((e as Error).message).toMatch(
      /^meta\.example resolves to 169\.254\.169\.254, which is the instance metadata service/,
    );
    expect(() => publicOnly({ allowPrivate: true }).check('http://[fd00:ec2::254]/v1')).toThrow(
      PrivateAddressError,
    );
    expect(() => publicOnly({ allowPrivate: true }).check('http://10.0.0.1:0/v1')).toThrow(/port 0/);
    expect(() => publicOnly({ allowPrivate: true }).check('http://10.0.0.1:8000/v1')).not.toThrow();
    expect(platformAddressProblem('8.8.8.8')).toBeUndefined();
    expect(platformAddressProblem('::ffff:a9fe:a9fe')).toMatch(
      /^::ffff:a9fe:a9fe carries 169\.254\.169\.254/,
    );
  });
});

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

describe('publicOnly: a name that passed its check but resolves to loopback at connect time', () => {
  it('opens no connection to the loopback listener, and says why; without the guard the same request lands', async () => {
    let connections = 0;
    const server = createServer((_req, res) => res.end('{}'));
    server.on('connection', () => connections++);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    // At registration the name resolved to a public address; now it resolves to this machine.
    const guard = publicOnly({
      resolve: resolver({ 'model.example': ['127.0.0.1'] }),
      hint: 'not connected',
    });
    const url = `http://model.example:${port}/v1/chat/completions`;
    const error = await send(url, () => ({ method: 'POST', body: '{}' }), {
      maxBytes: 1024,
      retry: { retries: 3, baseMs: 1 },
      guard,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PrivateAddressError);
    expect((error as PrivateAddressError).message).toBe(
      `model.example resolves to 127.0.0.1, which is ${LOOPBACK}; not connected`,
    );
    // A literal address never reaches the resolver: it is refused before the request.
    for (const literal of [`http://127.0.0.1:${port}/`, `http://[::ffff:7f00:1]:${port}/`]) {
      const e = await send(literal, () => ({}), { maxBytes: 1024, retry: { retries: 0 }, guard }).catch(
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(PrivateAddressError);
    }
    expect(connections).toBe(0);
    // The listener is real: the same address without the guard is reached.
    const a = await send(`http://127.0.0.1:${port}/`, () => ({}), { maxBytes: 1024, retry: { retries: 0 } });
    expect([a.status, connections]).toEqual([200, 1]);
  });
});
