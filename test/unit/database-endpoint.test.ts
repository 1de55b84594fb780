import { describe, expect, it } from 'vitest';
import { databaseEndpoint } from '../../commands/cli/database.ts';
import { placeText } from '../../commands/cli/errors.ts';

/**
 * docs/contract.md, section 7: "on AWS" is decided by the endpoint a command really calls:
 * DYNAMODB_ENDPOINT, else the SDK's AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL, else AWS's
 * regional endpoint; AWS's when none is set or its host ends in .amazonaws.com, .amazonaws.com.cn
 * or .api.aws. The import's plain-token guard and every message go by it.
 */
describe('the endpoint a command calls, and whether it is on AWS', () => {
  it.each([
    [{}, undefined, undefined, true],
    [{ DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' }, 'DYNAMODB_ENDPOINT', 'http://127.0.0.1:8000', false],
    [
      { DYNAMODB_ENDPOINT: 'https://dynamodb.eu-west-1.amazonaws.com' },
      'DYNAMODB_ENDPOINT',
      'https://dynamodb.eu-west-1.amazonaws.com',
      true,
    ],
    [
      { AWS_ENDPOINT_URL_DYNAMODB: 'http://localhost:4566' },
      'AWS_ENDPOINT_URL_DYNAMODB',
      'http://localhost:4566',
      false,
    ],
    [
      { AWS_ENDPOINT_URL_DYNAMODB: 'https://dynamodb.eu-west-1.api.aws' },
      'AWS_ENDPOINT_URL_DYNAMODB',
      'https://dynamodb.eu-west-1.api.aws',
      true,
    ],
    [
      { AWS_ENDPOINT_URL: 'https://dynamodb.cn-north-1.amazonaws.com.cn' },
      'AWS_ENDPOINT_URL',
      'https://dynamodb.cn-north-1.amazonaws.com.cn',
      true,
    ],
    [{ AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' }, 'AWS_ENDPOINT_URL', 'http://127.0.0.1:9000', false],
    // The first that is set counts: ours, then the SDK's service-specific one, then its general one.
    [
      {
        DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
        AWS_ENDPOINT_URL_DYNAMODB: 'https://dynamodb.eu-west-1.amazonaws.com',
        AWS_ENDPOINT_URL: 'https://dynamodb.eu-west-1.amazonaws.com',
      },
      'DYNAMODB_ENDPOINT',
      'http://127.0.0.1:8000',
      false,
    ],
    [
      { DYNAMODB_ENDPOINT: ' ', AWS_ENDPOINT_URL_DYNAMODB: 'https://dynamodb.us-east-1.amazonaws.com' },
      'AWS_ENDPOINT_URL_DYNAMODB',
      'https://dynamodb.us-east-1.amazonaws.com',
      true,
    ],
    // Host names as DNS compares them: any case, a trailing dot; and only a real suffix counts.
    [{ DYNAMODB_ENDPOINT: 'https://DynamoDB.EU-West-1.AmazonAWS.com.' }, 'DYNAMODB_ENDPOINT', undefined, true],
    [{ DYNAMODB_ENDPOINT: 'https://amazonaws.com.example.net' }, 'DYNAMODB_ENDPOINT', undefined, false],
    [{ DYNAMODB_ENDPOINT: 'https://notamazonaws.com' }, 'DYNAMODB_ENDPOINT', undefined, false],
    [{ DYNAMODB_ENDPOINT: 'http://dynamodb.local.api.aws.example:8000' }, 'DYNAMODB_ENDPOINT', undefined, false],
  ])('%j: named by %s, %s, on AWS: %s', (env, setting, endpoint, onAws) => {
    const found = databaseEndpoint(env);
    expect(found.setting).toBe(setting);
    if (endpoint !== undefined) expect(found.endpoint).toBe(endpoint);
    expect(found.onAws).toBe(onAws);
  });

  it.each(['DYNAMODB_ENDPOINT', 'AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'])(
    'a %s that is not an http(s) URL is a malformed setting, named',
    (name) => {
      expect(() => databaseEndpoint({ [name]: 'localhost:8000' })).toThrow(
        `${name} is not an http(s) URL: "localhost:8000" (e.g. http://127.0.0.1:8000)`,
      );
    },
  );
});

describe('messages name the endpoint called, never "AWS region" for a local one', () => {
  it.each([
    [
      { setting: 'AWS_ENDPOINT_URL_DYNAMODB', endpoint: 'http://127.0.0.1:4566', onAws: false },
      'AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:4566, table t',
    ],
    [
      { setting: 'DYNAMODB_ENDPOINT', endpoint: 'https://dynamodb.eu-west-1.amazonaws.com', onAws: true },
      'DYNAMODB_ENDPOINT=https://dynamodb.eu-west-1.amazonaws.com, table t',
    ],
    [
      { endpoint: 'https://dynamodb.eu-west-1.amazonaws.com', region: 'eu-west-1', onAws: true },
      'AWS at https://dynamodb.eu-west-1.amazonaws.com (region eu-west-1), table t',
    ],
    [{ onAws: true }, 'AWS, no region set, table t'],
  ] as const)('%j: %s', (place, text) => {
    expect(placeText({ tableName: 't', ...place })).toBe(text);
  });
});
