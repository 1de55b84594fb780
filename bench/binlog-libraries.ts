/**
 * The evidence behind docs/sync-binlog-libraries.md: each candidate binlog reader (zongji 0.5.1,
 * @vlasky/zongji 0.9.0, @powersync/mysql-zongji 0.6.2) against a MariaDB of the suite's kind
 * (startMariaDb: row binlog, binlog_row_image FULL, CRC32 checksums, MariaDB's GTID events), through
 * a user with only SELECT on the database and REPLICATION SLAVE and REPLICATION CLIENT. Each case
 * runs its statements, then inserts a marker row; what the reader delivered before the marker is
 * judged. Run: node_modules/.bin/node bench/binlog-libraries.ts (prints a Markdown table).
 */
import { createRequire } from 'node:module';
import mysql from 'mysql2/promise';
import { startMariaDb } from '../test/support/source-servers.ts';
import { table } from './report.ts';

interface Seen {
  name: string;
  table?: string;
  rows?: unknown[];
  query?: string;
}

interface Reader {
  events: Seen[];
  errors: string[];
  stop(): void;
}

const require = createRequire(import.meta.url);
/** zongji 0.5.1 throws out of its driver's callbacks: said as the current reader's error, not a crash of the probe. */
let crashes: string[] = [];
process.on('uncaughtException', (error) => crashes.push(`uncaught ${error.name}: ${error.message}`));
const DATABASE = 'probe';

/** The connection options that make @vlasky/zongji (mysql2) give exact values. */
const EXACT = { dateStrings: true, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true, jsonStrings: true };
const vlasky = async () => (await import('@vlasky/zongji')).default;

/** Each library's own way in, with the connection options that make it give exact values where it can. */
const LIBRARIES: Record<string, { driver: string; library: () => unknown; options?: object; metadata?: 'FULL' }> = {
  'zongji 0.5.1': { driver: 'mysql 2.17.1', library: () => require('zongji') },
  '@vlasky/zongji 0.9.0': { driver: 'mysql2', library: vlasky, options: EXACT },
  '@vlasky/zongji 0.9.0, binlog_row_metadata=FULL': {
    driver: 'mysql2',
    library: vlasky,
    options: EXACT,
    metadata: 'FULL',
  },
  '@powersync/mysql-zongji 0.6.2': {
    driver: '@vlasky/mysql (a fork of mysql)',
    library: () => require('@powersync/mysql-zongji'),
    options: { dateStrings: true, supportBigNumbers: true },
  },
};

/** What the probe uses of a zongji reader: the three libraries share its shape, and two have no types for it. */
interface ZongJiReader {
  on(event: 'error', listener: (error: Error) => void): void;
  on(event: 'binlog', listener: (event: Record<string, unknown> & { getEventName(): string }) => void): void;
  once(event: 'ready', listener: () => void): void;
  start(options: object): void;
  stop(): void;
}

async function startZongji(library: unknown, connection: object, options: object): Promise<Reader> {
  const ZongJi = library as new (connection: object) => ZongJiReader;
  const reader = new ZongJi(connection);
  const events: Seen[] = [];
  const errors: string[] = [];
  crashes = errors;
  reader.on('error', (error: Error) => errors.push(`${(error as { code?: string }).code ?? ''} ${error.message}`));
  reader.on('binlog', (event: Record<string, unknown> & { getEventName(): string }) => {
    const name = event.getEventName();
    const map = (event.tableMap as Record<number, { tableName: string }> | undefined)?.[event.tableId as number];
    events.push({
      name,
      table: map?.tableName,
      rows: event.rows as unknown[] | undefined,
      query: event.query as string | undefined,
    });
  });
  const ready = new Promise<void>((resolve) => reader.once('ready', () => resolve()));
  reader.start({
    ...options,
    includeEvents: ['tablemap', 'writerows', 'updaterows', 'deleterows', 'query', 'xid', 'rotate'],
    includeSchema: { [DATABASE]: true },
  });
  await Promise.race([ready, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  return { events, errors, stop: () => reader.stop() };
}

const TABLE = `create table t (
  id bigint unsigned not null primary key, name varchar(50) null, amount decimal(20, 6) not null,
  created_at timestamp null) engine=InnoDB`;

/** Statements, then what the reader must have delivered for them (a reason when it did not). */
const CASES: { name: string; sql: string[]; judge: (events: Seen[]) => string | undefined }[] = [
  {
    name: 'insert',
    sql: ["insert into t values (1, 'one', 1.5, '2026-01-02 03:04:05')"],
    judge: (e) => expectRows(e, 'writerows', [{ id: '1', name: 'one', amount: '1.500000' }]),
  },
  {
    name: 'update (old and new row)',
    sql: ["update t set name = 'uno' where id = 1"],
    judge: (e) => {
      const rows = rowsOf(e, 'updaterows') as { before: Row; after: Row }[];
      if (rows.length !== 1) return `${rows.length} rows`;
      return compare(rows[0]!.before, { id: '1', name: 'one' }) ?? compare(rows[0]!.after, { id: '1', name: 'uno' });
    },
  },
  {
    name: 'delete (whole old row)',
    sql: ['delete from t where id = 1'],
    judge: (e) => expectRows(e, 'deleterows', [{ id: '1', name: 'uno', amount: '1.500000' }]),
  },
  {
    name: 'transaction of three statements',
    sql: [
      'begin',
      "insert into t values (2, 'two', 2, null)",
      "update t set name = 'deux' where id = 2",
      "insert into u values (7, 'seven')",
      'commit',
    ],
    judge: (e) => {
      const names = e.filter((x) => /rows$|xid/.test(x.name)).map((x) => x.name);
      const transaction = names.slice(0, names.indexOf('xid') + 1).join(',');
      return transaction === 'writerows,updaterows,writerows,xid' ? undefined : names.join(',');
    },
  },
  {
    name: 'TRUNCATE (a query event)',
    sql: ['truncate table u'],
    judge: (e) => (e.some((x) => /^truncate/i.test(x.query ?? '')) ? undefined : 'no TRUNCATE query event'),
  },
  {
    name: 'ALTER TABLE add column',
    sql: [
      'alter table t add column extra varchar(10) null after name',
      "insert into t values (3, 'three', 'x', 3, null)",
    ],
    judge: (e) => expectRows(e, 'writerows', [{ id: '3', name: 'three', extra: 'x', amount: '3.000000' }]),
  },
  {
    name: 'ALTER TABLE drop column',
    sql: ['alter table t drop column extra', "insert into t values (4, 'four', 4, null)"],
    judge: (e) => expectRows(e, 'writerows', [{ id: '4', name: 'four', amount: '4.000000' }]),
  },
  {
    name: 'ALTER TABLE rename column',
    sql: ['alter table t rename column name to title', "insert into t values (5, 'five', 5, null)"],
    judge: (e) => expectRows(e, 'writerows', [{ id: '5', title: 'five', amount: '5.000000' }]),
  },
  {
    name: 'RENAME TABLE',
    sql: ['rename table u to u2', "insert into u2 values (8, 'eight')"],
    judge: (e) =>
      e.some((x) => /^rename table/i.test(x.query ?? '')) && rowsOf(e, 'writerows', 'u2').length === 1
        ? undefined
        : `query: ${e.some((x) => /^rename/i.test(x.query ?? ''))}, rows of u2: ${rowsOf(e, 'writerows', 'u2').length}`,
  },
  {
    name: 'DROP TABLE, CREATE TABLE',
    sql: [
      'drop table u2',
      'create table u (code varchar(5) not null, id bigint not null)',
      "insert into u values ('c', 9)",
    ],
    judge: (e) => expectRows(e, 'writerows', [{ code: 'c', id: '9' }], 'u'),
  },
  {
    name: 'bigint unsigned 2^53+1 and 2^64-1',
    sql: ["insert into t values (9007199254740993, 'a', 0, null), (18446744073709551615, 'b', 0, null)"],
    judge: (e) => expectRows(e, 'writerows', [{ id: '9007199254740993' }, { id: '18446744073709551615' }]),
  },
  {
    name: 'decimal(20,6) 12345678901234.123456',
    sql: ["insert into t values (10, 'd', 12345678901234.123456, null)"],
    judge: (e) => expectRows(e, 'writerows', [{ amount: '12345678901234.123456' }]),
  },
];

type Row = Record<string, unknown>;

function rowsOf(events: Seen[], name: string, table = name === 'writerows' ? undefined : 't'): unknown[] {
  return events.filter((x) => x.name === name && (!table || x.table === table)).flatMap((x) => x.rows ?? []);
}

function expectRows(events: Seen[], name: string, expected: Row[], table?: string): string | undefined {
  const rows = rowsOf(events, name, table ?? (expected[0] && 'code' in expected[0] ? 'u' : 't')) as Row[];
  if (rows.length !== expected.length) return `${rows.length} rows, expected ${expected.length}`;
  for (const [i, row] of expected.entries()) {
    const wrong = compare(rows[i]!, row);
    if (wrong) return wrong;
  }
  return undefined;
}

/** The first column whose value is not the expected text (a number that is not exact shows as such). */
function compare(row: Row, expected: Row): string | undefined {
  for (const [column, value] of Object.entries(expected)) {
    if (!(column in row)) return `no column ${column} (columns: ${Object.keys(row).join(', ')})`;
    const got = row[column];
    if (String(got) !== value) return `${column} = ${JSON.stringify(got)} (${typeof got}), expected ${value}`;
  }
  return undefined;
}

async function main() {
  const server = await startMariaDb();
  const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
  const url = new URL(server.adminUrl);
  const connection = { host: url.hostname, port: Number(url.port), user: 'probe', password: 'probe-password' };
  await admin.query(`create database ${DATABASE}`);
  await admin.query("create user probe@'%' identified by 'probe-password'");
  await admin.query(`grant select on ${DATABASE}.* to probe@'%'`);
  await admin.query("grant replication slave, replication client on *.* to probe@'%'");
  const [[version]] = (await admin.query('select version() v, @@binlog_checksum c, @@binlog_row_image i')) as never as [
    Row[],
  ];
  console.error(`server: ${JSON.stringify(version)}`);
  const results: Record<string, Record<string, string>> = {};
  let serverId = 100;
  type Position = { filename: string; position: number };
  const status = async (): Promise<Position> => {
    const [[now]] = (await admin.query('show master status')) as never as [[{ File: string; Position: number }]];
    return { filename: now.File, position: now.Position };
  };
  try {
    for (const [name, { driver, library, options, metadata }] of Object.entries(LIBRARIES)) {
      /** A new reader from that position, or from the binlog's end now. */
      const open = async (from?: Position) =>
        startZongji(
          await library(),
          { ...connection, ...options },
          { serverId: ++serverId, ...(from ?? (await status())) },
        );
      const outcome: Record<string, string> = { driver };
      results[name] = outcome;
      // NO_LOG is MariaDB's default; FULL writes the column names into each table map event.
      await admin.query(`set global binlog_row_metadata = ${metadata ?? 'NO_LOG'}`);
      await admin.query(`use ${DATABASE}`);
      await admin.query('drop table if exists t, u, u2, marker');
      await admin.query(TABLE);
      await admin.query('create table u (id bigint unsigned not null primary key, name varchar(50))');
      await admin.query('create table marker (n int not null)');
      let reader = await open();
      let marker = 0;
      let afterInsert: Position | undefined;
      for (const test of CASES) {
        const from = reader.events.length;
        for (const sql of test.sql) await admin.query(sql);
        const n = ++marker;
        await admin.query(`insert into marker values (${n})`);
        const seen = await sawMarker(reader, n);
        const events = reader.events.slice(from).filter((x) => x.table !== 'marker');
        if (!seen) {
          const error = reader.errors.at(-1);
          outcome[test.name] = `fails: nothing within 10 s${error ? `; error: ${error}` : ''}`;
          // A reader that stopped is started again after this case, to judge the next ones.
          reader.stop();
          reader = await open();
          continue;
        }
        const wrong = test.judge(events);
        outcome[test.name] = wrong ? `fails: ${wrong}` : 'works';
        if (test.name === 'insert') afterInsert = await status();
        if (test.name === 'update (old and new row)' && afterInsert) {
          // From a file and position: only what follows it (the update), not the insert before it.
          const again = await open(afterInsert);
          const caught = await sawMarker(again, n);
          const first = again.events.find((x) => /rows$/.test(x.name));
          outcome['start at file+position'] = !caught
            ? `fails: ${again.errors.at(-1) ?? 'nothing within 10 s'}`
            : first?.name === 'updaterows'
              ? 'works'
              : `fails: first row event ${first?.name}`;
          again.stop();
        }
      }
      reader.stop();
      // Read again from before the DDL cases, as a sync that was stopped during a migration would.
      if (afterInsert) {
        const again = await open(afterInsert);
        const caught = await sawMarker(again, marker);
        const stale = rowsOf(again.events, 'writerows', 't')[0] as Row | undefined;
        const error = again.errors[0] ? `; error: ${again.errors[0]}` : '';
        outcome['read again across the DDL (row 2, written before the rename)'] =
          caught && stale && stale.name === 'two'
            ? 'works'
            : `fails: ${caught ? '' : 'stream halted; '}columns ${Object.keys(stale ?? {}).join(', ')}${error}`;
        again.stop();
      }
      outcome.errors = reader.errors.join(' | ') || 'none';
    }
  } finally {
    await admin.end();
    await server.stop();
  }
  const columns = Object.keys(Object.values(results)[0]!);
  const cell = (text = '') => text.replace(/\|/g, '\\|');
  console.log(
    table(
      ['case', ...Object.keys(results)],
      columns.map((column) => [column, ...Object.values(results).map((r) => cell(r[column]))]),
    ).trimEnd(),
  );
  process.exit(0);
}

/** Whether the reader delivers marker row `n` within 10 s. */
function sawMarker(reader: Reader, n: number): Promise<boolean> {
  return waitFor(() =>
    reader.events.some((x) => x.table === 'marker' && (x.rows ?? []).some((row) => Number((row as Row).n) === n)),
  );
}

async function waitFor(condition: () => boolean, limit = 10_000): Promise<boolean> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > limit) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

await main();
