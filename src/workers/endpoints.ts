/**
 * The model servers the platform may ask (`rumedbench serve endpoint add`): an allow-list. An evaluation the
 * platform runs names a registered endpoint, never an address, so no request goes where a team typed (server-side
 * request forgery); and a worker refuses an evaluation cell whose server is not on the list, however it was queued.
 * Keys are not stored: an endpoint names the environment variable that holds its key on the workers, never one of
 * the workers' own (./keys.ts).
 *
 * A server's host must be public: its name is resolved and every address checked when it is added
 * (../data/public-address.ts), unless the admin passes `--allow-private`, which the row records (`allow_private`).
 * A cloud's metadata or platform address (168.63.129.16, 169.254.169.254, fd00:ec2::254, …) and port 0 are refused
 * whatever the flags, and so is a name that resolves to such an address.
 * A worker checks the addresses again at every connection: an endpoint whose DNS changes after it was added still
 * never leads a worker to this machine or its network, unless the worker runs with `--allow-private` and the
 * endpoint was added with it.
 */
import {
  hostNameProblem,
  hostOf,
  platformHostProblem,
  portProblem,
  publicOnly,
  type Resolve,
  resolvedHostProblem,
} from '../data/public-address.js';
import type { OpenProviderOptions } from '../engine/provider.js';
import { isProviderName, providerNames, providerRecord, recordOf } from '../engine/providers/registry.js';
import type { ServerSpec } from '../engine/providers/server.js';
import type { LlmSpec, RunSpec } from '../engine/spec.js';
import { apiKeyEnvProblem } from '../engine/spec.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { checkBaseUrl } from '../llm/client.js';
import { ENV_NAME, keysEnv, keysProblem, ownVariableProblem } from './keys.js';
import { type QueueDb, SCHEMA } from './store.js';

export interface Endpoint {
  name: string;
  /** A registered provider's name (src/engine/providers/registry.ts); `serve endpoint add` offers openai and llama. */
  provider: string;
  /** The server's base URL, or null for a local model (`model` is then the GGUF path on the workers). */
  base_url: string | null;
  model: string;
  api_key_env: string | null;
  /** The team that owns the model: its platform entries are credited to it (null: to the platform). */
  team?: string | null;
  /** Added with `--allow-private`: workers started with `--allow-private` may connect to a private address. */
  allow_private?: boolean;
}

export interface EndpointCheckOptions {
  /** The model server may be on this machine or a private network (`--allow-private`): its host is not checked. */
  allowPrivate?: boolean;
  /** Resolves the host (the system's resolver by default; tests inject one). */
  resolve?: Resolve;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const normalise = (url: string) => url.replace(/\/+$/, '');
const PRIVATE_HINT = 'pass --allow-private if the model server really is there';

/** The checks of an endpoint's text (no resolving): its name, its key's variable, its URL's form and host. */
export function checkEndpoint(e: Endpoint, options: EndpointCheckOptions = {}): Endpoint {
  if (e.team !== undefined && e.team !== null && (e.team.trim() === '' || e.team.length > 200))
    throw new UsageError("--team: the owning team's name, 1 to 200 characters");
  if (!NAME.test(e.name))
    throw new UsageError(`endpoint name: letters, digits and ._- (at most 64), got "${e.name.slice(0, 80)}"`);
  if (e.api_key_env !== null) {
    if (!ENV_NAME.test(e.api_key_env))
      throw new UsageError(
        `--api-key-env: an environment variable's name, got "${e.api_key_env.slice(0, 80)}"`,
      );
    const problem = apiKeyEnvProblem(e.api_key_env) ?? ownVariableProblem(e.api_key_env);
    if (problem) throw new UsageError(`--api-key-env ${e.api_key_env}: ${problem}`);
  }
  const allow_private = options.allowPrivate ?? false;
  // The same check as `llm --base-url`: http(s), no credentials in the address; and, by its text, not this
  // machine's own services or the cloud's metadata, unless the admin says the model server is there.
  if (!isProviderName(e.provider))
    throw new UsageError(`--provider: one of ${providerNames().join(', ')}, got "${String(e.provider)}"`);
  if (!providerRecord(e.provider).local) {
    const url = normalise(checkBaseUrl(e.base_url ?? '').toString());
    // A metadata or platform service, or port 0: refused whatever the flags (no hint to pass one).
    const fixed = platformHostProblem(hostOf(url)) ?? portProblem(url);
    if (fixed) throw new UsageError(`--base-url: ${fixed}`);
    const problem = allow_private ? undefined : hostNameProblem(hostOf(url));
    if (problem) throw new UsageError(`--base-url: ${problem}; ${PRIVATE_HINT}`);
    return { ...e, base_url: url, allow_private };
  }
  return { ...e, base_url: null, allow_private };
}

/**
 * `checkEndpoint`, then the server's host resolved and every address it resolves to checked (unless
 * `allowPrivate`): a name that leads to this machine, its network or a metadata service is refused as its address
 * would be.
 */
export async function vetEndpoint(e: Endpoint, options: EndpointCheckOptions = {}): Promise<Endpoint> {
  const ok = checkEndpoint(e, options);
  if (ok.base_url !== null) {
    const problem = await resolvedHostProblem(hostOf(ok.base_url ?? ''), options.resolve, {
      allowPrivate: ok.allow_private ?? false,
      hint: PRIVATE_HINT,
    });
    if (problem) throw new UsageError(`--base-url: ${problem}`);
  }
  return ok;
}

export async function addEndpoint(
  db: QueueDb,
  e: Endpoint,
  options: EndpointCheckOptions = {},
): Promise<Endpoint> {
  const ok = await vetEndpoint(e, options);
  await db.pool.query(
    `INSERT INTO ${SCHEMA}.endpoints (name, provider, base_url, model, api_key_env, team, allow_private) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (name) DO UPDATE SET provider = EXCLUDED.provider, base_url = EXCLUDED.base_url, model = EXCLUDED.model, api_key_env = EXCLUDED.api_key_env, team = EXCLUDED.team, allow_private = EXCLUDED.allow_private`,
    [ok.name, ok.provider, ok.base_url, ok.model, ok.api_key_env, ok.team ?? null, ok.allow_private ?? false],
  );
  return ok;
}

export async function listEndpoints(db: QueueDb): Promise<Endpoint[]> {
  const { rows } = await db.pool.query<Endpoint>(
    `SELECT name, provider, base_url, model, api_key_env, team, allow_private FROM ${SCHEMA}.endpoints ORDER BY name`,
  );
  return rows;
}

export async function removeEndpoint(db: QueueDb, name: string): Promise<boolean> {
  const r = await db.pool.query(`DELETE FROM ${SCHEMA}.endpoints WHERE name = $1`, [name]);
  return (r.rowCount ?? 0) > 0;
}

export async function getEndpoint(db: QueueDb, name: string): Promise<Endpoint | undefined> {
  const { rows } = await db.pool.query<Endpoint>(
    `SELECT name, provider, base_url, model, api_key_env, team, allow_private FROM ${SCHEMA}.endpoints WHERE name = $1`,
    [name],
  );
  return rows[0];
}

/**
 * The registered endpoint a spec asks (its server, model and key's variable as registered, and no header read from
 * the environment: the platform queues none), or an ENDPOINT_NOT_ALLOWED error. Where several match, one added with
 * `--allow-private` is returned.
 */
export async function checkAllowed(db: QueueDb, spec: RunSpec): Promise<Endpoint> {
  if (spec.kind !== 'llm')
    throw new RumedbenchError('ENDPOINT_NOT_ALLOWED', `refused: the platform runs LLM evaluations only`);
  const p = spec.provider;
  const list = await listEndpoints(db);
  const local = recordOf(p).local;
  const server = p as Partial<ServerSpec>;
  const matches = list.filter(
    (e) =>
      e.provider === p.name &&
      e.model === p.model &&
      (local ||
        (e.base_url === normalise(server.base_url ?? '') &&
          (e.api_key_env ?? undefined) === server.api_key_env &&
          Object.keys(server.header_env ?? {}).length === 0)),
  );
  const found = matches.find((e) => e.allow_private) ?? matches[0];
  if (!found)
    throw new RumedbenchError(
      'ENDPOINT_NOT_ALLOWED',
      `refused: ${local ? `model file ${p.model}` : `${server.base_url} (model ${p.model}${server.api_key_env ? `, key from ${server.api_key_env}` : ''})`} is not on the platform's allow-list (rumedbench serve endpoint add)`,
    );
  return found;
}

/**
 * How a worker opens a cell's provider (../engine/queued.ts `ChunkInput.connect`): its keys and header values read
 * only from the variables it gives (`--endpoint-keys`; a cell that reads another is refused), every connection to a
 * checked public address unless allowed. A private address needs both the worker's `--allow-private` and, for the
 * platform's evaluations (whose servers teams registered), the endpoint's; a cloud's metadata or platform service
 * is never reached.
 */
export function providerAccess(o: {
  db: QueueDb;
  allowPrivate?: boolean | undefined;
  endpointKeys?: readonly string[] | undefined;
  resolve?: Resolve | undefined;
}): (
  spec: LlmSpec,
  kind: string,
) => Promise<{ allowPrivate: boolean; open: Pick<OpenProviderOptions, 'env' | 'guard'> }> {
  const resolve = o.resolve ? { resolve: o.resolve } : {};
  const guard = publicOnly({
    ...resolve,
    hint: `a worker connects only to public addresses: start it with --allow-private if the model server really is on this machine or its network (and, for the platform's evaluations, add its endpoint with --allow-private)`,
  });
  const privateGuard = publicOnly({ ...resolve, allowPrivate: true });
  const env = keysEnv(o.endpointKeys ?? []);
  return async (spec, kind) => {
    let allowPrivate = o.allowPrivate ?? false;
    if (kind === 'evaluation') {
      const endpoint = await checkAllowed(o.db, spec);
      allowPrivate = allowPrivate && endpoint.allow_private === true;
    }
    const refused = keysProblem(spec.provider, o.endpointKeys ?? []);
    if (refused) throw new RumedbenchError('ENDPOINT_KEY_REFUSED', refused);
    return { allowPrivate, open: { env, guard: allowPrivate ? privateGuard : guard } };
  };
}
