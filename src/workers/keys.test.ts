import { describe, expect, it } from 'vitest';
import type { ProviderSpec } from '../engine/spec.js';
import { keysEnv, keysProblem, ownVariableProblem, parseEndpointKeys } from './keys.js';

const openai = (over: Record<string, unknown> = {}) =>
  ({
    name: 'openai',
    model: 'm',
    base_url: 'https://api.example.com/v1',
    headers: {},
    header_env: {},
    ...over,
  }) as unknown as ProviderSpec;

describe('a worker sends only the variables its operator names, never its own', () => {
  it("knows the workers' own variables", () => {
    const own = [
      'DATABASE_URL',
      'QUEUE_DATABASE_URL',
      'PGPASSWORD',
      'PGUSER',
      'POSTGRES_PASSWORD',
      'RUMEDBENCH_ADMIN_TOKEN',
      'RUMEDBENCH_X',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_SESSION_TOKEN',
      'GOOGLE_APPLICATION_CREDENTIALS',
      'GCP_SA_KEY',
      'AZURE_CLIENT_SECRET',
      'ARM_CLIENT_SECRET',
      'ALIBABA_CLOUD_ACCESS_KEY_SECRET',
      'KUBECONFIG',
      'GITHUB_TOKEN',
      'NPM_TOKEN',
      'HOME',
    ];
    expect(own.filter((n) => ownVariableProblem(n) === undefined)).toEqual([]);
    expect(['OPENAI_API_KEY', 'TEAM_A_KEY', 'MODEL_KEY'].map(ownVariableProblem)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  // Issue #57, finding 5: 28 of 34 secret-looking names passed (DB_PASSWORD, REDIS_URL, SECRET_KEY, HF_TOKEN, ...).
  it("refuses every name that looks like a secret of the host, and passes the model servers' usual key names", () => {
    const hostSecrets = [
      'DB_PASSWORD',
      'REDIS_URL',
      'SECRET_KEY',
      'HF_TOKEN',
      'MYSQL_PWD',
      'NODE_OPTIONS',
      'MYSQL_ROOT_PASSWORD',
      'MONGODB_URI',
      'MONGO_URL',
      'REDIS_PASSWORD',
      'RABBITMQ_DEFAULT_PASS',
      'AMQP_URL',
      'CELERY_BROKER_URL',
      'SENTRY_DSN',
      'JWT_SECRET',
      'SESSION_SECRET',
      'DJANGO_SECRET_KEY',
      'APP_KEY',
      'ENCRYPTION_KEY',
      'RAILS_MASTER_KEY',
      'STRIPE_SECRET_KEY',
      'SLACK_BOT_TOKEN',
      'SLACK_WEBHOOK_URL',
      'SMTP_PASSWORD',
      'SENDGRID_API_KEY',
      'DOCKER_PASSWORD',
      'CI_REGISTRY_PASSWORD',
      'HUGGING_FACE_HUB_TOKEN',
      'HUGGINGFACEHUB_API_TOKEN',
      'API_TOKEN',
      'ACCESS_TOKEN',
      'PRIVATE_KEY',
      'SSL_KEY_PASSPHRASE',
      'GPG_PASSPHRASE',
      'HTTPS_PROXY',
      'http_proxy',
      'NODE_EXTRA_CA_CERTS',
      'LD_PRELOAD',
      'CLOUDFLARE_API_TOKEN',
      'DIGITALOCEAN_ACCESS_TOKEN',
      'FIREBASE_TOKEN',
      'SUPABASE_SERVICE_ROLE_KEY',
      'AUTH0_CLIENT_SECRET',
      'OAUTH_CLIENT_SECRET',
      'LDAP_BIND_PASSWORD',
      'PASSWORD',
      'db_password',
    ];
    expect(hostSecrets.length).toBeGreaterThanOrEqual(30);
    expect(hostSecrets.filter((n) => ownVariableProblem(n) === undefined)).toEqual([]);
    expect(ownVariableProblem('HF_TOKEN')).toBe(
      "HF_TOKEN looks like a secret of the host (a token of a hosting or infrastructure service: Hugging Face, Slack, Stripe, …), never sent to a model server: keep the model's key in a variable of its own, say TEAM_MODEL_KEY",
    );
    const modelKeys = [
      'OPENAI_API_KEY',
      'ANTHROPIC_API_KEY',
      'MISTRAL_API_KEY',
      'GROQ_API_KEY',
      'TOGETHER_API_KEY',
      'DEEPSEEK_API_KEY',
      'OPENROUTER_API_KEY',
      'FIREWORKS_API_KEY',
      'GEMINI_API_KEY',
      'COHERE_API_KEY',
      'XAI_API_KEY',
      'PERPLEXITY_API_KEY',
      'DEEPINFRA_API_KEY',
      'YANDEX_API_KEY',
      'GIGACHAT_CREDENTIALS',
      'REPLICATE_API_TOKEN',
      'AZURE_OPENAI_KEY',
      'VLLM_API_KEY',
      'TEAM_A_KEY',
      'MODEL_KEY',
    ];
    expect(modelKeys.filter((n) => ownVariableProblem(n) !== undefined)).toEqual(['AZURE_OPENAI_KEY']);
  });

  it('--endpoint-keys: a comma list of names, none of the worker’s own', () => {
    expect(parseEndpointKeys(' TEAM_A_KEY,TEAM_B_KEY ,,TEAM_A_KEY')).toEqual(['TEAM_A_KEY', 'TEAM_B_KEY']);
    expect(() => parseEndpointKeys('TEAM_A_KEY,DATABASE_URL')).toThrow(
      /^--endpoint-keys: DATABASE_URL is one of the workers' own variables/,
    );
    expect(() => parseEndpointKeys('a-b')).toThrow(
      '--endpoint-keys: environment variable names, comma apart',
    );
  });

  it('a cell whose key or header variable is not listed is refused, naming the variable and the flag', () => {
    expect(keysProblem(openai({ api_key_env: 'TEAM_A_KEY' }), ['TEAM_A_KEY'])).toBeUndefined();
    expect(keysProblem(openai(), [])).toBeUndefined();
    expect(keysProblem(openai({ api_key_env: 'TEAM_A_KEY' }), [])).toBe(
      "refused: the cell's key is in TEAM_A_KEY, which this worker does not send (its --endpoint-keys: none); start the worker with --endpoint-keys TEAM_A_KEY if that variable holds this model server's key",
    );
    expect(
      keysProblem(openai({ api_key_env: 'TEAM_A_KEY', header_env: { 'X-Org': 'ORG_ID' } }), ['TEAM_A_KEY']),
    ).toBe(
      "refused: the cell's header X-Org is in ORG_ID, which this worker does not send (its --endpoint-keys: TEAM_A_KEY); start the worker with --endpoint-keys ORG_ID if that variable holds this model server's header X-Org",
    );
    // Listed or not, a variable of the worker's own is never read (a spec queued by hand in the database).
    expect(keysProblem(openai({ api_key_env: 'PGPASSWORD' }), ['PGPASSWORD'])).toMatch(
      /^refused: the cell reads its key from PGPASSWORD: PGPASSWORD is one of the workers' own variables/,
    );
    expect(keysProblem({ name: 'llama', model: 'm.gguf' } as ProviderSpec, [])).toBeUndefined();
  });

  it("the providers' environment holds only the listed variables", () => {
    expect(keysEnv(['A_KEY', 'MISSING'], { A_KEY: 'a', DATABASE_URL: 'postgres://x', PATH: '/bin' })).toEqual(
      {
        A_KEY: 'a',
      },
    );
  });
});
