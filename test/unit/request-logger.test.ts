import { setImmediate as eventLoopTurn } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger, linesWritten, RequestLogger, type Logger } from '../../shared/log.ts';

/**
 * RequestLogger (shared/log.ts) with Powertools' real Logger: a request's lines are written after
 * the response, in order, each with the Lambda context of the request that wrote it, and
 * `cold_start` is true on the lines of a function's first request only.
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
  return lines;
}

/** A request log whose logger is Powertools', made the way a function makes it. */
async function requestLog(): Promise<{ log: RequestLogger; loads: () => number }> {
  // Powertools reports a cold start only in an on-demand environment, as Lambda says it is one.
  vi.stubEnv('AWS_LAMBDA_INITIALIZATION_TYPE', 'on-demand');
  let loads = 0;
  const logger = await createLogger('INFO');
  return { log: new RequestLogger(async () => (loads++, logger)), loads: () => loads };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe('RequestLogger', () => {
  it('writes nothing, and loads no logger, until the request is over: the line comes in the next turn of the event loop', async () => {
    const { log, loads } = await requestLog();
    const lines = captureLines();
    log.afterResponse(lambdaContext('request-1'), 'info', 'request', { status: 200 });
    expect([lines.length, loads()]).toEqual([0, 0]);
    await eventLoopTurn();
    expect(lines.map((l) => [l.message, l.status])).toEqual([['request', 200]]);
    expect(loads()).toBe(1);
  });

  it('puts the request id and function of the request on each of its lines', async () => {
    const { log } = await requestLog();
    const lines = captureLines();
    log.afterResponse(lambdaContext('request-1'), 'info', 'one', {});
    await eventLoopTurn();
    log.afterResponse(lambdaContext('request-2'), 'info', 'two', {});
    await eventLoopTurn();
    expect(lines.map((l) => [l.message, l.function_request_id, l.function_name])).toEqual([
      ['one', 'request-1', 'unit-function'],
      ['two', 'request-2', 'unit-function'],
    ]);
  });

  it('says cold start on every line of the first request, and on no later one; lines keep their order', async () => {
    const { log } = await requestLog();
    const lines = captureLines();
    const first = lambdaContext('request-1');
    const second = lambdaContext('request-2');
    log.afterResponse(first, 'error', 'request failed', {});
    log.afterResponse(first, 'info', 'request', {});
    await eventLoopTurn();
    log.afterResponse(second, 'error', 'request failed', {});
    log.afterResponse(second, 'info', 'request', {});
    await eventLoopTurn();
    expect(lines.map((l) => [l.message, l.function_request_id, l.cold_start])).toEqual([
      ['request failed', 'request-1', true], ['request', 'request-1', true], ['request failed', 'request-2', false], ['request', 'request-2', false],
    ]);
  });

  it('keeps the lines in order while the logger is still loading', async () => {
    const lines: string[] = [];
    let resolveLoad!: (logger: Logger) => void;
    const log = new RequestLogger(() => new Promise((resolve) => (resolveLoad = resolve)));
    log.afterResponse(lambdaContext('request-1'), 'error', 'first', {});
    log.afterResponse(lambdaContext('request-1'), 'info', 'second', {});
    await eventLoopTurn();
    log.afterResponse(lambdaContext('request-2'), 'info', 'third', {});
    await eventLoopTurn();
    expect(lines).toEqual([]);
    resolveLoad({ addContext: () => {}, info: (message: string) => void lines.push(message), error: (message: string) => void lines.push(message) } as unknown as Logger);
    await eventLoopTurn();
    expect(lines).toEqual(['first', 'second', 'third']);
  });

  it('writes at the level the environment named when the function was built, whatever it says later', async () => {
    const lines = captureLines();
    vi.stubEnv('LOG_LEVEL', 'error');
    const log = new RequestLogger();
    vi.stubEnv('LOG_LEVEL', 'INFO');
    log.afterResponse(lambdaContext('request-1'), 'info', 'an info line', {});
    log.afterResponse(lambdaContext('request-1'), 'error', 'an error line', {});
    await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0));
    expect(lines.map((l) => l.message)).toEqual(['an error line']);
  });

  it('tells a host that ends its process after a request when every line is out (linesWritten), the logger loading or not', async () => {
    const lines: string[] = [];
    let resolveLoad!: (logger: Logger) => void;
    const log = new RequestLogger(() => new Promise((resolve) => (resolveLoad = resolve)));
    log.afterResponse(lambdaContext('request-1'), 'info', 'the line', {});
    let done = false;
    const written = linesWritten().then(() => (done = true));
    await eventLoopTurn();
    await eventLoopTurn();
    expect(done).toBe(false);
    resolveLoad({ addContext: () => {}, info: (message: string) => void lines.push(message) } as unknown as Logger);
    await written;
    expect(lines).toEqual(['the line']);
  });

  it('gives a line the context of the request that wrote it when two requests interleave (the local server)', async () => {
    const { log } = await requestLog();
    const lines = captureLines();
    const a = lambdaContext('request-a');
    const b = lambdaContext('request-b');
    log.afterResponse(a, 'info', 'a starts', {});
    log.afterResponse(b, 'info', 'b', {});
    log.afterResponse(a, 'info', 'a ends', {});
    await eventLoopTurn();
    expect(lines.map((l) => [l.message, l.function_request_id])).toEqual([['a starts', 'request-a'], ['b', 'request-b'], ['a ends', 'request-a']]);
  });
});
