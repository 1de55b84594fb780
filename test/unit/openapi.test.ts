import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../commands/openapi/document.ts';
import { DOCUMENT_ROUTE, ROUTES } from '../../shared/api/routes.ts';

const committed = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'));

describe('openapi.json', () => {
  it('is what the route table and the schemas generate (run npm run openapi when this fails)', () => {
    expect(committed).toEqual(buildOpenApiDocument());
  });

  it('passes a standard OpenAPI 3.1 validator', async () => {
    const result = await validate(structuredClone(committed));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it('describes every route, for GET and HEAD, with its ability, parameters and every error response', () => {
    for (const route of ROUTES) {
      for (const method of ['get', 'head']) {
        const operation = committed.paths[route.path][method];
        expect(operation.security).toEqual([{ bearerAuth: [route.ability] }]);
        const list = route.name !== 'finances';
        expect(Object.keys(operation.responses).sort()).toEqual(
          ['200', '304', '401', '403', '404', '413', ...(list ? ['422'] : []), '429', '500', '503'].sort(),
        );
        expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(
          list ? ['team', 'per_page', 'page'] : ['team'],
        );
      }
    }
    expect(committed.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('describes HEAD as GET without a body: the same statuses and headers, no content', () => {
    for (const path of [...ROUTES.map((r) => r.path), DOCUMENT_ROUTE.path]) {
      const { get, head } = committed.paths[path];
      expect(Object.keys(head.responses)).toEqual(Object.keys(get.responses));
      for (const [status, response] of Object.entries<{ headers?: object; content?: object }>(head.responses)) {
        expect(response.content, `${path} HEAD ${status}`).toBeUndefined();
        expect(response.headers).toEqual(get.responses[status].headers);
      }
    }
  });

  it('refers to the named schemas instead of repeating them, so generators emit each type once', () => {
    const schemas = committed.components.schemas;
    expect(schemas.ProjectsPage.properties.data.items).toEqual({ $ref: '#/components/schemas/Project' });
    expect(schemas.DaemonsPage.properties.data.items).toEqual({ $ref: '#/components/schemas/Daemon' });
    expect(schemas.Finances.properties.data.items).toEqual({ $ref: '#/components/schemas/FinanceLineItem' });
    for (const page of [schemas.ProjectsPage, schemas.DaemonsPage]) {
      expect(page.properties.links).toEqual({ $ref: '#/components/schemas/Links' });
      expect(page.properties.meta).toEqual({ $ref: '#/components/schemas/PaginationMeta' });
    }
  });

  it('marks the headers the API always sends as required', () => {
    const operation = committed.paths['/api/{team}/projects'].get;
    const header = (status: string, name: string) => {
      const { $ref } = operation.responses[status].headers[name] as { $ref: string };
      return committed.components.headers[$ref.split('/').pop()!];
    };
    for (const [status, name] of [
      ['200', 'ETag'],
      ['200', 'Cache-Control'],
      ['304', 'ETag'],
      ['304', 'Cache-Control'],
      ['401', 'WWW-Authenticate'],
      ['503', 'Retry-After'],
    ]) {
      expect(header(status!, name!).required, `${name} on ${status}`).toBe(true);
    }
  });

  it("gives page and per_page their ranges and Laravel's integer rule, and team an example to call it with", () => {
    const [team, perPage, page] = committed.paths['/api/{team}/projects'].get.parameters;
    expect(team.example).toBe('acme');
    expect(perPage.schema).toEqual({ type: 'integer', minimum: 1, maximum: 50, default: 20 });
    expect(page.schema).toEqual({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 });
    expect(perPage.description).toContain("Laravel's integer rule");
  });

  it('states the formats and ranges of what it serves: created_at a date-time, amounts from 0 to below 100,000,000,000', () => {
    const { Project, FinanceLineItem, Finances } = committed.components.schemas;
    expect(Project.properties.created_at.format).toBe('date-time');
    for (const amount of [
      FinanceLineItem.properties.amount,
      Finances.properties.grand_total,
      Finances.properties.totals.additionalProperties,
    ]) {
      expect(amount).toMatchObject({ type: 'number', minimum: 0, exclusiveMaximum: 100_000_000_000 });
    }
  });

  it('describes the document route with a description, its 304 and a 4XX, and declares every tag it uses', () => {
    const operation = committed.paths[DOCUMENT_ROUTE.path].get;
    expect(operation.description).toMatch(/\S/);
    expect(operation.security).toEqual([]);
    expect(Object.keys(operation.responses)).toEqual(['200', '304', '413', '429', '500']);
    const declared = committed.tags.map((t: { name: string }) => t.name);
    for (const path of Object.values<Record<string, { tags: string[] }>>(committed.paths)) {
      for (const op of Object.values(path)) expect(declared).toEqual(expect.arrayContaining(op.tags));
    }
    expect(committed.info.license.name).toMatch(/\S/);
    expect(committed.info.contact.name).toMatch(/\S/);
  });
});
