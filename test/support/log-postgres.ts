import { randomBytes } from 'node:crypto';
import { createServer, connect, type Socket } from 'node:net';
import pg from 'pg';
import type { ChangeStream, LoggedChange, LoggedTransaction } from '../../shared/sync/log/change-source.ts';
import type { SourceDatabase } from './source-databases.ts';

/**
 * For the tests of the PostgreSQL log reader (shared/sync/log/postgres.ts): the sync's own role beside the
 * app's, a reader of a stream that keeps what it read, and a TCP proxy that can go silent or cut.
 */

/** A role with only what the sync needs: REPLICATION, and SELECT on the schema's tables (now and later ones). */
export async function createSyncRole(
  db: SourceDatabase,
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${db.database}_sync`;
  const password = randomBytes(16).toString('hex');
  await db.adminQuery(`CREATE ROLE "${name}" LOGIN PASSWORD '${password}' REPLICATION NOSUPERUSER NOCREATEDB`);
  await db.adminQuery(`GRANT CONNECT ON DATABASE "${db.database}" TO "${name}"`);
  await db.adminQuery(`GRANT USAGE ON SCHEMA public TO "${name}"`);
  await db.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO "${name}"`);
  await db.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO "${name}"`);
  const url = new URL(db.url);
  url.username = name;
  url.password = password;
  return {
    name,
    url: url.href,
    // After db.drop(), which ends the role's sessions and takes its privileges with the database.
    drop: async () => {
      const admin = new pg.Client({ connectionString: new URL('/postgres', db.adminUrl).href });
      await admin.connect();
      try {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [name]);
        await admin.query(`DROP ROLE IF EXISTS "${name}"`);
      } finally {
        await admin.end();
      }
    },
  };
}

export interface LogReader {
  /** Every part read so far, in order. */
  readonly parts: LoggedTransaction[];
  /** Committed transactions with changes, their parts joined (the log's progress left out). */
  transactions(): { changes: LoggedChange[]; position: string; committedAt: number }[];
  changes(): LoggedChange[];
  /** Waits until `ready()` holds (checked after each part), at most `ms`; says what it last saw if not. */
  until(ready: () => boolean, ms?: number): Promise<void>;
  /** The error the iteration ended with, once it ended. */
  ended(ms?: number): Promise<unknown>;
}

/** Reads `stream` in the background, as the sync would, keeping every part. */
export function readLog(stream: ChangeStream): LogReader {
  const parts: LoggedTransaction[] = [];
  const waiters = new Set<() => void>();
  let end: { error: unknown } | undefined;
  const notify = () => {
    for (const waiter of waiters) waiter();
  };
  void (async () => {
    try {
      for await (const part of stream) {
        parts.push(part);
        notify();
      }
      end = { error: undefined };
    } catch (error) {
      end = { error };
    }
    notify();
  })();
  const transactions = () => {
    const done: { changes: LoggedChange[]; position: string; committedAt: number }[] = [];
    let open: LoggedChange[] = [];
    for (const part of parts) {
      open.push(...part.changes);
      if (!part.commit) continue;
      if (open.length) done.push({ changes: open, ...part.commit });
      open = [];
    }
    return done;
  };
  const wait = (ready: () => boolean, ms: number, explain: () => string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!ready()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`not within ${ms / 1000} s; ${explain()}`));
      }, ms);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  return {
    parts,
    transactions,
    changes: () => transactions().flatMap((transaction) => transaction.changes),
    until: (ready, ms = 20_000) =>
      wait(ready, ms, () => {
        const last = parts.slice(-8).map((part) => {
          const kinds = part.changes.slice(0, 3).map((c) => `${c.kind} ${'table' in c ? c.table : c.tables}`);
          const more = part.changes.length > 3 ? ', …' : '';
          return `${part.changes.length} [${kinds.join(', ')}${more}] ${part.commit?.position ?? ''}`;
        });
        return `${parts.length} parts read, the last: ${last.join('; ')}${end ? `; ended: ${String(end.error)}` : ''}`;
      }),
    ended: async (ms = 20_000) => {
      await wait(
        () => end !== undefined,
        ms,
        () => 'the stream did not end',
      );
      return end!.error;
    },
  };
}

/** A TCP proxy to a server: `freeze` stops every byte both ways (a server gone silent), `cut` drops connections. */
export async function startTcpProxy(target: string): Promise<{
  url: (url: string) => string;
  freeze(): void;
  cut(): void;
  close(): Promise<void>;
}> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let frozen = false;
  const server = createServer((client) => {
    const server = connect(Number(upstream.port), upstream.hostname);
    for (const [from, to] of [
      [client, server],
      [server, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (url) => {
      const proxied = new URL(url);
      proxied.host = `127.0.0.1:${port}`;
      return proxied.href;
    },
    freeze: () => {
      frozen = true;
    },
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
