import { parseSourceUrl, SourceUrlError } from '../source/url.ts';
import { connectSource, type Row, type SourceConnection } from '../source/connection.ts';
import { sourceFault } from '../source/faults.ts';
import { type ChangeSource, type LogIntervals, LogPositionLost } from './change-source.ts';
import { binaryLogs, binlogStatus, compareLogNames, formatPosition, parsePosition } from './mysql-binlog.ts';
import { BinlogStream } from './mysql-stream.ts';

/**
 * MySQL/MariaDB's row-format binary log, read as a replica reads it (docs/sync-binlog-libraries.md:
 * why @vlasky/zongji): a binlog dump from a file and position, through a user that needs only
 * REPLICATION SLAVE (the dump), REPLICATION CLIENT (SHOW MASTER STATUS, SHOW BINARY LOGS) and SELECT
 * on the tables (their column names, from INFORMATION_SCHEMA). Nothing is installed in the source,
 * and nothing runs inside the app's transactions.
 *
 * A position is `<binlog file>:<offset>`, the offset just after a transaction's commit event. The
 * source keeps nothing for the sync: it purges its binlog by its own settings (binlog_expire_logs_seconds;
 * on RDS, `binlog retention hours`), and a position purged since is LogPositionLost.
 */
interface MysqlChangeSourceOptions {
  url: string;
  /** The tables whose rows are read, in the URL's database. */
  tables: string[];
  /** The replica id the dump presents: unique among the server's replicas, and among syncs on one server. */
  serverId: number;
  /** Shorter intervals than the stream's defaults (mysql-stream.ts): a test's. */
  intervals?: LogIntervals;
}

export function mysqlChangeSource(options: MysqlChangeSourceOptions): ChangeSource {
  const source = parseSourceUrl(options.url);
  if (source.engine !== 'mysql') throw new SourceUrlError(`${source.redacted}: not a MySQL/MariaDB URL`);
  let connection: Promise<SourceConnection> | undefined;
  const streams = new Set<BinlogStream>();
  /** One statement on the source's own connection, which is made again once it was lost. */
  const query = async <T extends Row>(sql: string): Promise<T[]> => {
    connection ??= connectSource(source);
    const current = connection;
    const session = await current.catch((error) => {
      if (connection === current) connection = undefined;
      throw error;
    });
    try {
      return await session.query<T>(sql);
    } catch (error) {
      if (sourceFault(error) === 'unreachable' && connection === current) {
        connection = undefined;
        await session.close();
      }
      throw error;
    }
  };
  return {
    currentPosition: async () => formatPosition(await binlogStatus(query)),
    async open(position) {
      const from = parsePosition(position);
      // Checked before the dump (the server's own refusal, error 1236, is read as lost too).
      const logs = await binaryLogs(query);
      const held = logs.find((log) => log.name === from.file);
      if (!held || from.offset > held.size) {
        const kept =
          logs.length === 0 ? 'none' : logs.length === 1 ? logs[0]!.name : `${logs[0]!.name} to ${logs.at(-1)!.name}`;
        const size = held ? `; ${held.name} has ${held.size} bytes` : '';
        throw new LogPositionLost(`the source's binlog no longer holds ${position} (it keeps ${kept}${size})`);
      }
      const [clock] = await query<{ now: string }>('SELECT UNIX_TIMESTAMP(NOW(6)) * 1000 AS now');
      const stream: BinlogStream = new BinlogStream({
        ...options,
        database: source.database,
        from,
        serverClock: Number(clock?.now),
        onClose: () => streams.delete(stream),
      });
      streams.add(stream);
      try {
        await stream.started;
      } catch (error) {
        await stream.close();
        throw error;
      }
      return stream;
    },
    async retainedBytes(position) {
      const { file, offset } = parsePosition(position);
      let bytes = 0;
      for (const log of await binaryLogs(query)) {
        const order = compareLogNames(log.name, file);
        if (order > 0) bytes += log.size;
        else if (order === 0) bytes += Math.max(0, log.size - offset);
      }
      return bytes;
    },
    async close() {
      await Promise.all([...streams].map((stream) => stream.close()));
      const current = connection;
      connection = undefined;
      await (await current?.catch(() => undefined))?.close();
    },
  };
}
