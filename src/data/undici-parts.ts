/**
 * undici's dispatchers from their own files, not from the package's index: the index loads all of undici (fetch,
 * WebSocket, caches, mocks, cookies and Node's own copy of undici behind them, ~110 files), which every process that
 * may send a request paid at its start, a queue worker included (#64). The transport asks through a dispatcher
 * directly; fetch (forms, answers saved to a file) loads the index when it is first used (./transport.ts).
 * The types are the package's.
 */
import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const load = createRequire(import.meta.url);

// The index gives every dispatcher its request API (request, connect, …): ProxyAgent's tunnel calls `connect`.
Object.assign(
  (load('undici/lib/dispatcher/dispatcher.js') as typeof Undici.Dispatcher).prototype,
  load('undici/lib/api/index.js'),
);

export const Agent = load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export const Client = load('undici/lib/dispatcher/client.js') as typeof Undici.Client;
export const Pool = load('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export const ProxyAgent = load('undici/lib/dispatcher/proxy-agent.js') as typeof Undici.ProxyAgent;
