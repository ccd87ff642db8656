/**
 * The environment variables whose values a worker sends to model servers. A worker holds secrets of its own (the
 * queue's database URL, which reaches the closed tests' gold, and libpq's PG* variables; cloud credentials;
 * rumedbench's tokens): an endpoint that named one as its key would have every request carry it, as
 * `Authorization: Bearer …`, to a server its owner reads. So those variables are refused wherever a variable is named
 * for workers to send (`serve endpoint add --api-key-env`, `worker --endpoint-keys`), and a worker reads keys and
 * header values only from the variables its operator lists with `--endpoint-keys`.
 *
 * Invariant: a worker sends the value of a variable only if its `--endpoint-keys` names it, and never one of its own
 * nor one whose name looks like a secret of the host (`ownVariableProblem`).
 */
import { recordOf } from '../engine/providers/registry.js';
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

/**
 * Names that look like a secret of the host, whatever program it is for (issue #57: DB_PASSWORD, REDIS_URL,
 * SECRET_KEY, HF_TOKEN, MYSQL_PWD and NODE_OPTIONS all passed): what a host keeps its passwords, secrets, private
 * keys and passphrases in; tokens (a model server's key is a key: `*_API_KEY`); connection strings, which carry
 * their credentials (`*_URL`, `*_URI`, `*_DSN`, proxies); applications' signing keys (SECRET_KEY, APP_KEY,
 * *_MASTER_KEY, ENCRYPTION_KEY); what changes how a process runs (NODE_OPTIONS, NODE_*, LD_*, DYLD_*); and the
 * variables of infrastructure services, whose keys are the host's, not a model's (Hugging Face's hub, Slack,
 * Stripe, SendGrid, Sentry, Docker, CI, Cloudflare, DigitalOcean, Firebase, Supabase, Auth0, …).
 */
const HOST_SECRET = [
  /^(HF|HUGGING_?FACE\w*|SLACK|STRIPE|SENDGRID|MAILGUN|TWILIO|SENTRY|DOCKER|CI|GITLAB|BITBUCKET|CIRCLE|TRAVIS|JENKINS|HEROKU|VERCEL|NETLIFY|CLOUDFLARE|CF|DIGITALOCEAN|DO|FIREBASE|SUPABASE|AUTH0|OKTA|OAUTH|LDAP|SMTP|MAIL|REDIS|MONGO\w*|MYSQL|MARIADB|RABBITMQ|AMQP|KAFKA|ELASTIC\w*|MINIO|S3|SSL|TLS|GPG|PGP)_/i,
  /PASSW|PASSPHRASE|(^|_)PWD$|(^|_)PASS$|SECRET|PRIVATE|CREDENTIAL|COOKIE|SESSION|SIGNING|CERT|TOKEN|SALT$/i,
  /(^|_)(URL|URI|DSN|PROXY|CONNECTION_STRING|CONN_STR)$/i,
  /^(SECRET_KEY|APP_KEY|ENCRYPTION_KEY|.*_MASTER_KEY|.*_ENCRYPTION_KEY|JWT_.*|PWD|OLDPWD|SHELL)$/i,
  /^(NODE_|LD_|DYLD_|PYTHON|PERL5?LIB|RUBYLIB|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS)/i,
];

/**
 * Model servers' key variables that the patterns above would refuse: documented names of model providers' keys
 * (Sber's GigaChat reads GIGACHAT_CREDENTIALS; Replicate, REPLICATE_API_TOKEN).
 */
const MODEL_KEYS = new Set(['GIGACHAT_CREDENTIALS', 'REPLICATE_API_TOKEN']);

/** Why a worker never sends this variable's value to a model server, or undefined. */
export function ownVariableProblem(name: string): string | undefined {
  if (OWN.test(name))
    return `${name} is one of the workers' own variables (the queue's database, PG*, cloud credentials AWS_*, GOOGLE_*/GCP_*, AZURE_*, RUMEDBENCH_*, …), never sent to a model server: keep the model's key in a variable of its own`;
  if (MODEL_KEYS.has(name.toUpperCase())) return undefined;
  const i = HOST_SECRET.findIndex((p) => p.test(name));
  if (i < 0) return undefined;
  const what = [
    'a token of a hosting or infrastructure service: Hugging Face, Slack, Stripe, …',
    'a password, secret, private key, passphrase or token',
    'a connection string or proxy, which carries its credentials',
    "an application's signing key, or the shell's state",
    'what changes how a process runs',
  ][i];
  return `${name} looks like a secret of the host (${what}), never sent to a model server: keep the model's key in a variable of its own, say TEAM_MODEL_KEY`;
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
  return recordOf(p).variables(p);
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
