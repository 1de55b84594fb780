import { expect, it } from 'vitest';
import { checkAgainstOpenApi } from '../support/openapi-check.ts';
it('rejects responses the document does not describe, and accepts API Gateway 404s on any other path', () => {
  expect(() => checkAgainstOpenApi('GET', '/api/a/projects', 418, '{}')).toThrow(/does not describe 418/);
  expect(() => checkAgainstOpenApi('GET', '/api/a/finances', 422, '{}')).toThrow(/does not describe 422/);
  expect(() => checkAgainstOpenApi('GET', '/api/a/projects', 404, '{"message":"Nope"}')).toThrow(/does not match/);
  expect(() => checkAgainstOpenApi('GET', '/api/a/projects', 304, '{}')).toThrow(/no body/);
  expect(() =>
    checkAgainstOpenApi(
      'GET',
      '/api/a/finances',
      200,
      '{"data":[],"totals":{},"grand_total":0,"results":0,"meta":[],"served_in":"1ms","links":{}}',
    ),
  ).toThrow(/does not match/);
  checkAgainstOpenApi('GET', '/x', 404, '{"message":"Not Found"}');
});
