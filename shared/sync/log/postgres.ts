import { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { parseSourceUrl } from '../source/url.ts';
import { SOURCE_SILENCE_MS, withinSilence } from '../source/connection.ts';
import { sourceFault } from '../source/faults.ts';
import { toPostgresParameters } from '../source/postgres.ts';
import { type ChangeSource, type ChangeStream, type LogIntervals, LogPositionLost } from './change-source.ts';
import { lsnText, lsnValue } from './lsn.ts';
import { shapeOf, type TableShape } from './pgoutput-text.ts';
import { PgoutputStream, publicationGone } from './postgres-stream.ts';

/**
 * The PostgreSQL log, read through a logical replication slot with pgoutput, PostgreSQL's own output plugin
 * (https://www.postgresql.org/docs/current/logicaldecoding-explanation.html): the slot keeps the WAL from its
 * consumer's confirmed position on, and decodes the committed transactions of the publication's tables in
 * commit order. The protocol itself is pg-logical-replication's (postgres-stream.ts says why, and what is
 * done around it).
 *
 * What the sync's role needs: REPLICATION (to create and stream the slot; on RDS, membership of
 * rds_replication) and SELECT on the tables; wal_level=logical. The publication is setup's
 * (postgres-setup.ts).
 */
export function postgresChangeSource(options: {
  url: string;
  slot: string;
  publication: string;
  /** Shorter intervals than the defaults (a test's): its streams' (postgres-stream.ts), and SLOT_BUSY_MS. */
  intervals?: LogIntervals;
}): ChangeSource {
  const { slot, publication, intervals } = options;
  const slotBusyMs = intervals?.slotBusyMs ?? SLOT_BUSY_MS;
  // Slot names are lower-case letters, digits and underscores, at most 63 (pg_create_logical_replication_slot).
  if (!/^[a-z0-9_]{1,63}$/.test(slot)) throw new Error(`not a replication slot name: ${JSON.stringify(slot)}`);
  const source = parseSourceUrl(options.url);
  const sql = lazyConnection(options.url);
  const shapes = new Map<string, TableShape>();
  const streams = new Set<ChangeStream>();

  const slotState = async () => {
    // pg_replication_slots (https://www.postgresql.org/docs/current/view-pg-replication-slots.html):
    // wal_status 'lost' is a slot whose WAL is gone (max_slot_wal_keep_size); PostgreSQL 16 adds conflicting
    // and 17 invalidation_reason for slots invalidated otherwise (read through to_jsonb, absent before).
    const [state] = await sql.query<SlotState>(
      `SELECT s.database, s.plugin, s.active_pid, s.confirmed_flush_lsn::text AS confirmed, s.wal_status,
              to_jsonb(s) ->> 'invalidation_reason' AS invalidation_reason,
              (to_jsonb(s) ->> 'conflicting')::boolean AS conflicting, current_database() AS current
         FROM pg_replication_slots s WHERE s.slot_name = ?`,
      [slot],
    );
    if (state && (state.database !== state.current || state.plugin !== 'pgoutput'))
      throw new Error(
        `the replication slot ${slot} is not this sync's: it decodes database ${state.database} with ` +
          `${state.plugin ?? 'no plugin (a physical slot)'}; give the sync another slot name`,
      );
    return state;
  };
  const lostReason = (state: SlotState) =>
    state.wal_status === 'lost'
      ? 'the server removed WAL it still needed (wal_status lost: max_slot_wal_keep_size)'
      : state.invalidation_reason || state.conflicting
        ? `it was invalidated (${state.invalidation_reason ?? 'conflicting'})`
        : undefined;

  /** The publication's tables and their columns now, as pgoutput's relation messages list them (null: none). */
  const published = async (): Promise<Map<string, TableShape> | null> => {
    const rows = await sql.query<{ exists: boolean; table: string | null; oid: string; columns: Column[] | null }>(
      `SELECT p.oid IS NOT NULL AS exists, c.relname AS table, c.oid::bigint AS oid,
              (SELECT json_agg(json_build_object('name', a.attname, 'typeOid', a.atttypid::int, 'typeMod', a.atttypmod)
                        ORDER BY a.attnum)
                 FROM pg_attribute a
                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '') AS columns
         FROM (SELECT 1) one
         LEFT JOIN pg_publication p ON p.pubname = ?
         LEFT JOIN pg_publication_rel r ON r.prpubid = p.oid
         LEFT JOIN pg_class c ON c.oid = r.prrelid`,
      [publication],
    );
    if (!rows[0]?.exists) return null;
    return new Map(rows.filter((r) => r.table).map((r) => [r.table!, shapeOf(Number(r.oid), r.columns ?? [])]));
  };

  return {
    async currentPosition() {
      let state = await slotState();
      if (state && lostReason(state)) {
        if (state.active_pid !== null)
          throw new SlotInUse(`the replication slot ${slot} is invalidated, and still used by pid ${state.active_pid}`);
        await sql.query('SELECT pg_drop_replication_slot(?)', [slot]);
        state = undefined;
      }
      // The slot's confirmed position, not the end of the WAL: a transaction whose commit record is written
      // before pg_current_wal_lsn() may still be invisible to a snapshot taken just after (it is visible only
      // once its backend leaves the proc array, which synchronous replication can delay), and would be missed
      // by both the full pass and a stream from there. Everything not acknowledged is delivered again instead.
      return lsnText(lsnValue(state ? state.confirmed! : await createSlot(source.url, slot, sql)));
    },

    async open(position) {
      const start = lsnValue(position);
      const state = await slotState();
      if (!state) throw new LogPositionLost(`the replication slot ${slot} no longer exists (it was dropped)`);
      const lost = lostReason(state);
      if (lost) throw new LogPositionLost(`the replication slot ${slot} can no longer be read: ${lost}`);
      const tables = await published();
      if (!tables) throw publicationGone(publication);
      // What the streams before this one knew of the publication: a table dropped or made again since is
      // said by the new stream (its rows went with no DELETE in the log).
      const known = new Map(shapes);
      for (const [table, shape] of tables) if (!shapes.has(table)) shapes.set(table, shape);
      // Another sync handing over holds the slot until it stops: try again for a while.
      const deadline = Date.now() + slotBusyMs;
      for (;;) {
        let walsender: number | null = null;
        const stream = new PgoutputStream({
          client: { connectionString: source.url, application_name: 'team-resources-sync', keepAlive: true },
          slot,
          publication,
          position: start,
          shapes,
          published,
          intervals,
          confirmed: async () => {
            const now = await slotState();
            walsender = now?.active_pid ?? null;
            return now?.confirmed ? lsnValue(now.confirmed) : undefined;
          },
        });
        try {
          await stream.start(tables, known);
        } catch (error) {
          await stream.close();
          const { code, message } = (error ?? {}) as { code?: string; message?: string };
          if (code === OBJECT_IN_USE && Date.now() < deadline) {
            await sleep(SLOT_RETRY_MS);
            continue;
          }
          throw startError(error, slot, publication, code, message ?? '', slotBusyMs);
        }
        // Closed, the stream's socket is cut; the server's walsender lets the slot go a moment later. Waiting
        // for that (briefly) leaves no session behind, and the slot free for whoever opens it next.
        const released = async () => {
          const until = Date.now() + RELEASE_MS;
          while (walsender !== null && Date.now() < until) {
            const now = await slotState().catch(() => undefined);
            if (now?.active_pid !== walsender) return;
            await sleep(20);
          }
        };
        const handle: ChangeStream = {
          acknowledge: (position) => stream.acknowledge(position),
          close: async () => {
            streams.delete(handle);
            await stream.close();
            await released();
          },
          [Symbol.asyncIterator]: () => stream[Symbol.asyncIterator](),
        };
        streams.add(handle);
        return handle;
      }
    },

    async retainedBytes() {
      // Counted from restart_lsn, not confirmed_flush_lsn: pg_replication_slots
      // (https://www.postgresql.org/docs/current/view-pg-replication-slots.html) gives restart_lsn as the oldest
      // WAL the slot's consumer may still need, which checkpoints keep; that is the WAL on the server's disk,
      // and what max_slot_wal_keep_size measures. It trails the confirmed position by the transactions open when
      // the slot last moved, and moves only as the server logs its running transactions (at least every 15 s
      // while there is activity, and at checkpoints). The view and pg_current_wal_lsn() are open to any role.
      // `position` is not needed: the slot knows what was acknowledged.
      const [row] = await sql.query<{ bytes: string | null }>(
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text AS bytes
           FROM pg_replication_slots WHERE slot_name = ?`,
        [slot],
      );
      return Math.max(0, Number(row?.bytes ?? 0));
    },

    async close() {
      await Promise.all([...streams].map((stream) => stream.close()));
      await sql.close();
    },
  };
}

type SlotState = {
  database: string;
  plugin: string | null;
  active_pid: number | null;
  confirmed: string | null;
  wal_status: string | null;
  invalidation_reason: string | null;
  conflicting: boolean | null;
  current: string;
};

interface Column {
  name: string;
  typeOid: number;
  typeMod: number;
}

/** How long a slot held by another connection is waited for, and how often it is tried. */
const SLOT_BUSY_MS = 10_000;
const SLOT_RETRY_MS = 250;
/** How long close() waits for the server to let the slot go. */
const RELEASE_MS = 2_000;
/** How long creating a slot may wait for the transactions open before it (see createSlot). */
const CREATE_SLOT_MS = 30_000;
const OBJECT_IN_USE = '55006';
const UNDEFINED_OBJECT = '42704';
const DUPLICATE_OBJECT = '42710';

/** The slot is held by another connection, and was not let go in time. */
export class SlotInUse extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SlotInUse';
  }
}

const busy = (slot: string, pid: number | string, waitedMs: number) =>
  new SlotInUse(
    `the replication slot ${slot} is in use by another connection (pid ${pid}) and was not let go within ` +
      `${waitedMs / 1000} s: is another sync running on this source?`,
  );

/** A START_REPLICATION refused, in the sync's terms. */
function startError(
  error: unknown,
  slot: string,
  publication: string,
  code: string | undefined,
  message: string,
  slotBusyMs: number,
) {
  if (code === OBJECT_IN_USE) return busy(slot, /PID (\d+)/i.exec(message)?.[1] ?? '?', slotBusyMs);
  if (code === UNDEFINED_OBJECT && /replication slot/.test(message))
    return new LogPositionLost(`the replication slot ${slot} no longer exists (it was dropped)`, { cause: error });
  const detail = (error as { detail?: string }).detail ?? '';
  if (/invalidated|can no longer/i.test(`${message} ${detail}`))
    return new LogPositionLost(`the replication slot ${slot} can no longer be read: ${detail || message}`, {
      cause: error,
    });
  if (code === UNDEFINED_OBJECT && /publication/.test(message)) return publicationGone(publication, error);
  return error;
}

/**
 * Creates the slot (https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-REPLICATION), on a
 * connection of its own: PostgreSQL waits for every transaction open at that moment to end before the slot is
 * ready, which an app's long transaction can stretch past the 10-second silence the sync's queries allow. The
 * server gives up after CREATE_SLOT_MS (statement_timeout), and drops the slot it had begun.
 * Returns its position: every transaction committed after it is decoded.
 */
async function createSlot(url: string, slot: string, sql: ReturnType<typeof lazyConnection>): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: SOURCE_SILENCE_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    await withinSilence(client.query(`SET statement_timeout = ${CREATE_SLOT_MS}`));
    const { rows } = await withinSilence(
      client.query<{ lsn: string }>("SELECT lsn::text AS lsn FROM pg_create_logical_replication_slot($1, 'pgoutput')", [
        slot,
      ]),
      CREATE_SLOT_MS + SOURCE_SILENCE_MS,
    );
    return rows[0]!.lsn;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    // Another sync made it meanwhile: its position serves as well.
    if (code === DUPLICATE_OBJECT) {
      const [made] = await sql.query<{ lsn: string | null }>(
        'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = ?',
        [slot],
      );
      return made?.lsn ?? Promise.reject(error);
    }
    if (code === '53400')
      throw new Error(`cannot create the replication slot ${slot}: ${message} (max_replication_slots)`, {
        cause: error,
      });
    if (code === '57014') {
      const [oldest] = (
        await withinSilence(
          client.query<{ pid: number; since: string }>(
            `SELECT pid, xact_start::text AS since FROM pg_stat_activity
              WHERE xact_start IS NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 1`,
          ),
        ).catch(() => ({ rows: [] }))
      ).rows;
      throw new Error(
        `creating the replication slot ${slot} waited ${CREATE_SLOT_MS / 1000} s for the transactions open ` +
          `before it to end${oldest ? ` (the oldest: pid ${oldest.pid}, since ${oldest.since})` : ''}; try again`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    // A connection gone silent is cut: end() destroys the socket of a connection with a call under way.
    await Promise.race([client.end().catch(() => {}), sleep(1_000)]);
  }
}

/**
 * One SQL connection for the source's own queries (slot, publication, retained WAL), made when first needed,
 * made again after a fault of the network, and cut, never waited on, when closed: its socket is kept for that.
 * Each query waits at most SOURCE_SILENCE_MS.
 */
function lazyConnection(url: string) {
  let current: { client: pg.Client; socket: Socket; ready: Promise<unknown> } | undefined;
  const drop = (connection: typeof current) => {
    if (current === connection) current = undefined;
    connection?.socket.destroy();
  };
  const connect = () => {
    const socket = new Socket();
    const client = new pg.Client({
      connectionString: url,
      application_name: 'team-resources-sync',
      stream: () => socket,
    });
    const connection = { client, socket, ready: client.connect() };
    // Lost between calls (a network cut, a server restart): the next call connects again.
    client.on('error', () => drop(connection));
    client.on('end', () => drop(connection));
    current = connection;
    return connection;
  };
  return {
    async query<T extends Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
      for (let attempt = 1; ; attempt++) {
        const reused = current !== undefined;
        const connection = current ?? connect();
        try {
          await withinSilence(connection.ready);
          return (await withinSilence(connection.client.query(toPostgresParameters(text), params))).rows as T[];
        } catch (error) {
          if (sourceFault(error) !== 'unreachable') throw error;
          drop(connection);
          // A connection lost while idle may say so only at its next use: one more try, on a new one.
          if (!reused || attempt > 1) throw error;
        }
      }
    },
    async close() {
      const connection = current;
      current = undefined;
      if (!connection) return;
      await Promise.race([connection.client.end().catch(() => {}), sleep(1_000)]);
      connection.socket.destroy();
    },
  };
}
