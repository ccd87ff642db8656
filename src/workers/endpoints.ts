/**
 * The model servers the platform may ask (`rumedbench serve endpoint add`): an allow-list. An evaluation the
 * platform runs names a registered endpoint, never an address, so no request goes where a team typed (server-side
 * request forgery); and a worker refuses an evaluation cell whose server is not on the list, however it was queued.
 * Keys are not stored: an endpoint names the environment variable that holds its key on the workers.
 */
import ipaddr from 'ipaddr.js';
import type { RunSpec } from '../engine/spec.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { checkBaseUrl } from '../llm/openai.js';
import { type QueueDb, SCHEMA } from './store.js';

export interface Endpoint {
  name: string;
  provider: 'openai' | 'llama';
  /** The OpenAI-compatible base URL (openai), or null (llama: `model` is the GGUF path on the workers). */
  base_url: string | null;
  model: string;
  api_key_env: string | null;
  /** The team that owns the model: its platform entries are credited to it (null: to the platform). */
  team?: string | null;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ENV = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const normalise = (url: string) => url.replace(/\/+$/, '');

/** Host names that reach this machine or a cloud's metadata service. */
const LOCAL_NAMES = /^(localhost|.*\.localhost|metadata|metadata\.google\.internal|instance-data(\..*)?)$/i;

/**
 * Why a model server's host is refused without `--allow-private`, or undefined: this machine (loopback, the
 * unspecified address), link-local addresses (the cloud metadata service at 169.254.169.254 among them), in any
 * spelling (the URL parser turns `2852039166`, `0xA9FEA9FE` and `0251.0376.0251.0376` into dotted quads).
 */
export function privateHostProblem(baseUrl: string): string | undefined {
  const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  if (LOCAL_NAMES.test(host)) return `${host} names this machine or a metadata service`;
  if (!ipaddr.isValid(host)) return undefined;
  const range = ipaddr.process(host).range();
  if (['loopback', 'linkLocal', 'unspecified'].includes(range))
    return `${host} is a ${range === 'linkLocal' ? 'link-local (cloud metadata)' : range} address`;
  return undefined;
}

export function checkEndpoint(e: Endpoint, options: { allowPrivate?: boolean } = {}): Endpoint {
  if (e.team !== undefined && e.team !== null && (e.team.trim() === '' || e.team.length > 200))
    throw new UsageError("--team: the owning team's name, 1 to 200 characters");
  if (!NAME.test(e.name))
    throw new UsageError(`endpoint name: letters, digits and ._- (at most 64), got "${e.name.slice(0, 80)}"`);
  if (e.api_key_env !== null && !ENV.test(e.api_key_env))
    throw new UsageError(
      `--api-key-env: an environment variable's name, got "${e.api_key_env.slice(0, 80)}"`,
    );
  // The same check as `llm --base-url`: http(s), no credentials in the address; and not this machine's own
  // services or the cloud's metadata, unless the admin says the model server is there.
  if (e.provider === 'openai') {
    const url = normalise(checkBaseUrl(e.base_url ?? '').toString());
    const problem = options.allowPrivate ? undefined : privateHostProblem(url);
    if (problem)
      throw new UsageError(
        `--base-url: ${problem}; pass --allow-private if the model server really is there`,
      );
    return { ...e, base_url: url };
  }
  if (e.provider === 'llama') return { ...e, base_url: null };
  throw new UsageError(`--provider: openai or llama, got "${String(e.provider)}"`);
}

export async function addEndpoint(
  db: QueueDb,
  e: Endpoint,
  options: { allowPrivate?: boolean } = {},
): Promise<Endpoint> {
  const ok = checkEndpoint(e, options);
  await db.pool.query(
    `INSERT INTO ${SCHEMA}.endpoints (name, provider, base_url, model, api_key_env, team) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (name) DO UPDATE SET provider = EXCLUDED.provider, base_url = EXCLUDED.base_url, model = EXCLUDED.model, api_key_env = EXCLUDED.api_key_env, team = EXCLUDED.team`,
    [ok.name, ok.provider, ok.base_url, ok.model, ok.api_key_env, ok.team ?? null],
  );
  return ok;
}

export async function listEndpoints(db: QueueDb): Promise<Endpoint[]> {
  const { rows } = await db.pool.query<Endpoint>(
    `SELECT name, provider, base_url, model, api_key_env, team FROM ${SCHEMA}.endpoints ORDER BY name`,
  );
  return rows;
}

export async function removeEndpoint(db: QueueDb, name: string): Promise<boolean> {
  const r = await db.pool.query(`DELETE FROM ${SCHEMA}.endpoints WHERE name = $1`, [name]);
  return (r.rowCount ?? 0) > 0;
}

export async function getEndpoint(db: QueueDb, name: string): Promise<Endpoint | undefined> {
  const { rows } = await db.pool.query<Endpoint>(
    `SELECT name, provider, base_url, model, api_key_env, team FROM ${SCHEMA}.endpoints WHERE name = $1`,
    [name],
  );
  return rows[0];
}

/** Throws unless the spec asks a server (and model) on the allow-list. */
export async function checkAllowed(db: QueueDb, spec: RunSpec): Promise<void> {
  if (spec.kind !== 'llm')
    throw new RumedbenchError('ENDPOINT_NOT_ALLOWED', `refused: the platform runs LLM evaluations only`);
  const p = spec.provider;
  const list = await listEndpoints(db);
  const ok = list.some((e) =>
    p.name === 'llama'
      ? e.provider === 'llama' && e.model === p.model
      : e.provider === 'openai' && e.base_url === normalise(p.base_url) && e.model === p.model,
  );
  if (!ok)
    throw new RumedbenchError(
      'ENDPOINT_NOT_ALLOWED',
      `refused: ${p.name === 'llama' ? `model file ${p.model}` : `${p.base_url} (model ${p.model})`} is not on the platform's allow-list (rumedbench serve endpoint add)`,
    );
}
