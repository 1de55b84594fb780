import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { contractProblems } from '../support/contract-bodies.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { FUZZ_REQUESTS, propertyParameters, replayHint, timeLimit } from '../support/fuzz.ts';
import { buildRequest, rawRequest, type RawRequestSpec } from '../support/raw-http.ts';
import { daemons, environment, projects, server, snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * Fuzzing the HTTP surface: over 10,000 generated requests with hostile paths, query strings and
 * headers, sent byte for byte over raw sockets. Every answer must be a 200 or a 4xx with a JSON
 * body the contract describes; not one 5xx, not one dropped connection.
 *
 * The requests go in batches of BATCH at a time, one batch per fast-check run, from the suite's
 * seed (FUZZ_SEED). A bad answer fails the run, and fast-check shrinks the batch to the fewest
 * and simplest requests that still get one: the report names the seed, the path and those requests.
 */
const FILE = 'test/robustness/http-fuzz.test.ts';
const DEFAULT_REQUESTS = 10_240;
const REQUESTS = FUZZ_REQUESTS ?? DEFAULT_REQUESTS;
const BATCH = 64;
const BATCHES = Math.ceil(REQUESTS / BATCH);
/** A batch takes well under a second: shrinking a failure tries at most this many smaller ones. */
const MAX_SHRINKS = 500;

const TOKENS = {
  all: 'fuzz-token-all',
  projects: 'fuzz-token-projects',
  other: 'fuzz-token-other',
  expired: 'fuzz-token-expired',
};

let api: TestApi;
beforeAll(async () => {
  const table = await freshTable();
  await importDocument(
    table,
    snapshot({
      teams: [team(1, 'acme'), team(2, 'globex')],
      users: [user(10, [1]), user(11, [2])],
      tokens: [
        token(10, TOKENS.all),
        token(10, TOKENS.projects, ['projects:read']),
        token(11, TOKENS.other),
        token(10, TOKENS.expired, ['*'], { expires_at: '2020-01-01T00:00:00Z' }),
      ],
      environments: [environment(5, 1), environment(6, 2)],
      servers: [server(7, 1, '24.15'), server(8, 2, 3)],
      projects: [...projects(1, 45), ...projects(2, 3)],
      daemons: [...daemons(5, 8, 25), ...daemons(6, 7, 2)],
      costs: [{ team_id: 1, label: 'Backups', amount: '0.1', currency: 'EUR' }],
    }),
  );
  api = await startApi(table);
});
afterAll(() => api?.close());

// ---- generators -------------------------------------------------------------------------------

const long = (unit: string) =>
  fc.integer({ min: 100, max: 9_000 }).map((n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n));
/** Characters a request target may carry (raw non-ASCII included), and ones Node's parser refuses. */
const targetUnits = [
  'a',
  'Z',
  '0',
  '9',
  '-',
  '_',
  '.',
  '/',
  '\\',
  '%',
  '%2F',
  '%2f',
  '%2E',
  '%00',
  '%0A',
  '%zz',
  '%E0%A4',
  '%C0%AF',
  '%ED%A0%80',
  '%FF',
  '%C3%A9',
  '%E6%97%A5',
  '%F0%9F%98%80',
  '?',
  '#',
  ';',
  '&',
  '=',
  '+',
  '$',
  '{',
  '}',
  '"',
  "'",
  '<',
  '>',
  '|',
  '~',
  '!',
  '@',
  '(',
  '*',
  ':',
  ',',
];
const hostileText = fc.oneof(
  { weight: 20, arbitrary: fc.string({ unit: fc.constantFrom(...targetUnits), maxLength: 12 }) },
  // Raw Unicode and control bytes in the target: Node's parser refuses most of them (400).
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom(...targetUnits, 'é', '日', '😀', '\u0085', ' ', '\t', '\x00', '\x7f', '\r', '\n'),
      maxLength: 12,
    }),
  },
);

const teamSegment = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('acme', '1', 'globex', '2') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '01',
      '1.0',
      '+1',
      '-1',
      '0',
      '1e0',
      'ACME',
      'Acme',
      '%61cme',
      'ac%2Fme',
      'ac%2fme',
      'acme%2F..',
      '..',
      '.',
      '%2e%2e',
      '%2E',
      '%00',
      'acme%00',
      '%',
      '%zz',
      '%E0%A4',
      '%C0%AF',
      '%ED%A0%80',
      '%FF',
      '%C3%A9',
      '%E6%97%A5%E6%9C%AC',
      '%F0%9F%98%80',
      '%20',
      'acme%20',
      '+',
      'a+b',
      '\\',
      ';',
      'acme;x=1',
      '*',
      '$',
      '{team}',
      '%7Bteam%7D',
      '__proto__',
      'constructor',
      'hasOwnProperty',
      'TEAMREF',
      'TEAMREF%23acme',
      '%23',
      'acme%23HEAD',
      '9007199254740993',
      '99999999999999999999999999999',
    ),
  },
  { weight: 2, arbitrary: hostileText },
  { weight: 1, arbitrary: fc.oneof(long('a'), long('%41'), long('%C3%A9'), long('%00'), long('1'), long('..%2F')) },
  // Raw (not percent-encoded) Unicode and spaces: Node's parser refuses them (400).
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('é', '日本', '😀', 'a b'), long('é')) },
);
const resource = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('projects', 'daemons', 'finances') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'Projects',
      'project',
      'projects/',
      'projects%2F',
      '%70rojects',
      'projects/..',
      'projects/.',
      'projects%00',
      'finances.json',
      '',
      '..',
      'projects;',
      'daemons/1',
    ),
  },
  { weight: 1, arbitrary: hostileText },
);
const prefix = fc.oneof(
  { weight: 8, arbitrary: fc.constant('/api/') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '//api/',
      '/API/',
      '/api//',
      '/./api/',
      '/api/../api/',
      '/%61pi/',
      '/api%2F',
      '/v1/api/',
      'api/',
      '/',
      'http://127.0.0.1/api/',
      '*',
      '/api/./',
      '/..%2Fapi/',
    ),
  },
);
const path = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .tuple(
        prefix,
        teamSegment,
        fc.oneof({ weight: 12, arbitrary: fc.constant('/') }, fc.constantFrom('//', '/./', '/%2F', '/../')),
        resource,
      )
      .map((parts) => parts.join('')),
  },
  {
    weight: 1,
    arbitrary: fc.oneof(
      hostileText.map((t) => `/${t}`),
      long('/a'),
      fc.constantFrom('/', '/api', '/api/acme', '/favicon.ico', '/api/acme/projects/extra'),
    ),
  },
);

const paramName = fc.constantFrom(
  'page',
  'per_page',
  'page',
  'per_page',
  'PAGE',
  'per%5Fpage',
  'page[]',
  'page%00',
  'per_page%20',
  'per_page+',
  '__proto__',
  'constructor',
  'toString',
  '',
  'token',
  'a',
);
const paramValue = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 60 }).map(String) },
  fc.constantFrom(
    '',
    '0',
    '1',
    '2',
    '3',
    '50',
    '51',
    '-1',
    '-0',
    '1e3',
    '1E2',
    '1.0',
    '.5',
    '+1',
    '%201',
    '1%20',
    '1+',
    '0x10',
    '%D9%A3',
    '%EF%BC%91',
    '9007199254740991',
    '9007199254740992',
    '99999999999999999999999999',
    '00000000000000000000000001',
    'NaN',
    'Infinity',
    '%00',
    '%',
    '%zz',
    '%E0%A4',
    'a%26b',
    '1,2',
    '1%2C2',
    'true',
    'null',
    '[]',
    '{}',
  ),
  fc.integer({ min: -1_000, max: 1_000 }).map(String),
  hostileText,
  long('9'),
);
const param = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(paramName, paramValue).map(([n, v]) => `${n}=${v}`) },
  { weight: 1, arbitrary: fc.constantFrom('page', 'per_page', '=', '==', '&', 'page==1', 'page=1=2') },
);
const query = fc.oneof(
  { weight: 5, arbitrary: fc.constant('') },
  { weight: 6, arbitrary: fc.array(param, { minLength: 1, maxLength: 5 }).map((ps) => `?${ps.join('&')}`) },
  { weight: 1, arbitrary: fc.constantFrom('?', '?&', '?&&', '?;', '?page=1;per_page=2', '?page=1#frag', '#frag') },
  {
    weight: 1,
    arbitrary: fc.tuple(param, fc.integer({ min: 20, max: 400 })).map(([p, n]) => `?${Array(n).fill(p).join('&')}`),
  },
);

const validToken = fc.constantFrom(...Object.values(TOKENS));
const tokenText = fc.oneof(
  { weight: 4, arbitrary: validToken },
  {
    weight: 2,
    arbitrary: validToken.chain((t) =>
      fc.constantFrom(
        t.slice(1),
        t.slice(0, -1),
        `${t}x`,
        `x${t}`,
        t.toUpperCase(),
        `${t}\x00`,
        `${encodeURIComponent(t)}%20`,
      ),
    ),
  },
  { weight: 1, arbitrary: long('A') },
  // Binary: printable and high latin1 bytes (obs-text), rarely control bytes too.
  {
    weight: 2,
    arbitrary: fc
      .uint8Array({ minLength: 1, maxLength: 64, min: 0x21 })
      .map((bytes) => Buffer.from(bytes.map((b) => (b === 0x7f ? 0x80 : b))).toString('latin1')),
  },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'null', 'undefined', '*', 'tra_', `tra_${'A'.repeat(43)}`) },
);
const authorization = fc.oneof(
  { weight: 8, arbitrary: tokenText.map((t) => `Bearer ${t}`) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'bearer',
          'BEARER',
          'Bearer',
          ' Bearer',
          'Bearer\t',
          'Basic',
          'Token',
          'Bearer:',
          'Beare',
          'Bearerx',
          'Digest',
          '',
        ),
        fc.constantFrom(' ', '  ', '\t', ''),
        tokenText,
        fc.constantFrom('', ' ', '  ', ' x', ',Bearer x'),
      )
      .map(([scheme, gap, t, tail]) => `${scheme}${gap}${t}${tail}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'Bearer',
      'Bearer ',
      'bearer',
      'Basic dXNlcjpwYXNz',
      'Negotiate',
      '',
      '\x80\xff',
      'Bearer a b',
    ),
  },
);
const oddHeader: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(
    fc.constantFrom('Accept'),
    fc.constantFrom('application/json', 'text/html', '*/*', '', 'application/xml;q=1', '\x7f'),
  ),
  fc.tuple(
    fc.constantFrom('X-Forwarded-Proto'),
    fc.constantFrom('https', 'ftp', '', 'http,https', '"><script>', '\x80'),
  ),
  fc.tuple(
    fc.constantFrom('Host'),
    fc.constantFrom('example.com', '', 'a b', 'x'.repeat(300), 'évil', '[::1]:1', '127.0.0.1:1/../x'),
  ),
  fc.tuple(
    fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', 'Cookie', 'X-Amz-Target', 'Content-Type', 'X-Empty'),
    fc.constantFrom('', 'x', 'a=b; c=d', 'DynamoDB_20120810.Scan'),
  ),
  fc.tuple(fc.constantFrom('X-Huge'), long('h')),
  fc.tuple(
    fc.constantFrom('If-None-Match', 'If-Modified-Since', 'Range'),
    fc.constantFrom('*', 'W/"x"', '"abc", *', '', 'bytes=0-1', 'Thu, 01 Jan 2099 00:00:00 GMT'),
  ),
);
/** Header lines Node's parser refuses outright (answered 400 by the server itself). */
const brokenHeader: fc.Arbitrary<[string, string]> = fc.tuple(
  fc.constantFrom('Bad Name', 'Bad:Name', 'X-Ctl', 'Accept'),
  fc.constantFrom('\x01', 'ok', 'a\x00b', '\x7f'),
);
const headers = fc.oneof(
  { weight: 10, arbitrary: fc.constant<[string, string][]>([]) },
  { weight: 6, arbitrary: fc.array(oddHeader, { minLength: 1, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.array(fc.oneof(oddHeader, brokenHeader), { minLength: 1, maxLength: 3 }) },
);
const methodArb = fc.oneof(
  { weight: 24, arbitrary: fc.constant('GET') },
  { weight: 2, arbitrary: fc.constantFrom('POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND') },
  { weight: 1, arbitrary: fc.constantFrom('get', 'GeT', 'G ET', 'GET\x00', 'FOO') },
);
const body = fc.oneof(
  { weight: 24, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, string][]>([['Content-Length', '5']], [['Transfer-Encoding', 'chunked']]),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<[string, string][]>(
      [['Content-Length', '-1']],
      [['Content-Length', '99999999999999999999']],
      [
        ['Transfer-Encoding', 'chunked'],
        ['Content-Length', '3'],
      ],
    ),
  },
);

/** A request that would succeed but for one hostile part: its query, its headers, or a duplicated token. */
const nearlyValidTarget = fc
  .tuple(fc.constantFrom('/api/acme/', '/api/1/'), fc.constantFrom('projects', 'daemons', 'finances'), query)
  .map((parts) => parts.join(''));
interface Drawn {
  method: string;
  target: string;
  authorization: string[];
  headers: [string, string][];
  body: [string, string][] | undefined;
}
const nearlyValid: fc.Arbitrary<Drawn> = fc.record({
  method: fc.constant('GET'),
  target: nearlyValidTarget,
  authorization: fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom<string[]>(
        [`Bearer ${TOKENS.all}`],
        [`bearer  ${TOKENS.all} `],
        [`Bearer ${TOKENS.projects}`],
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constant(`Bearer ${TOKENS.all}`), authorization).map((pair): string[] => [...pair]),
    },
  ),
  headers,
  body: fc.constant(undefined),
});
const anyRequest: fc.Arbitrary<Drawn> = fc.record({
  method: methodArb,
  target: fc.tuple(path, query).map(([p, q]) => p + q),
  // None, one, or a duplicated Authorization header.
  authorization: fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([]) },
    { weight: 10, arbitrary: fc.array(authorization, { minLength: 1, maxLength: 1 }) },
    { weight: 2, arbitrary: fc.array(authorization, { minLength: 2, maxLength: 3 }) },
  ),
  headers,
  body,
});
const requestArb = fc
  .oneof({ weight: 3, arbitrary: anyRequest }, { weight: 1, arbitrary: nearlyValid })
  .map(({ method, target, authorization, headers, body }): RawRequestSpec => {
    const lines: [string, string][] = [
      ...authorization.map((a): [string, string] => ['Authorization', a]),
      ...headers,
      ...(body ?? []),
    ];
    const chunked = body?.some(([name]) => name === 'Transfer-Encoding');
    return { method, target, headers: lines, tail: chunked ? '5\r\nhello\r\n0\r\n\r\n' : body ? 'hello' : undefined };
  });

/**
 * One batch: BATCH requests, each of which shrinking may drop, so a failure shrinks to the one
 * request, or the few, that cause it. (Drawing one absent is as rare as the option's 1 in 100,000
 * makes it, with fast-check's bias: about one request in a whole run goes unsent.)
 */
const batchArb = fc
  .array(fc.option(requestArb, { nil: undefined, freq: 100_000 }), { minLength: BATCH, maxLength: BATCH })
  .map((requests) => requests.filter((request): request is RawRequestSpec => request !== undefined));

let retriedAfter503 = 0;

/**
 * What is wrong with the answer to one request (nothing: an empty list). A 503 is the contract's
 * answer to a database too slow to answer in time, which on a loaded machine can be DynamoDB
 * Local rather than the request: the same request, sent once more, must then get a right answer.
 */
async function answerProblems(spec: RawRequestSpec, statuses: Map<number, number>, attempt = 1): Promise<string[]> {
  const bytes = buildRequest(spec, `127.0.0.1:${api.server.port}`);
  try {
    const res = await rawRequest(api.server.port, bytes);
    if (res.status === 503 && res.body === '{"message":"Service Unavailable"}' && attempt === 1) {
      retriedAfter503++;
      return answerProblems(spec, statuses, attempt + 1);
    }
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    const problems = contractProblems(res);
    if (problems.length > 0 && attempt > 1) problems.push('and a 503 the first time it was sent');
    if (res.status === 304 && !spec.headers?.some(([name]) => name === 'If-None-Match'))
      problems.push('304 to a request without If-None-Match');
    return problems.length === 0 ? [] : [`${res.status} ${res.body.slice(0, 200)}: ${problems.join('; ')}`];
  } catch (error) {
    return [(error as Error).message];
  }
}

describe('fuzzing the HTTP surface', () => {
  it(
    `answers ${BATCHES * BATCH} hostile requests with a 200 or a 4xx and a contract body, never a 5xx`,
    async () => {
      const statuses = new Map<number, number>();
      let sent = 0;
      await fc.assert(
        fc.asyncProperty(fc.limitShrink(batchArb, MAX_SHRINKS), async (requests) => {
          const answers = await Promise.all(requests.map((spec) => answerProblems(spec, statuses)));
          sent += requests.length;
          const bad = requests.flatMap((spec, i) =>
            answers[i]!.map(
              (problem) =>
                `${JSON.stringify(buildRequest(spec, 'HOST').toString('latin1').slice(0, 300))}\n  -> ${problem}`,
            ),
          );
          if (bad.length > 0) throw new Error(`${bad.length} bad answers:\n${bad.join('\n')}`);
        }),
        // FUZZ_REQUESTS, not FUZZ_RUNS, sizes the fuzzing.
        propertyParameters(BATCHES, { numRuns: BATCHES }),
      );
      const summary = [...statuses]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status}: ${count}`)
        .join(', ');
      console.info(
        `fuzz: ${sent} requests; ${summary}; ${retriedAfter503} sent again after a 503; ${replayHint(FILE)}`,
      );
      // The generators must reach every layer, or the fuzzing proves little.
      const enough = Math.max(1, Math.floor(sent / 200));
      for (const status of [200, 400, 401, 403, 404, 422, 431])
        expect(statuses.get(status) ?? 0, `too few ${status} answers`).toBeGreaterThanOrEqual(enough);
      // The server is still up and right afterwards.
      const after = await api.get('/api/acme/projects?per_page=5', { token: TOKENS.all });
      expect(after.status).toBe(200);
      expect(after.body.meta.total).toBe(45);
    },
    timeLimit(180_000, DEFAULT_REQUESTS, REQUESTS),
  );
});
