import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  accessSync,
  chownSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { freePort } from '../../commands/local/dynamodb-local.ts';
import type { KeeperSpec } from './server-keeper.ts';

/**
 * The source databases the sync's tests run against: a PostgreSQL and a MariaDB server, each on a
 * fresh copy of an initialised data directory in a temporary directory, on 127.0.0.1 and a free port,
 * with throwaway settings (no fsync) that make them start in well under a second on an idle machine. The suite starts one of each (global-setup.ts); a test
 * that needs other settings (another wal_level, no binlog) starts its own with startPostgres or
 * startMariaDb. Each runs under a keeper (server-keeper.ts) that stops it and removes its directory
 * when the process that started it ends, however it ends.
 */
export type SourceEngine = 'postgres' | 'mysql';
export const SOURCE_ENGINES: readonly SourceEngine[] = ['postgres', 'mysql'];
export const ENGINE_NAMES: Record<SourceEngine, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB' };

export interface RunningServer {
  engine: SourceEngine;
  /** A superuser's URL (postgres://postgres:…@127.0.0.1:port/postgres, mysql://root:…@127.0.0.1:port/). */
  adminUrl: string;
  /** "PostgreSQL 15.18", "MariaDB 10.11.19". */
  version: string;
  /** The keeper's pid: the server and its worker processes are its descendants. */
  pid: number;
  /** The temporary directory holding the data, the socket and nothing else; removed after the server stops. */
  dir: string;
  /** Stops the server and waits until it and its keeper have exited and the directory is gone. */
  stop(): Promise<void>;
}

/** What the suite tells the test files about one engine (vitest's provide: plain data). */
export type SourceServerStatus =
  | { state: 'running'; adminUrl: string; version: string }
  | { state: 'missing'; message: string }
  | { state: 'failed'; message: string };

/** The engine's server is not installed on this machine: its tests are skipped, with one line saying so. */
export class ServerMissing extends Error {}

export interface PostgresOptions {
  /** The sync's setup checks it: logical (the default) or replica, to test that check. */
  walLevel?: 'minimal' | 'replica' | 'logical';
  /** Other server settings, over the defaults below (max_replication_slots=1, to test that check). */
  settings?: Record<string, string>;
}

export interface MariaDbOptions {
  /** The binary log (default on, in ROW format): the contract asks for it. */
  binlog?: boolean;
  binlogFormat?: 'ROW' | 'STATEMENT' | 'MIXED';
  /** log_bin_trust_function_creators (default on, as the contract asks), off to test that check. */
  trustFunctionCreators?: boolean;
  /**
   * InnoDB's buffer pool and redo log: 'small' (the default, 32 MB and 8 MB) starts in a fraction of a
   * second, for tests; 'server' keeps MariaDB's own defaults (128 MB and 96 MB in 10.11), for the
   * benchmark of what the app pays. 16 writers of 10,000-row UPDATEs fill an 8 MB redo log many times
   * a second, and an undersized redo log stalls every writer while InnoDB flushes to free it (MySQL's
   * Bug#21924224: "for small redo size and large write concurrency … whole system hangs",
   * https://github.com/mysql/mysql-server/commit/5c6c6ec69336369487dfc080a6980089b4e1a3c2; MariaDB
   * sizes it like the buffer pool:
   * https://mariadb.com/docs/server/server-usage/storage-engines/innodb/mariadb-enterprise-server-innodb-operations/configure-the-innodb-redo-log).
   */
  innodb?: 'small' | 'server';
}

/** A server that does not print "ready" within this is reported, not waited on in silence. */
const READY_LIMIT_MS = 60_000;
const PORT_ATTEMPTS = 5;
const KEEPER = fileURLToPath(new URL('./server-keeper.ts', import.meta.url));
const run = promisify(execFile);

export async function startPostgres(options: PostgresOptions = {}): Promise<RunningServer> {
  const bin = postgresBinaries();
  // https://www.postgresql.org/docs/15/app-initdb.html: "initdb must be run as the user that will own
  // the server process […] Since the server cannot be run as root, you must not run initdb as root
  // either. (It will in fact refuse to do so.)" Run by root, both run as the postgres user Debian's
  // package creates; run by anyone else, as that user.
  const user = serviceUser('postgres', 'PostgreSQL');
  // Messages in English (the log is read); no password yet: each copy gets its own below.
  const initdb = '-U postgres --auth trust --no-locale --encoding UTF8 --no-sync --no-instructions'.split(' ');
  return startWithRetries(async (port) => {
    const dir = makeDir('source-pg-', user);
    const data = join(dir, 'data');
    const env = serverEnv(dir);
    try {
      await initialisedData(['postgres', bin.postgres, bin.version, ...initdb], data, () =>
        step('PostgreSQL', bin.initdb, ['-D', data, ...initdb], env, user),
      );
      // Passwords over TCP (a test may present wrong credentials, and any local user can reach the
      // port); the unix socket, in a directory only the server's user and root may enter, lets this
      // process set the superuser's password once the server is up.
      writeFileSync(
        join(data, 'pg_hba.conf'),
        'local all postgres trust\n' +
          'host all all 127.0.0.1/32 scram-sha-256\n' +
          'host replication all 127.0.0.1/32 scram-sha-256\n',
      );
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    const settings = {
      listen_addresses: '127.0.0.1',
      port: String(port),
      unix_socket_directories: dir,
      wal_level: options.walLevel ?? 'logical',
      // Parallel test files, each with its pools, and a sync under test with its own.
      max_connections: '300',
      // Throwaway data: nothing needs to survive a crash.
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      timezone: 'UTC',
      log_timezone: 'UTC',
      // A slot and a walsender per log reader of the parallel test files (PostgreSQL's defaults are 10);
      // wal_level=minimal allows no walsender at all.
      ...(options.walLevel === 'minimal' ? {} : { max_replication_slots: '40', max_wal_senders: '40' }),
      ...options.settings,
    };
    const args = ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
    const password = randomBytes(16).toString('hex');
    return keep('postgres', {
      spec: { command: bin.postgres, args, env, ...user, stopSignal: 'SIGINT', removeDir: dir },
      ready: /database system is ready to accept connections/,
      adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      afterReady: async (adminUrl) => {
        const socket = new pg.Client({ host: dir, port, user: 'postgres', database: 'postgres' });
        await socket.connect();
        await socket.query(`ALTER ROLE postgres PASSWORD '${password}'`).finally(() => socket.end());
        // Over TCP with that password, as the tests will connect.
        const client = new pg.Client({ connectionString: adminUrl });
        await client.connect();
        try {
          const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
          return `PostgreSQL ${rows[0]!.server_version.split(' ')[0]}`;
        } finally {
          await client.end();
        }
      },
    });
  });
}

export async function startMariaDb(options: MariaDbOptions = {}): Promise<RunningServer> {
  const bin = mariaDbBinaries();
  // https://mariadb.com/kb/en/running-mariadbd-as-root/: mariadbd refuses to run as root unless given
  // --user=root, and should not (any account with FILE could then write files as root). As root it
  // runs as the mysql user Debian's mariadb-server package creates, as PostgreSQL runs as postgres.
  const user = serviceUser('mysql', 'MariaDB');
  // Small InnoDB files and no doublewrite or flush at commit: a start in a fraction of a second.
  const innodb = [
    ...(options.innodb === 'server' ? [] : ['--innodb-buffer-pool-size=32M', '--innodb-log-file-size=8M']),
    '--innodb-doublewrite=0',
    '--innodb-flush-log-at-trx-commit=0',
    // No Linux AIO contexts: servers of parallel runs would share the kernel's limit.
    '--innodb-use-native-aio=0',
  ];
  const installDb = ['--no-defaults', '--skip-test-db', '--skip-name-resolve', ...innodb];
  return startWithRetries(async (port) => {
    const dir = makeDir('source-mysql-', user);
    const data = join(dir, 'data');
    const password = randomBytes(16).toString('hex');
    const env = serverEnv(dir);
    try {
      await initialisedData(['mysql', bin.mariadbd, bin.version, ...installDb], data, () =>
        step('MariaDB', bin.installDb, [`--datadir=${data}`, ...installDb], env, user),
      );
      // The superuser for TCP connections, with this run's password: the installed root@localhost
      // only accepts its unix socket.
      const initFile = join(dir, 'init.sql');
      writeFileSync(
        initFile,
        `CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '${password}';\n` +
          `GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;\n`,
        { mode: 0o600 },
      );
      if (user) chownSync(initFile, user.uid, user.gid);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    const binlog = options.binlog ?? true;
    const args = [
      '--no-defaults', // never the machine's /etc/mysql
      `--datadir=${data}`,
      `--socket=${join(dir, 'mysqld.sock')}`,
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      `--init-file=${join(dir, 'init.sql')}`,
      '--bind-address=127.0.0.1',
      `--port=${port}`,
      '--skip-name-resolve',
      ...(binlog ? ['--log-bin=binlog', '--server-id=1', `--binlog-format=${options.binlogFormat ?? 'ROW'}`] : []),
      // https://mariadb.com/docs/server/ref/mdb/system-variables/log_bin_trust_function_creators: when
      // it is off and the binlog on, only SUPER may create a trigger (error 1419); the contract asks
      // for it on, so that the sync's role needs no SUPER.
      `--log-bin-trust-function-creators=${(options.trustFunctionCreators ?? true) ? 1 : 0}`,
      '--max-connections=300',
      '--default-time-zone=+00:00',
      // Laravel's defaults for MySQL (config/database.php).
      '--character-set-server=utf8mb4',
      '--collation-server=utf8mb4_unicode_ci',
      '--performance-schema=OFF',
      ...innodb,
    ];
    return keep('mysql', {
      spec: { command: bin.mariadbd, args, env, ...user, stopSignal: 'SIGTERM', removeDir: dir },
      ready: /ready for connections/,
      adminUrl: `mysql://root:${password}@127.0.0.1:${port}/`,
      afterReady: async (adminUrl) => {
        const connection = await mysql.createConnection(adminUrl);
        try {
          const [rows] = await connection.query<mysql.RowDataPacket[]>('SELECT VERSION() AS version');
          return `MariaDB ${String(rows[0]!.version).split('-')[0]}`;
        } finally {
          await connection.end();
        }
      },
    });
  });
}

/**
 * One of each server for the suite, started side by side. Never throws: each engine's outcome is a
 * status, and `lines` says in one line each what is missing or broken.
 */
export async function startSourceServers(): Promise<{
  statuses: Record<SourceEngine, SourceServerStatus>;
  lines: string[];
  stop(): Promise<void>;
}> {
  const started = await Promise.allSettled([startPostgres(), startMariaDb()]);
  const servers: RunningServer[] = [];
  const statuses = {} as Record<SourceEngine, SourceServerStatus>;
  const lines: string[] = [];
  SOURCE_ENGINES.forEach((engine, i) => {
    const outcome = started[i]!;
    if (outcome.status === 'fulfilled') {
      servers.push(outcome.value);
      statuses[engine] = { state: 'running', adminUrl: outcome.value.adminUrl, version: outcome.value.version };
    } else {
      const message = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
      statuses[engine] = { state: outcome.reason instanceof ServerMissing ? 'missing' : 'failed', message };
      lines.push(message);
    }
  });
  return { statuses, lines, stop: async () => void (await Promise.all(servers.map((server) => server.stop()))) };
}

// ---------------------------------------------------------------------------------------------

interface ServiceUser {
  uid: number;
  gid: number;
}

/** As root, the account the server runs as; otherwise none (the server runs as whoever runs the tests). */
function serviceUser(name: string, engine: string): ServiceUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(`${engine} cannot run as root and there is no ${name} user to run it as`);
  }
}

/** A fresh directory that only the server's user can enter (its socket is in it too). */
function makeDir(prefix: string, user: ServiceUser | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}

/**
 * Where initialised data directories are kept, one per server version and initialisation: copying one
 * takes a fraction of what initdb and mariadb-install-db take on a loaded machine (on two cores busy
 * with other tests, 2 to 5 s for initdb and 4 to 7 s for mariadb-install-db). npm ci starts it afresh.
 */
const TEMPLATES = fileURLToPath(new URL('../../node_modules/.cache/source-servers', import.meta.url));

/**
 * Makes `data` an initialised data directory: a copy of the template for `key` (the server and how it
 * is initialised), or else what `initialise` makes there, which then becomes that template. A template
 * appears whole or not at all (renamed into place), whoever else is making the same one.
 */
async function initialisedData(key: string[], data: string, initialise: () => Promise<void>) {
  const template = join(
    TEMPLATES,
    `${key[0]}-${createHash('sha256').update(key.join('\0')).digest('hex').slice(0, 16)}`,
  );
  // cp -a: the copy keeps the owner (the server's user) and the modes the server insists on.
  if (existsSync(template)) return void (await run('cp', ['-a', template, data]));
  await initialise();
  mkdirSync(TEMPLATES, { recursive: true });
  const staging = `${template}.${randomBytes(6).toString('hex')}`;
  await run('cp', ['-a', data, staging]);
  try {
    renameSync(staging, template);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another start made it first
  }
}

/** The servers' environment, not the suite's (no JAVA_TOOL_OPTIONS, no credentials, no locale surprises). */
function serverEnv(dir: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C', LC_ALL: 'C', TZ: 'UTC' };
}

/** Runs initdb or mariadb-install-db; a failure is one line with its last words. */
async function step(engine: string, command: string, args: string[], env: Record<string, string>, user?: ServiceUser) {
  try {
    await run(command, args, { env, cwd: env.HOME, ...user, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    const name = command.split('/').at(-1);
    throw new Error(`${engine} could not start: ${name} failed: ${lastWords(`${stdout}\n${stderr}`) || error}`);
  }
}

class PortTaken extends Error {}

async function startWithRetries(start: (port: number) => Promise<RunningServer>): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePort());
    } catch (error) {
      // Another process took the port between our choosing it and the server's binding it.
      if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

async function keep(
  engine: SourceEngine,
  how: {
    spec: KeeperSpec;
    ready: RegExp;
    adminUrl: string;
    /** Once the server says it is ready: what remains to do, and the server's version. */
    afterReady: (adminUrl: string) => Promise<string>;
  },
): Promise<RunningServer> {
  const keeper = spawn(process.execPath, [KEEPER, JSON.stringify(how.spec)], { stdio: ['pipe', 'ignore', 'pipe'] });
  let output = '';
  keeper.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-50_000)));
  keeper.stdin.on('error', () => {}); // the keeper may be gone before the pipe is closed
  const exited = new Promise<void>((resolve) => keeper.once('close', () => resolve()));
  // Closing the pipe stops the keeper, which stops the server and removes its directory.
  const stop = async () => {
    keeper.stdin.end();
    await exited;
  };
  const name = ENGINE_NAMES[engine];
  const started = performance.now();
  try {
    while (!how.ready.test(output)) {
      if (keeper.exitCode !== null || keeper.signalCode !== null) {
        if (/Address already in use/.test(output)) throw new PortTaken(name);
        throw new Error(`${name} could not start: ${lastWords(output) || 'it exited before it was ready'}`);
      }
      if (performance.now() - started > READY_LIMIT_MS)
        throw new Error(`${name} was not ready within ${READY_LIMIT_MS / 1000} s: ${lastWords(output)}`);
      await sleep(20);
    }
    const version = await how.afterReady(how.adminUrl);
    return { engine, adminUrl: how.adminUrl, version, pid: keeper.pid!, dir: how.spec.removeDir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The line of a server's log that says why it stopped: the last FATAL, PANIC or ERROR (without the
 * time and pid before it, and never MariaDB's closing "Aborting"), else the last line.
 */
export function lastWords(log: string): string {
  const lines = log
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const errors = lines.filter((line) => /\b(FATAL|PANIC|ERROR)\b/.test(line) && !/\[ERROR\] Aborting$/.test(line));
  const line = errors.at(-1) ?? lines.at(-1) ?? '';
  return line.replace(/^\d{4}-\d\d-\d\d[ T][\d:.]+(?: \w+)? (?:\[\d+\] |\d+ )?/, '').replace(/\s+/g, ' ');
}

// ---------------------------------------------------------------------------------------------

const SEARCH_PATH = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/bin'];

function findExecutable(names: string[], dirs = SEARCH_PATH): string | undefined {
  for (const dir of dirs.filter(Boolean))
    for (const name of names) {
      const path = join(dir, name);
      try {
        accessSync(path, constants.X_OK);
        return path;
      } catch {
        // not here
      }
    }
  return undefined;
}

const POSTGRES_MISSING =
  'PostgreSQL is not installed: the sync tests on PostgreSQL are skipped (apt-get install postgresql)';
const MARIADB_MISSING =
  'MariaDB is not installed: the sync tests on MySQL/MariaDB are skipped (apt-get install mariadb-server)';

/** Debian keeps the server's programs off the PATH, one directory per major version: the newest (13 or later) wins. */
function postgresBinaries(): { initdb: string; postgres: string; version: string } {
  let versions: number[] = [];
  try {
    versions = readdirSync('/usr/lib/postgresql')
      .map(Number)
      .filter((major) => major >= 13)
      .sort((a, b) => b - a);
  } catch {
    // not Debian's layout
  }
  const dirs = [...versions.map((major) => `/usr/lib/postgresql/${major}/bin`), ...SEARCH_PATH];
  for (const dir of dirs) {
    const initdb = findExecutable(['initdb'], [dir]);
    const postgres = findExecutable(['postgres'], [dir]);
    if (initdb && postgres)
      return { initdb, postgres, version: execFileSync(postgres, ['--version'], { encoding: 'utf8' }) };
  }
  throw new ServerMissing(POSTGRES_MISSING);
}

function mariaDbBinaries(): { mariadbd: string; installDb: string; version: string } {
  const mariadbd = findExecutable(['mariadbd']) ?? mariaDbCalledMysqld();
  const installDb = findExecutable(['mariadb-install-db', 'mysql_install_db']);
  if (!mariadbd || !installDb) throw new ServerMissing(MARIADB_MISSING);
  return { mariadbd, installDb, version: execFileSync(mariadbd, ['--version'], { encoding: 'utf8' }) };
}

/** Older MariaDB packages call the server mysqld; Oracle's MySQL does too, and its set-up differs. */
function mariaDbCalledMysqld(): string | undefined {
  const mysqld = findExecutable(['mysqld']);
  if (!mysqld) return undefined;
  const version = execFileSync(mysqld, ['--version'], { encoding: 'utf8' });
  if (/MariaDB/i.test(version)) return mysqld;
  throw new ServerMissing(`${MARIADB_MISSING}; the mysqld found is MySQL, which the suite does not start`);
}
