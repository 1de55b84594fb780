import { randomBytes } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import type { ChangeStream, LoggedTransaction } from '../../shared/sync/log/change-source.ts';
import { createSourceDatabase, type SourceDatabase, type SourceDatabaseOptions } from './source-databases.ts';

/**
 * What the tests of the MySQL/MariaDB binlog reader (shared/sync/log/mysql.ts) share: a database with
 * a sync user that has exactly what the reader needs (SELECT on the database, REPLICATION SLAVE,
 * REPLICATION CLIENT: nothing else), a replica id of its own per test file, a reader of a stream that
 * waits for what it expects (never a fixed sleep), and a TCP proxy that can go silent.
 */

export interface LogDatabase {
  db: SourceDatabase;
  /** The sync user's URL on the database. */
  syncUrl: string;
  syncUser: string;
  drop(): Promise<void>;
}

export async function createLogDatabase(options: SourceDatabaseOptions = {}): Promise<LogDatabase> {
  const db = await createSourceDatabase('mysql', options);
  const syncUser = `${db.database}_sync`.slice(0, 32);
  const password = randomBytes(16).toString('hex');
  await db.adminQuery(`CREATE USER '${syncUser}'@'%' IDENTIFIED BY '${password}'`);
  await db.adminQuery(`GRANT SELECT ON \`${db.database}\`.* TO '${syncUser}'@'%'`);
  await db.adminQuery(`GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '${syncUser}'@'%'`);
  const url = new URL(db.url);
  url.username = syncUser;
  url.password = password;
  return {
    db,
    syncUrl: url.href,
    syncUser,
    drop: async () => {
      // A session the test left (a stream it did not close) would keep the user: end it first.
      for (const { ID } of await db.adminQuery<{ ID: number }>(
        'SELECT ID FROM information_schema.PROCESSLIST WHERE USER = $1',
        [syncUser],
      )) {
        await db.adminQuery(`KILL ${Number(ID)}`).catch(() => {});
      }
      await db.adminQuery(`DROP USER IF EXISTS '${syncUser}'@'%'`);
      await db.drop();
    },
  };
}

let replicas = 0;
/**
 * A replica id no other stream of this run presents: the server drops a dump when another connects
 * with the same id. Test files run in processes of their own, so the pid keeps them apart.
 */
export function replicaServerId(): number {
  return 1_000 + (process.pid % 1_000_000) * 100 + (replicas++ % 100);
}

export interface StreamReader {
  /** Every transaction read so far, in order. */
  readonly seen: LoggedTransaction[];
  /** What `find` returns once it returns something, read as transactions arrive; fails after `ms`. */
  until<T>(find: (seen: LoggedTransaction[]) => T | undefined, what: string, ms?: number): Promise<T>;
  /** The error the iteration threw, once it throws; fails after `ms`. */
  failure(ms?: number): Promise<unknown>;
}

/** Reads a stream in the background into `seen`. */
export function readStream(stream: ChangeStream): StreamReader {
  const seen: LoggedTransaction[] = [];
  let failed: { error: unknown } | undefined;
  let notify = () => {};
  void (async () => {
    try {
      for await (const transaction of stream) {
        seen.push(transaction);
        notify();
      }
    } catch (error) {
      failed = { error };
      notify();
    }
  })();
  const wait = async <T>(look: () => T | undefined, what: string, ms: number): Promise<T> => {
    const deadline = performance.now() + ms;
    for (;;) {
      const found = look();
      if (found !== undefined) return found;
      const left = deadline - performance.now();
      if (left <= 0) {
        const last = JSON.stringify(seen.slice(-5)).slice(0, 1_500);
        throw new Error(`${what}: not within ${ms / 1000} s (last read: ${last}; failure: ${String(failed?.error)})`);
      }
      await new Promise<void>((resolve) => {
        notify = resolve;
        setTimeout(resolve, left).unref();
      });
    }
  };
  return {
    seen,
    until: (find, what, ms = 10_000) =>
      wait(
        () => {
          if (failed) throw failed.error;
          return find(seen);
        },
        what,
        ms,
      ),
    failure: (ms = 10_000) => wait(() => (failed ? failed.error : undefined), 'the stream to fail', ms),
  };
}

/** A TCP proxy to a server that can be made silent: it then forwards nothing, either way, and closes nothing. */
export async function startSilenceableProxy(target: string): Promise<{
  url: (url: string) => string;
  silence(): void;
  close(): Promise<void>;
}> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let silent = false;
  const server = createServer((client) => {
    const remote = connect(Number(upstream.port), upstream.hostname);
    for (const [from, to] of [
      [client, remote],
      [remote, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => void (silent || to.write(chunk)));
      from.on('error', () => {});
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (url) => {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(port);
      return proxied.href;
    },
    silence: () => {
      silent = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
