import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../commands/openapi/document.ts';

/** docs/contract.md, section 1: the answers API Gateway gives itself are in the document, each citing AWS's page. */
const document = buildOpenApiDocument() as any;
const operations = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as const),
);

describe("API Gateway's own answers in openapi.json", () => {
  it.each(operations)(
    '%s lists the throttle, the failed invocation and the request too large, each citing AWS',
    (_, operation) => {
      for (const status of ['413', '429', '500']) {
        expect(operation.responses[status]?.description, status).toMatch(
          /https:\/\/docs\.aws\.amazon\.com\/apigateway\/latest\/developerguide\/http-api-[a-z-]+\.html/,
        );
      }
    },
  );

  it.each(operations.filter(([name]) => name.startsWith('GET')))(
    "%s describes both 500 bodies: the function's and API Gateway's",
    (_, operation) => {
      expect(operation.responses['500'].content['application/json'].schema.oneOf).toEqual([
        { $ref: '#/components/schemas/ServerError' },
        { $ref: '#/components/schemas/GatewayError' },
      ]);
      expect(document.components.schemas.GatewayError.properties.message.const).toBe('Internal Server Error');
    },
  );

  it('says that API Gateway answers a CORS preflight itself where origins are configured', () => {
    expect(document.info.description).toContain(
      'https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html',
    );
    expect(document.info.description).toMatch(/CORS preflight/);
  });
});
