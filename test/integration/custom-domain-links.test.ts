import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { lambdaContext } from '../../commands/local/api-gateway-event.ts';
import { readApiConfig } from '../../shared/api/config.ts';
import { listHandler } from '../../shared/api/http/handlers.ts';
import { TeamReader } from '../../shared/api/team-reader.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { projects, team, token, user } from '../support/snapshots.ts';
import { propsFromContext } from '../../infra/context.ts';
import { resourcesOf, synthStack } from '../infra/support.ts';

/**
 * docs/contract.md, section 4, with the events AWS sends: the links a function behind each kind of
 * address writes, against DynamoDB Local (the synthesized side, without a table, is
 * test/infra/custom-domain.test.ts).
 */
const CERTIFICATE = 'arn:aws:acm:eu-west-1:123456789012:certificate/abc';
/** The stack synthesized with `context` (once per context: several cases ask for the same one), and its functions' PUBLIC_BASE_URL. */
const synthesized = new Map<string, { template: Template; urls: (string | undefined)[] }>();
const baseUrls = (context: Record<string, string>) => {
  const key = JSON.stringify(context);
  if (!synthesized.has(key)) {
    const { template } = synthStack({ context, props: (app) => propsFromContext(app.node) });
    synthesized.set(key, {
      template,
      urls: Object.values(resourcesOf(template, 'AWS::Lambda::Function')).map(
        (fn) => fn.Properties.Environment?.Variables?.PUBLIC_BASE_URL,
      ),
    });
  }
  return synthesized.get(key)!;
};

/**
 * The events API Gateway sends (payload 2.0), shaped as "Create AWS Lambda proxy integrations for
 * HTTP APIs" shows them
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html):
 * header names lower-cased; `rawPath` and `requestContext.http.path` carry a named stage's segment
 * but never an API mapping's path ("If you use an API mapping to connect your stage to a custom
 * domain name, rawPath won't provide the API mapping value").
 */
function awsEvent(host: string, rawPath: string, stage: string): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'GET /api/{team}/projects',
    rawPath,
    rawQueryString: 'per_page=2',
    headers: {
      accept: 'application/json',
      authorization: 'Bearer secret-all',
      host,
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-forwarded-for': '198.51.100.7',
    },
    queryStringParameters: { per_page: '2' },
    pathParameters: { team: 'acme' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: host,
      domainPrefix: host.split('.')[0]!,
      http: { method: 'GET', path: rawPath, protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'curl/8.5.0' },
      requestId: 'JKJaXmPLvHcESHA=',
      routeKey: 'GET /api/{team}/projects',
      stage,
      time: '22/Nov/2026:10:00:00 +0000',
      timeEpoch: 1_795_341_600_000,
    },
    isBase64Encoded: false,
  };
}

describe('links, from the events AWS sends', () => {
  const EXECUTE_API = 'abc123.execute-api.eu-west-1.amazonaws.com';
  let table: TestTable;

  beforeAll(async () => {
    process.env.LOG_LEVEL = 'SILENT';
    table = await freshTable();
    await importDocument(table, {
      teams: [team(1, 'acme')],
      users: [user(10, [1])],
      tokens: [token(10, 'secret-all')],
      projects: projects(1, 5),
    });
  }, 120_000);

  /** The projects function with PUBLIC_BASE_URL as a synthesized stack gives it (none without a domain). */
  async function metaPath(
    event: APIGatewayProxyEventV2,
    context: Record<string, string>,
  ): Promise<{ path: string; next: string }> {
    const publicBaseUrl = new Set(baseUrls(context).urls).values().next().value as string | undefined;
    const config = readApiConfig({
      TABLE_NAME: table.tableName,
      ...(publicBaseUrl === undefined ? {} : { PUBLIC_BASE_URL: publicBaseUrl }),
    });
    const handler = listHandler('projects', {
      config,
      reader: new TeamReader(table.client, { tableName: table.tableName }),
    });
    const result = await (handler as unknown as (e: unknown, c: unknown) => Promise<APIGatewayProxyStructuredResultV2>)(
      event,
      lambdaContext('projects', 10_000, 'test'),
    );
    expect(result.statusCode).toBe(200);
    const body = JSON.parse(result.body!);
    return { path: body.meta.path, next: body.links.next };
  }

  const DOMAIN = { domainName: 'api.example.com', certificateArn: CERTIFICATE };
  it.each([
    [
      'the execute-api address, $default stage',
      awsEvent(EXECUTE_API, '/api/acme/projects', '$default'),
      {},
      `https://${EXECUTE_API}/api/acme/projects`,
    ],
    [
      'the execute-api address, a named stage',
      awsEvent(EXECUTE_API, '/prod/api/acme/projects', 'prod'),
      {},
      `https://${EXECUTE_API}/prod/api/acme/projects`,
    ],
    [
      'a custom domain mapped at its root',
      awsEvent('api.example.com', '/api/acme/projects', '$default'),
      DOMAIN,
      'https://api.example.com/api/acme/projects',
    ],
    [
      'a custom domain with the mapping path v1',
      awsEvent('api.example.com', '/api/acme/projects', '$default'),
      { ...DOMAIN, domainBasePath: 'v1' },
      'https://api.example.com/v1/api/acme/projects',
    ],
  ])(
    'lead back through %s',
    async (_, event, context, expected) => {
      const { path, next } = await metaPath(event, context);
      expect(path).toBe(expected);
      expect(next).toBe(`${expected}?per_page=2&page=2`);
    },
    60_000,
  );

  it('would lose the mapping path without PUBLIC_BASE_URL: why a domain mapped outside the stack needs publicBaseUrl', async () => {
    const { path } = await metaPath(awsEvent('api.example.com', '/api/acme/projects', '$default'), {});
    expect(path).toBe('https://api.example.com/api/acme/projects');
  });
});
