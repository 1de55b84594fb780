import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../commands/openapi/document.ts';
import { ROUTES } from '../../shared/routes.ts';

const committed = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'));

describe('openapi.json', () => {
  it('is what the route table and the schemas generate (run npm run openapi when this fails)', () => {
    expect(committed).toEqual(buildOpenApiDocument());
  });

  it('passes a standard OpenAPI 3.1 validator', async () => {
    const result = await validate(structuredClone(committed));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('describes every route with its ability, parameters and every error response', () => {
    for (const route of ROUTES) {
      const operation = committed.paths[route.path].get;
      expect(operation.security).toEqual([{ bearerAuth: [route.ability] }]);
      const list = route.name !== 'finances';
      expect(Object.keys(operation.responses).sort()).toEqual(['200', '304', '401', '403', '404', ...(list ? ['422'] : []), '500', '503'].sort());
      expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(list ? ['team', 'per_page', 'page'] : ['team']);
    }
    const perPage = committed.paths['/api/{team}/projects'].get.parameters[1];
    expect(perPage.schema).toEqual({ type: 'integer', minimum: 1, maximum: 50, default: 20 });
    expect(committed.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
