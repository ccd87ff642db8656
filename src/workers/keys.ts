/**
 * The environment variables whose values a worker sends to model servers. A worker holds secrets of its own (the
 * queue's database URL, which reaches the closed tests' gold, and libpq's PG* variables; cloud credentials;
 * rumedbench's tokens): an endpoint that named one as its key would have every request carry it, as
 * `Authorization: Bearer …`, to a server its owner reads. So those variables are refused wherever a variable is named
 * for workers to send (`serve endpoint add --api-key-env`, `worker --endpoint-keys`), and a worker reads keys and
 * header values only from the variables its operator lists with `--endpoint-keys`.
 *
 * Invariant: a worker sends the value of a variable only if its `--endpoint-keys` names it, and never one of its own.
 */
import type { ProviderSpec } from '../engine/spec.js';
import { UsageError } from '../errors.js';

/** Environment variable names, as POSIX shells write them. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * The variables a worker holds for itself: the database (DATABASE_URL, *_DATABASE_URL, libpq's PG*, POSTGRES_*),
 * rumedbench's own (RUMEDBENCH_*), cloud credentials (AWS_*, AMAZON_*, GOOGLE_*, GCP_*, GCLOUD_*, CLOUDSDK_*, GCE_*,
 * AZURE_*, ARM_*, Azure's managed identity MSI_* and IDENTITY_*, ALIBABA_CLOUD_*, ALICLOUD_*, OCI_*), the cluster's
 * and the machine's (KUBECONFIG, KUBERNETES_*, SSH_*, VAULT_*), CI and registry tokens (GITHUB_*, GH_TOKEN,
 * CI_JOB_TOKEN, NPM_TOKEN, NODE_AUTH_TOKEN, npm_*), and HOME, PATH, USER.
 */
const OWN =
  /^(DATABASE_URL|.*_DATABASE_URL|PG[A-Z0-9_]*|POSTGRES(QL)?_.*|RUMEDBENCH_.*|AWS_.*|AMAZON_.*|GOOGLE_.*|GCP_.*|GCLOUD_.*|CLOUDSDK_.*|GCE_.*|AZURE_.*|ARM_.*|MSI_.*|IDENTITY_.*|ALIBABA_CLOUD_.*|ALICLOUD_.*|OCI_.*|KUBECONFIG|KUBERNETES_.*|SSH_.*|VAULT_.*|GITHUB_.*|GH_TOKEN|CI_JOB_TOKEN|NPM_TOKEN|NODE_AUTH_TOKEN|npm_.*|HOME|PATH|USER)$/i;

/** Why a worker never sends this variable's value to a model server, or undefined. */
export function ownVariableProblem(name: string): string | undefined {
  return OWN.test(name)
    ? `${name} is one of the workers' own variables (the queue's database, PG*, cloud credentials AWS_*, GOOGLE_*/GCP_*, AZURE_*, RUMEDBENCH_*, …), never sent to a model server: keep the model's key in a variable of its own`
    : undefined;
}

/** `--endpoint-keys A,B`: the variables whose values this worker may send as model servers' keys and headers. */
export function parseEndpointKeys(value: string): string[] {
  const names = value
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  for (const n of names) {
    if (!ENV_NAME.test(n))
      throw new UsageError(
        `--endpoint-keys: environment variable names, comma apart; got "${n.slice(0, 80)}"`,
      );
    const own = ownVariableProblem(n);
    if (own) throw new UsageError(`--endpoint-keys: ${own}`);
  }
  return [...new Set(names)];
}

/** The variables a provider's spec reads on the machine that runs it, each with what it holds: its key, a header. */
export function variablesOf(p: ProviderSpec): { variable: string; holds: string }[] {
  if (p.name === 'llama') return [];
  return [
    ...(p.api_key_env ? [{ variable: p.api_key_env, holds: 'key' }] : []),
    ...Object.entries(p.header_env).map(([header, variable]) => ({ variable, holds: `header ${header}` })),
  ];
}

/**
 * Why a worker given `--endpoint-keys allowed` does not run a cell with this provider, or undefined: the cell names a
 * variable of the worker's own, or one its operator did not list.
 */
export function keysProblem(p: ProviderSpec, allowed: readonly string[]): string | undefined {
  for (const { variable: v, holds } of variablesOf(p)) {
    const own = ownVariableProblem(v);
    if (own) return `refused: the cell reads its ${holds} from ${v}: ${own}`;
    if (!allowed.includes(v))
      return `refused: the cell's ${holds} is in ${v}, which this worker does not send (its --endpoint-keys: ${allowed.length > 0 ? allowed.join(',') : 'none'}); start the worker with --endpoint-keys ${v} if that variable holds this model server's ${holds}`;
  }
  return undefined;
}

/** The environment a worker's providers read: only the listed variables (a missed check still finds nothing else). */
export function keysEnv(allowed: readonly string[], env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(allowed.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]));
}
