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
    expect(['OPENAI_API_KEY', 'TEAM_A_KEY', 'HF_TOKEN', 'MODEL_KEY'].map(ownVariableProblem)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
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
