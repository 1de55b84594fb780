import { describe, expect, it } from 'vitest';
import { readApiConfig, readStackName } from '../../shared/api/config.ts';
import { readLogLevel } from '../../shared/api/log.ts';

describe('readApiConfig', () => {
  it('reads TABLE_NAME', () => {
    expect(readApiConfig({ TABLE_NAME: 'team-resources' })).toEqual({
      tableName: 'team-resources',
      publicBaseUrl: undefined,
      dynamodbEndpoint: undefined,
    });
  });

  it.each([undefined, '', '  '])('fails fast with "TABLE_NAME is not set" when it is %j', (value) => {
    expect(() => readApiConfig({ TABLE_NAME: value })).toThrow('TABLE_NAME is not set');
  });

  it('trims TABLE_NAME', () => {
    expect(readApiConfig({ TABLE_NAME: ' t \n' }).tableName).toBe('t');
  });

  it.each([
    ['https://api.example.com', 'https://api.example.com'],
    ['https://api.example.com/', 'https://api.example.com'],
    ['https://example.com/prod//', 'https://example.com/prod'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['', undefined],
  ])(
    'reads the PUBLIC_BASE_URL %j as %j (trailing slashes trimmed, the path kept, empty as not configured)',
    (url, read) => {
      expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: url }).publicBaseUrl).toBe(read);
    },
  );

  it.each([
    'api.example.com',
    'ftp://api.example.com',
    'https://',
    'https:///path',
    'https://api example.com',
    '/relative',
  ])('rejects the PUBLIC_BASE_URL %j', (url) => {
    expect(() => readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: url })).toThrow(
      'PUBLIC_BASE_URL is not an http(s) URL',
    );
  });

  it.each([
    ['http://127.0.0.1:8000', 'http://127.0.0.1:8000'],
    [' ', undefined],
  ])('reads the DYNAMODB_ENDPOINT %j as %j', (endpoint, read) => {
    expect(readApiConfig({ TABLE_NAME: 't', DYNAMODB_ENDPOINT: endpoint }).dynamodbEndpoint).toBe(read);
  });
});

describe('STACK_NAME', () => {
  it("is the stack's name, the Stack dimension of the access line's metrics; none outside a stack", () => {
    expect(readStackName({ STACK_NAME: 'TeamResourcesProduction' })).toBe('TeamResourcesProduction');
    expect(readStackName({ STACK_NAME: ' staging-api \n' })).toBe('staging-api');
    expect(readStackName({})).toBeUndefined();
    expect(readStackName({ STACK_NAME: '' })).toBeUndefined();
  });

  it('fails fast on what CloudFormation would not name a stack', () => {
    expect(() => readStackName({ STACK_NAME: 'team api' })).toThrow(
      'STACK_NAME is not a CloudFormation stack name: "team api"',
    );
  });
});

describe('LOG_LEVEL', () => {
  it.each(['debug', 'INFO', 'silent', undefined])('takes %s', (level) => {
    expect(() => readLogLevel({ LOG_LEVEL: level })).not.toThrow();
  });

  it('refuses an unknown level at start, naming the allowed ones', () => {
    expect(() => readLogLevel({ LOG_LEVEL: 'verbose' })).toThrow(
      'LOG_LEVEL must be one of trace, debug, info, warn, error, critical, silent (any case), not "verbose"',
    );
  });
});
