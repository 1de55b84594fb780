import { describe, expect, it } from 'vitest';
import { readDeployedConfig } from '../../shared/sync/deployed-config.ts';
import { SecretError, sourceUrlFromSecret } from '../../shared/sync/secret.ts';
import { parseSourceUrl } from '../../shared/sync/source/url.ts';

/**
 * The deployed sync's source: a Secrets Manager secret in the JSON shape RDS uses
 * (https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_secret_json_structure.html),
 * turned into the URL `npm run sync -- --source` takes. A pure function: Secrets Manager itself has
 * no local emulator, and the handler's test gives SOURCE_DATABASE_URL instead.
 */
const secret = (fields: Record<string, unknown>) =>
  JSON.stringify({
    engine: 'postgres',
    host: 'laravel.cluster-abc.eu-west-1.rds.amazonaws.com',
    port: 5432,
    username: 'laravel',
    password: 'pw',
    dbname: 'forge',
    ...fields,
  });

describe('the secret as a source URL', () => {
  it.each([
    ['postgres', 'postgres'],
    ['aurora-postgresql', 'postgres'],
    ['mysql', 'mysql'],
    ['mariadb', 'mysql'],
    ['aurora-mysql', 'mysql'],
    ['aurora', 'mysql'],
  ])('reads engine %s as %s://', (engine, scheme) => {
    const url = sourceUrlFromSecret(secret({ engine, port: 4000 }));
    expect(url).toBe(`${scheme}://laravel:pw@laravel.cluster-abc.eu-west-1.rds.amazonaws.com:4000/forge`);
    expect(parseSourceUrl(url)).toMatchObject({ engine: scheme, database: 'forge' });
  });

  it('percent-encodes the user name, password and database, so any password reaches the driver as it is', () => {
    const password = 'p@ss:w/rd?#%&= "\'\\é';
    const url = new URL(sourceUrlFromSecret(secret({ username: 'app@team', password, dbname: 'my db' })));
    expect(decodeURIComponent(url.password)).toBe(password);
    expect(decodeURIComponent(url.username)).toBe('app@team');
    expect(parseSourceUrl(url.href).database).toBe('my db');
    expect(parseSourceUrl(url.href).redacted).not.toContain('ss:w');
  });

  it("takes the engine's default port when the secret gives none, and a port given as text", () => {
    expect(sourceUrlFromSecret(secret({ port: undefined }))).toContain('.com:5432/forge');
    expect(sourceUrlFromSecret(secret({ engine: 'mysql', port: undefined }))).toContain('.com:3306/forge');
    expect(sourceUrlFromSecret(secret({ port: '6543' }))).toContain('.com:6543/forge');
  });

  it('brackets an IPv6 host', () => {
    expect(sourceUrlFromSecret(secret({ host: 'fd00::1' }))).toBe('postgres://laravel:pw@[fd00::1]:5432/forge');
  });

  it('names what is missing or wrong, never the password', () => {
    const problems = [
      ['not json', /not JSON/],
      ['[1]', /not a JSON object/],
      [secret({ host: undefined, dbname: '' }), /lacks host, dbname/],
      [secret({ engine: 'oracle-ee' }), /engine "oracle-ee" is not one the sync reads/],
      [secret({ port: 'eighty' }), /port is not a port/],
    ] as const;
    for (const [text, message] of problems) {
      const thrown = (() => {
        try {
          sourceUrlFromSecret(text);
        } catch (error) {
          return error as Error;
        }
      })();
      expect(thrown).toBeInstanceOf(SecretError);
      expect(thrown!.message).toMatch(message);
      expect(thrown!.message).not.toContain('pw');
    }
  });
});

describe("the deployed sync's environment", () => {
  it("needs the table, the secret (or, locally, a source URL) and the stack's name, and a zone the runtime knows", () => {
    const given = { TABLE_NAME: 't', SOURCE_SECRET_ARN: 'arn', STACK_NAME: 'TeamResourcesApi' };
    expect(() => readDeployedConfig({})).toThrow('TABLE_NAME is not set');
    expect(() => readDeployedConfig({ TABLE_NAME: 't' })).toThrow(/SOURCE_SECRET_ARN/);
    expect(() => readDeployedConfig({ TABLE_NAME: 't', SOURCE_SECRET_ARN: 'arn' })).toThrow(/STACK_NAME is not set/);
    expect(() => readDeployedConfig({ ...given, STACK_NAME: 'a stack' })).toThrow(/STACK_NAME is not a CloudFormation/);
    expect(() => readDeployedConfig({ ...given, SOURCE_TIMEZONE: 'Mars/Base' })).toThrow(/SOURCE_TIMEZONE/);
    expect(() => readDeployedConfig({ ...given, LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
    expect(readDeployedConfig({ ...given, SOURCE_TIMEZONE: 'Europe/Berlin' })).toEqual({
      tableName: 't',
      dynamodbEndpoint: undefined,
      secretArn: 'arn',
      sourceUrl: undefined,
      timezone: 'Europe/Berlin',
      logLevel: 'INFO',
      stack: 'TeamResourcesApi',
    });
  });
});
