import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * The source's credentials as the deployed sync gets them: a Secrets Manager secret in the JSON
 * shape RDS and Aurora use (`engine`, `host`, `port`, `username`, `password`, `dbname`: "JSON
 * structure of AWS Secrets Manager secrets",
 * https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_secret_json_structure.html),
 * read at each run, so a rotated password is picked up by the next invocation.
 */
export class SecretError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SecretError';
  }
}

/** RDS's engine names, by the URL scheme the sync reads them with. */
const SCHEMES: Record<string, 'postgres' | 'mysql'> = {
  postgres: 'postgres',
  'aurora-postgresql': 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  'aurora-mysql': 'mysql',
  // Aurora MySQL 5.6 clusters' secrets name the engine `aurora`.
  aurora: 'mysql',
};
const DEFAULT_PORTS = { postgres: 5432, mysql: 3306 } as const;
const REQUIRED = ['engine', 'host', 'username', 'password', 'dbname'] as const;

/**
 * The secret's JSON as the sync's source URL: postgres:// or mysql://, the user name, password and
 * database percent-encoded (a password may hold `@`, `/` or `:`). Never shows the password.
 */
export function sourceUrlFromSecret(secretString: string): string {
  let secret: Record<string, unknown>;
  try {
    secret = JSON.parse(secretString) as Record<string, unknown>;
  } catch {
    throw new SecretError('the secret is not JSON: it must hold engine, host, port, username, password and dbname');
  }
  if (typeof secret !== 'object' || secret === null || Array.isArray(secret))
    throw new SecretError('the secret is not a JSON object of engine, host, port, username, password and dbname');
  const missing = REQUIRED.filter((key) => typeof secret[key] !== 'string' || secret[key] === '');
  if (missing.length > 0) throw new SecretError(`the secret lacks ${missing.join(', ')} (the JSON shape RDS uses)`);
  const engine = String(secret.engine).toLowerCase();
  const scheme = SCHEMES[engine];
  if (!scheme) {
    throw new SecretError(
      `the secret's engine "${engine}" is not one the sync reads (${Object.keys(SCHEMES).join(', ')})`,
    );
  }
  const port = secret.port === undefined || secret.port === '' ? DEFAULT_PORTS[scheme] : Number(secret.port);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new SecretError("the secret's port is not a port");
  const host = String(secret.host).includes(':') ? `[${String(secret.host)}]` : String(secret.host);
  const user = encodeURIComponent(String(secret.username));
  const password = encodeURIComponent(String(secret.password));
  return `${scheme}://${user}:${password}@${host}:${port}/${encodeURIComponent(String(secret.dbname))}`;
}

/**
 * The secret's current value, read from Secrets Manager in the secret's own region. A call waits
 * 10 s at most: a VPC with no route to Secrets Manager fails the run in seconds, with a message
 * that says so, instead of at the function's timeout.
 */
export async function readSecret(secretArn: string): Promise<string> {
  const region = secretArn.split(':')[3];
  const client = new SecretsManagerClient({
    region: region || undefined,
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 10_000, throwOnRequestTimeout: true },
  });
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
    if (SecretString === undefined) throw new SecretError(`the secret ${secretArn} holds binary data, not JSON`);
    return SecretString;
  } catch (error) {
    if (error instanceof SecretError) throw error;
    throw new SecretError(`the secret ${secretArn} could not be read: ${(error as Error).message}`, { cause: error });
  } finally {
    client.destroy();
  }
}
