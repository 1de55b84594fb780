import { describe, expect, it } from 'vitest';
import { readApiConfig } from '../../shared/config.ts';
import { readLogLevel } from '../../shared/log.ts';

describe('readApiConfig', () => {
  it('reads TABLE_NAME', () => {
    expect(readApiConfig({ TABLE_NAME: 'team-resources' })).toEqual({
      tableName: 'team-resources',
      publicBaseUrl: undefined,
      dynamodbEndpoint: undefined,
    });
  });

  it('fails fast with "TABLE_NAME is not set" when it is missing', () => {
    expect(() => readApiConfig({})).toThrow('TABLE_NAME is not set');
  });

  it('fails fast with "TABLE_NAME is not set" when it is empty', () => {
    expect(() => readApiConfig({ TABLE_NAME: '' })).toThrow('TABLE_NAME is not set');
  });

  it('fails fast with "TABLE_NAME is not set" when it is only white space', () => {
    expect(() => readApiConfig({ TABLE_NAME: '  ' })).toThrow('TABLE_NAME is not set');
  });

  it('trims TABLE_NAME', () => {
    expect(readApiConfig({ TABLE_NAME: ' t \n' }).tableName).toBe('t');
  });

  it('reads PUBLIC_BASE_URL', () => {
    expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: 'https://api.example.com' }).publicBaseUrl).toBe('https://api.example.com');
  });

  it('trims a trailing slash from PUBLIC_BASE_URL', () => {
    expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: 'https://api.example.com/' }).publicBaseUrl).toBe('https://api.example.com');
  });

  it('trims several trailing slashes from PUBLIC_BASE_URL, keeping its path', () => {
    expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: 'https://example.com/prod//' }).publicBaseUrl).toBe('https://example.com/prod');
  });

  it('accepts an http PUBLIC_BASE_URL with a port', () => {
    expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: 'http://127.0.0.1:3000' }).publicBaseUrl).toBe('http://127.0.0.1:3000');
  });

  it('treats an empty PUBLIC_BASE_URL as not configured', () => {
    expect(readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: '' }).publicBaseUrl).toBeUndefined();
  });

  it.each(['api.example.com', 'ftp://api.example.com', 'https://', 'https:///path', 'https://api example.com', '/relative'])(
    'rejects the PUBLIC_BASE_URL %j',
    (url) => {
      expect(() => readApiConfig({ TABLE_NAME: 't', PUBLIC_BASE_URL: url })).toThrow('PUBLIC_BASE_URL is not an http(s) URL');
    },
  );

  it('reads DYNAMODB_ENDPOINT', () => {
    expect(readApiConfig({ TABLE_NAME: 't', DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' }).dynamodbEndpoint).toBe('http://127.0.0.1:8000');
  });

  it('treats an empty DYNAMODB_ENDPOINT as not configured', () => {
    expect(readApiConfig({ TABLE_NAME: 't', DYNAMODB_ENDPOINT: ' ' }).dynamodbEndpoint).toBeUndefined();
  });
});

describe('LOG_LEVEL', () => {
  it.each(['debug', 'INFO', 'silent', undefined])('takes %s', (level) => {
    expect(() => readLogLevel({ LOG_LEVEL: level })).not.toThrow();
  });

  it('refuses an unknown level at start, naming the allowed ones', () => {
    expect(() => readLogLevel({ LOG_LEVEL: 'verbose' })).toThrow('LOG_LEVEL must be one of trace, debug, info, warn, error, critical, silent (any case), not "verbose"');
  });
});
