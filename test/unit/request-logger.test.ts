import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, RequestLogger } from '../../shared/log.ts';

/**
 * RequestLogger (shared/log.ts) with Powertools' real Logger: each line carries the Lambda
 * context of the request that wrote it, and `cold_start` is true on the lines of a function's
 * first request only, however many lines each request writes.
 */
function lambdaContext(awsRequestId: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: true, functionName: 'unit-function', functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:eu-west-1:000000000000:function:unit-function', memoryLimitInMB: '1024',
    awsRequestId, logGroupName: '/aws/lambda/unit-function', logStreamName: 'unit',
    getRemainingTimeInMillis: () => 10_000, done: () => {}, fail: () => {}, succeed: () => {},
  };
}

/** The lines written on stdout and stderr (Powertools writes ERROR lines to stderr), in order. */
function captureLines(): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  const capture = (chunk: string | Uint8Array) => {
    for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  // Powertools reports a cold start only in an on-demand environment, as Lambda says it is one.
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
  return lines;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('RequestLogger', () => {
  it('puts the request id and function of the request on each of its lines', () => {
    const lines = captureLines();
    const log = new RequestLogger(createLogger({ LOG_LEVEL: 'INFO' }));
    log.of(lambdaContext('request-1')).info('one');
    log.of(lambdaContext('request-2')).info('two');
    expect(lines.map((l) => [l.message, l.function_request_id, l.function_name])).toEqual([
      ['one', 'request-1', 'unit-function'],
      ['two', 'request-2', 'unit-function'],
    ]);
  });

  it('says cold start on every line of the first request, and on no later one', () => {
    const lines = captureLines();
    const log = new RequestLogger(createLogger({ LOG_LEVEL: 'INFO' }));
    const first = lambdaContext('request-1');
    const second = lambdaContext('request-2');
    log.of(first).error('request failed');
    log.of(first).info('request');
    log.of(second).error('request failed');
    log.of(second).info('request');
    expect(lines.map((l) => [l.function_request_id, l.cold_start])).toEqual([
      ['request-1', true], ['request-1', true], ['request-2', false], ['request-2', false],
    ]);
  });

  it('gives a line the context of the request that writes it when two requests interleave (the local server)', () => {
    const lines = captureLines();
    const log = new RequestLogger(createLogger({ LOG_LEVEL: 'INFO' }));
    const a = lambdaContext('request-a');
    const b = lambdaContext('request-b');
    log.of(a).info('a starts');
    log.of(b).info('b');
    log.of(a).info('a ends');
    expect(lines.map((l) => [l.message, l.function_request_id])).toEqual([['a starts', 'request-a'], ['b', 'request-b'], ['a ends', 'request-a']]);
  });
});
