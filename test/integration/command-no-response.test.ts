import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import { freshTable, importDocument, type TestTable } from '../support/dynamodb.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { NODE, ROOT } from '../support/import-process.ts';
import { snapshot, team, token, user } from '../support/snapshots.ts';

/**
 * docs/contract.md, section 8: a database that sends no response at all for 10 seconds is reported then,
 * naming the endpoint that was tried (the setting that names it, or AWS's region) and the table, with a hint
 * to check it; a slow one that answers is waited on. The silent endpoint is a TCP server that
 * accepts connections and never says a word; the stalling one answers every request with a status
 * line, headers and the first bytes of a body, then nothing; the trickling one sends a whole
 * answer a byte every 3 s. The cases wait side by side.
 */
const dir = mkdtempSync(join(tmpdir(), 'command-no-response-'));
const snapshotFile = join(dir, 'small.json');
writeFileSync(snapshotFile, JSON.stringify(snapshot({ teams: [team(1, 'acme')], users: [user(10, [1])] })));

const sockets = new Set<Socket>();
/** A TCP server that does `serve` with each connection and keeps it, to destroy at the end. */
const tcpServer = (serve: (socket: Socket) => void = () => {}) =>
  createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    serve(socket);
  });
const silentServer = tcpServer();
/** Headers for a 1,000-byte body, 5 bytes of it, then silence. */
const stallingServer = tcpServer((socket) => {
  socket.on('data', () =>
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 1000\r\n\r\n{"Ite'),
  );
});
/** The whole of an empty answer (`{   }`: no such item), one byte every 3 s: slow, never silent for 10 s. */
const tricklingServer = tcpServer((socket) => {
  socket.once('data', () => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 5\r\n\r\n');
    const bytes = [...'{   }'];
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer);
      socket.write(bytes.shift()!);
      if (bytes.length === 0) clearInterval(timer);
    }, 3_000);
  });
});
/** What the import adds to a database failure before its first write request (commands/import.ts). */
const nothingWritten = (table = 'team-resources') => `nothing was written to ${table}\n`;

/** A web server, not DynamoDB: an HTML page (as python3 -m http.server answers a POST), or a JSON error without a type. */
const webServer = createHttpServer((request, response) => {
  request.resume();
  request.on('end', () => {
    if (request.url === '/json/') {
      response.writeHead(404, { 'Content-Type': 'application/json' }).end('{"error":"not found"}');
    } else {
      response
        .writeHead(501, { 'Content-Type': 'text/html' })
        .end('<!DOCTYPE HTML>\n<html><body><h1>Error response</h1><p>Error code: 501</p></body></html>\n');
    }
  });
});
const listen = async (server: ReturnType<typeof createServer> | ReturnType<typeof createHttpServer>) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
};
let web: string;
let stalling: string;
let trickling: string;
let silent: string;
let table: TestTable;
let slow: FaultProxy;

beforeAll(async () => {
  silent = await listen(silentServer);
  stalling = await listen(stallingServer);
  trickling = await listen(tricklingServer);
  web = await listen(webServer);
  table = await freshTable();
  await importDocument(
    table,
    snapshot({ teams: [team(5, 'slow')], users: [user(50, [5])], tokens: [token(50, 'slow-but-sure-secret')] }),
  );
  slow = await startFaultProxy(table.endpoint);
  await slow.set({ fault: 'slow', delayMs: 4_000 });
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  silentServer.close();
  stallingServer.close();
  tricklingServer.close();
  webServer.closeAllConnections();
  webServer.close();
  await slow?.close();
});

/** Runs a command to its end (without blocking the other cases), timing it. */
function run(script: string, args: string[], env: Record<string, string | undefined>) {
  const started = performance.now();
  const child = spawn(NODE, [script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    child,
    done: new Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }>((resolve) =>
      child.once('close', (code) => resolve({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 })),
    ),
  };
}

/** Reported after the 10 s, and not minutes later (the SDK would otherwise retry for minutes). */
function expectReportedAtTen(seconds: number) {
  expect(seconds).toBeGreaterThanOrEqual(9);
  expect(seconds).toBeLessThan(30);
}

const HINT = 'check that DYNAMODB_ENDPOINT points at a running DynamoDB-compatible endpoint';

describe.concurrent('a DynamoDB that sends no response for 10 s', () => {
  it('npm run import says so after 10 s, naming DYNAMODB_ENDPOINT and the table (exit 1)', async () => {
    const { code, stdout, stderr, seconds } = await run('commands/import.ts', [snapshotFile], {
      DYNAMODB_ENDPOINT: silent,
      TABLE_NAME: 'silent-table',
    }).done;
    expect(code).toBe(1);
    expect(stdout).toBe('');
    // Said with what it leaves: the import had validated the file, and sent no write (contract, section 7).
    expect(stderr).toBe(
      `no response from DynamoDB for 10 s (DYNAMODB_ENDPOINT=${silent}, table silent-table): ${HINT}\n` +
        nothingWritten('silent-table'),
    );
    expectReportedAtTen(seconds);
  }, 60_000);

  it('npm run token says so after 10 s, naming DYNAMODB_ENDPOINT (exit 1)', async () => {
    const { code, stderr, seconds } = await run('commands/token.ts', ['list', '--user', '10'], {
      DYNAMODB_ENDPOINT: silent,
    }).done;
    expect(code).toBe(1);
    expect(stderr).toBe(
      `no response from DynamoDB for 10 s (DYNAMODB_ENDPOINT=${silent}, table team-resources): ${HINT}\n`,
    );
    expectReportedAtTen(seconds);
  }, 60_000);

  it("with the SDK's AWS_ENDPOINT_URL_DYNAMODB at a local endpoint, the message names that endpoint", async () => {
    const { code, stderr, seconds } = await run('commands/token.ts', ['create', '--user', '10', '--abilities', '*'], {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'example',
      AWS_ENDPOINT_URL_DYNAMODB: silent,
      TABLE_NAME: 'prod-table',
    }).done;
    expect(code).toBe(1);
    expect(stderr).toBe(
      `no response from DynamoDB for 10 s (AWS_ENDPOINT_URL_DYNAMODB=${silent}, table prod-table): ` +
        'check that AWS_ENDPOINT_URL_DYNAMODB points at a running DynamoDB-compatible endpoint\n',
    );
    expectReportedAtTen(seconds);
  }, 60_000);

  it('npm start says so after 10 s, and closes its port (exit 1)', async () => {
    const port = await freePort();
    const { code, stderr, seconds } = await run('commands/start.ts', ['--port', String(port), '--data', snapshotFile], {
      DYNAMODB_ENDPOINT: silent,
    }).done;
    expect(code).toBe(1);
    expect(stderr).toBe(
      `no response from DynamoDB for 10 s (DYNAMODB_ENDPOINT=${silent}, table team-resources): ${HINT}\n`,
    );
    expectReportedAtTen(seconds);
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  }, 60_000);

  it.each([
    ['npm run token -- list', 'commands/token.ts', ['list', '--user', '10']],
    ['npm run token -- create', 'commands/token.ts', ['create', '--user', '10', '--abilities', '*']],
    ['npm run import', 'commands/import.ts', [snapshotFile]],
  ])(
    '%s: a response that starts, then stalls, is reported after 10 s of silence, not retried (exit 1)',
    async (_, script, args) => {
      const { code, stdout, stderr, seconds } = await run(script, args, { DYNAMODB_ENDPOINT: stalling }).done;
      expect(code).toBe(1);
      expect(stdout).toBe('');
      // The operator's line alone: none of the SDK's "Deserialization error ... inspect the hidden field".
      const leaves = script === 'commands/import.ts' ? nothingWritten() : '';
      expect(stderr).toBe(
        `no response from DynamoDB for 10 s (DYNAMODB_ENDPOINT=${stalling}, table team-resources): ${HINT}\n${leaves}`,
      );
      expectReportedAtTen(seconds);
    },
    60_000,
  );

  it('a response whose body keeps coming, however slowly, is waited on', async () => {
    const { code, stdout, stderr, seconds } = await run('commands/token.ts', ['list', '--user', '10'], {
      DYNAMODB_ENDPOINT: trickling,
    }).done;
    // The whole answer read (no such user), after more than 10 s in all.
    expect(stderr).toBe('user 10 does not exist in table team-resources\n');
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(seconds).toBeGreaterThan(11);
  }, 60_000);

  it('a slow DynamoDB that answers each request within 10 s is waited on, however long the whole takes', async () => {
    // Three requests (the user, their token list, the tokens), each answered after 4 s.
    const { code, stdout, stderr, seconds } = await run('commands/token.ts', ['list', '--user', '50'], {
      DYNAMODB_ENDPOINT: slow.endpoint,
      TABLE_NAME: table.tableName,
    }).done;
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/active\s+token of 50\s+\*/);
    expect(seconds).toBeGreaterThan(11);
  }, 90_000);
});

describe.concurrent('an endpoint that answers, but not as DynamoDB does', () => {
  it.each([
    ['an HTML page (HTTP 501)', '', 501],
    ['a JSON error without a DynamoDB error type (HTTP 404)', '/json/', 404],
  ])(
    '%s: one line naming DYNAMODB_ENDPOINT and saying so, no SDK internals (exit 1)',
    async (_, path, status) => {
      const endpoint = `${web}${path}`;
      for (const [script, args] of [
        ['commands/token.ts', ['list', '--user', '10']],
        ['commands/import.ts', [snapshotFile]],
      ] as const) {
        const { code, stdout, stderr } = await run(script, [...args], { DYNAMODB_ENDPOINT: endpoint }).done;
        expect(code).toBe(1);
        expect(stdout).toBe('');
        const leaves = script === 'commands/import.ts' ? nothingWritten() : '';
        expect(stderr).toBe(
          `the endpoint did not answer as DynamoDB does (DYNAMODB_ENDPOINT=${endpoint}, table team-resources; HTTP ${status}): ${HINT}\n${leaves}`,
        );
      }
    },
    60_000,
  );
});

/** Accepts each connection and closes it before any answer. */
const droppingServer = tcpServer((socket) => socket.end());
/** Answers each request with a TCP reset. */
const resettingServer = tcpServer((socket) => socket.on('data', () => socket.resetAndDestroy()));
afterAll(() => {
  droppingServer.close();
  resettingServer.close();
});

describe.concurrent('a refused, dropped or reset connection is said as what it is, never as silence', () => {
  it.each([
    ['refused', async () => `http://127.0.0.1:${await freePort()}`, 'nothing accepts connections there (ECONNREFUSED)'],
    ['dropped', () => listen(droppingServer), 'the connection was dropped before an answer (ECONNRESET)'],
    ['reset', () => listen(resettingServer), 'the connection was dropped before an answer (ECONNRESET)'],
  ])(
    '%s: one line naming it; an import that wrote nothing says so (exit 1)',
    async (_, endpointOf, what) => {
      const endpoint = await endpointOf();
      for (const [script, args] of [
        ['commands/token.ts', ['list', '--user', '10']],
        ['commands/import.ts', [snapshotFile]],
      ] as const) {
        const { code, stdout, stderr } = await run(script, [...args], { DYNAMODB_ENDPOINT: endpoint }).done;
        expect(code).toBe(1);
        expect(stdout).toBe('');
        const leaves = script === 'commands/import.ts' ? nothingWritten() : '';
        expect(stderr).toBe(
          `cannot reach DynamoDB (DYNAMODB_ENDPOINT=${endpoint}, table team-resources): ${what}: ${HINT}\n${leaves}`,
        );
      }
    },
    60_000,
  );
});
