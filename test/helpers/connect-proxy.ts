/**
 * A logging HTTP proxy on loopback, as a hospital's would be: it answers CONNECT (the tunnel undici opens for http://
 * and https:// targets alike), connects to the target by name through its own resolver (`names`: host → loopback
 * port; any other name is refused with 502, as a proxy that cannot resolve it would), and records every request line.
 * A target reachable only through it (a made-up name like `model.example`) proves a request went through the proxy.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';

export interface LoggingProxy {
  url: string;
  /** Every request line in order: `CONNECT model.example:443`, or `GET http://…` for a plain forward (answered 405). */
  lines: string[];
  /** The first bytes each tunnel carried from the client (a TLS ClientHello starts with 0x16). */
  firstBytes: Buffer[];
  close(): Promise<void>;
}

export async function loggingProxy(names: Record<string, number>): Promise<LoggingProxy> {
  const lines: string[] = [];
  const firstBytes: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    lines.push(`${req.method} ${req.url}`);
    res.writeHead(405).end('this proxy only tunnels (CONNECT)');
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    lines.push(`CONNECT ${req.url}`);
    const [host, port] = (req.url ?? '').split(/:(?=\d+$)/);
    const local = names[(host ?? '').toLowerCase()];
    if (local === undefined || port === undefined) {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = connect(local, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.once('data', (d: Buffer) => firstBytes.push(Buffer.from(d)));
      client.pipe(upstream).pipe(client);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lines,
    firstBytes,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
