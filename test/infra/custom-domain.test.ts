import { Match, type Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { propsFromContext } from '../../infra/context.ts';
import { resourcesOf, synthStack } from './support.ts';

/**
 * docs/contract.md, section 4: behind a custom domain the request cannot say where the API is
 * mounted (payload 2.0's rawPath leaves the API mapping's path out), so the stack that maps the
 * domain sets the functions' PUBLIC_BASE_URL itself; an explicit publicBaseUrl still wins.
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

describe('a custom domain the stack maps', () => {
  it("sets every function's PUBLIC_BASE_URL to the domain, mapped at its root", () => {
    const { template, urls } = baseUrls({ domainName: 'api.example.com', certificateArn: CERTIFICATE });
    expect(urls).toEqual(Array(urls.length).fill('https://api.example.com'));
    expect(urls.length).toBeGreaterThanOrEqual(4);
    template.hasResourceProperties('AWS::ApiGatewayV2::ApiMapping', { ApiMappingKey: Match.absent() });
  });

  it("adds the mapping's path, and maps the stage at it (-c domainBasePath=v1)", () => {
    const { template, urls } = baseUrls({
      domainName: 'api.example.com',
      certificateArn: CERTIFICATE,
      domainBasePath: 'v1',
    });
    expect(new Set(urls)).toEqual(new Set(['https://api.example.com/v1']));
    template.hasResourceProperties('AWS::ApiGatewayV2::ApiMapping', { ApiMappingKey: 'v1' });
  });

  it('takes a mapping path with surrounding slashes, or of several segments, as API Gateway names it', () => {
    expect(
      new Set(baseUrls({ domainName: 'api.example.com', certificateArn: CERTIFICATE, domainBasePath: '/v1/' }).urls),
    ).toEqual(new Set(['https://api.example.com/v1']));
    expect(
      new Set(baseUrls({ domainName: 'api.example.com', certificateArn: CERTIFICATE, domainBasePath: 'team/v2' }).urls),
    ).toEqual(new Set(['https://api.example.com/team/v2']));
  });

  it('lets an explicit publicBaseUrl win (a CDN in front of the domain)', () => {
    const { urls } = baseUrls({
      domainName: 'api.example.com',
      certificateArn: CERTIFICATE,
      domainBasePath: 'v1',
      publicBaseUrl: 'https://cdn.example.com/team-api',
    });
    expect(new Set(urls)).toEqual(new Set(['https://cdn.example.com/team-api']));
  });

  it.each([
    ['a mapping path without a domain', { domainBasePath: 'v1' }, /domainBasePath needs domainName/],
    [
      'a mapping path with a character a URL path would need escaped',
      { domainName: 'api.example.com', certificateArn: CERTIFICATE, domainBasePath: 'v 1' },
      /domainBasePath/,
    ],
  ])('refuses %s', (_, context, message) => {
    expect(() => baseUrls(context as Record<string, string>)).toThrow(message);
  });

  it('leaves PUBLIC_BASE_URL unset without a domain: links come from each request', () => {
    const { urls } = baseUrls({});
    expect(urls.every((url) => url === undefined)).toBe(true);
  });
});
