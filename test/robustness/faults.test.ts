import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_TIMEOUT_MS } from '../../shared/api/function-settings.ts';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { startFaultProxy, type Fault, type FaultProxy, type ProxyMode } from '../support/fault-proxy.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * Faults: the real functions, the real DynamoDB Local, and between them a TCP proxy that is
 * switched to refuse, close, reset, stall or throttle. Every fault must give
 * `503 {"message":"Service Unavailable"}` with `Retry-After: 1` before the function's timeout
 * would kill it, and the first request after the fault clears must succeed. No unhandled
 * rejection, no crash of the local server.
 *
 * These assert outcomes, with time bounds a loaded machine meets: how fast each 503 comes is
 * printed (and measured by the benchmark), not asserted.
 */
const SECRET = 'faults-secret';
/** docs/contract.md, section 2: a request waits on the database at most 8 s in all. */
const DATABASE_WAIT_MS = 8_000;
const ENDPOINTS = ['/api/acme/finances', '/api/acme/daemons', '/api/acme/projects?per_page=5&page=2'] as const;

let api: TestApi;
let proxy: FaultProxy;
const processErrors: unknown[] = [];
const onProcessError = (error: unknown) => processErrors.push(error);
const timings: string[] = [];

beforeAll(async () => {
  process.on('unhandledRejection', onProcessError);
  process.on('uncaughtException', onProcessError);
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme')],
      users: [user(10, [1])],
      tokens: [token(10, SECRET)],
      environments: [environment(5, 1)],
      servers: [server(7, 1, '24.15')],
      projects: projects(1, 12),
      daemons: daemons(5, 7, 4),
    }),
  );
  proxy = await startFaultProxy(table.endpoint);
  api = await startApi(table, { DYNAMODB_ENDPOINT: proxy.endpoint });
});

afterAll(async () => {
  await api?.close();
  await proxy?.close();
  process.off('unhandledRejection', onProcessError);
  process.off('uncaughtException', onProcessError);
  console.info(`faults: ${proxy?.injected} faults injected; time to each 503:\n  ${timings.join('\n  ')}`);
});

async function timedGet(path: string): Promise<ApiResponse & { ms: number }> {
  const started = performance.now();
  const res = await api.get(path, { token: SECRET });
  return { ...res, ms: performance.now() - started };
}

function expectServiceUnavailable(res: ApiResponse) {
  expect(res.status).toBe(503);
  expect(res.text).toBe('{"message":"Service Unavailable"}');
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
}

/**
 * The right 200 for `path`. A loaded machine can keep DynamoDB Local past the SDK's timeouts (the
 * retry quota spent by the faults before, a connection reset while pooled): the contract answers
 * that 503 with Retry-After: 1, and a client asking again after it must then get the 200. Once,
 * noted in the timings; a second 503, or any other answer, fails. `strict`: no second chance,
 * where a second request could pass by the fault's own pattern.
 */
async function expectHealthy(path: string, { strict = false } = {}) {
  let res = await api.get(path, { token: SECRET });
  if (res.status === 503 && !strict) {
    expectServiceUnavailable(res);
    timings.push(`${path}: 503 at once on a loaded machine, asked again after Retry-After`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    res = await api.get(path, { token: SECRET });
  }
  expect(res.status, res.text).toBe(200);
  if (path.includes('projects'))
    expect(res.body.data.map((p: { id: number }) => p.id)).toEqual([100_006, 100_007, 100_008, 100_009, 100_010]);
  if (path.includes('daemons')) expect(res.body.meta.total).toBe(4);
  if (path.includes('finances')) expect(res.body.grand_total).toBe(24.15);
}

/**
 * Turns the fault on, asks every endpoint, turns it off, and asks again. Each answer under the
 * fault must come before `withinMs` (by default the function's timeout: it was not killed).
 */
async function underFault(
  mode: Exclude<ProxyMode, { fault: 'pass' }>,
  paths: readonly string[],
  withinMs = FUNCTION_TIMEOUT_MS,
) {
  await proxy.set(mode);
  const injectedBefore = proxy.injected;
  try {
    const answers = await Promise.all(paths.map(async (path) => ({ path, res: await timedGet(path) })));
    for (const { path, res } of answers) {
      timings.push(`${JSON.stringify(mode)} ${path}: ${res.status} in ${Math.round(res.ms)} ms`);
      expectServiceUnavailable(res);
      expect(res.ms, `${path} answered after ${Math.round(res.ms)} ms`).toBeLessThan(withinMs);
    }
    // A refused connection never reaches the proxy; every other fault is applied by it.
    if (mode.fault !== 'refuse') expect(proxy.injected).toBeGreaterThan(injectedBefore);
  } finally {
    await proxy.pass();
  }
  for (const path of paths) await expectHealthy(path);
}

describe('DynamoDB faults behind the functions', () => {
  it('serves normally through the proxy when no fault is on', async () => {
    for (const path of ENDPOINTS) await expectHealthy(path);
  });

  const fastFaults: Fault[] = ['refuse', 'close', 'reset', 'throttle', 'provisioned', 'internal'];
  it.each(fastFaults)(
    "answers 503 with Retry-After: 1 before the function's timeout when DynamoDB is %s, and recovers at once",
    async (fault) => {
      await underFault({ fault }, ENDPOINTS);
    },
  );

  it.each(['reset', 'throttle', 'close'] as const)(
    'answers 503 when only the page Query fails (%s), after the token and team were read',
    async (fault) => {
      await underFault({ fault, operations: ['Query'] }, ENDPOINTS.slice(1));
      expect(proxy.forwarded).toBeGreaterThan(0);
      // Finances need no Query: they are untouched by it.
      await proxy.set({ fault, operations: ['Query'] });
      try {
        await expectHealthy('/api/acme/finances');
      } finally {
        await proxy.pass();
      }
    },
  );

  it('answers 503 when every BatchGetItem comes back with all its keys unprocessed (a throttled batch)', async () => {
    await underFault({ fault: 'unprocessed' }, ENDPOINTS);
  });

  it('retries unprocessed keys and answers 200 with the right data when a retry gets them', async () => {
    for (const passEvery of [2, 3]) {
      await proxy.set({ fault: 'unprocessed', passEvery });
      try {
        for (const path of ENDPOINTS) await expectHealthy(path, { strict: true });
      } finally {
        await proxy.pass();
      }
    }
    expect(proxy.forwarded).toBeGreaterThan(0);
  });

  it("answers 503 within the contract's 8 s wait on the database when DynamoDB stalls (accepts, never answers)", async () => {
    // The SDK gives up on a call after 2 attempts of at most (connect 0.5 s + answer 1.5 s),
    // about 3 s. The bound is the contract's (8 s of waiting, plus a second to answer), which the
    // request's last-resort deadline (0.5 s before the function's 10 s timeout) would not meet:
    // the 503 must come from the SDK's timeouts.
    await underFault({ fault: 'slow', delayMs: 60_000 }, [ENDPOINTS[0], ENDPOINTS[2]], DATABASE_WAIT_MS + 1_000);
  }, 30_000);

  it('answers every one of a burst of concurrent requests with 503 under a fault, and each with 200 after it', async () => {
    await proxy.set({ fault: 'reset' });
    try {
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => timedGet(ENDPOINTS[i % 3]!)));
      for (const res of answers) expectServiceUnavailable(res);
    } finally {
      await proxy.pass();
    }
    // Thirty at once, in the one process that runs the test, the functions and the proxy: on a
    // loaded machine some may wait longer than the SDK's timeouts allow (and the SDK's retry quota
    // is spent by now), which the contract answers 503 with Retry-After: 1. Each of those must
    // then succeed when asked again after that second; every other answer must be a 200 at once.
    const paths = Array.from({ length: 30 }, (_, i) => ENDPOINTS[i % 3]!);
    const answers = await Promise.all(paths.map((path) => timedGet(path)));
    const unavailable = paths.filter((_, i) => answers[i]!.status === 503);
    for (const res of answers) if (res.status !== 200) expectServiceUnavailable(res);
    if (unavailable.length > 0) {
      timings.push(
        `burst after a reset: ${unavailable.length} of 30 answered 503 at once, asked again after Retry-After`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      for (const path of unavailable) await expectHealthy(path);
    }
  });

  it('answers requests already in flight when a fault starts with 200 or 503, never anything else', async () => {
    const inFlight = Array.from({ length: 40 }, (_, i) => timedGet(ENDPOINTS[i % 3]!));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await proxy.set({ fault: 'reset' });
    const answers = await Promise.all(inFlight);
    await proxy.pass();
    for (const res of answers) {
      expect([200, 503]).toContain(res.status);
      if (res.status === 503) expectServiceUnavailable(res);
    }
    for (const path of ENDPOINTS) await expectHealthy(path);
  });

  it('had no unhandled rejection or uncaught exception, and the server still answers', async () => {
    expect(processErrors).toEqual([]);
    await expectHealthy(ENDPOINTS[2]);
  });
});
