import { Socket } from 'node:net';
import type { ClientConfig } from 'pg';
import { LogicalReplicationService, type Pgoutput } from 'pg-logical-replication';
import { SyncRefused } from '../refused.ts';
import { SOURCE_SILENCE_MS, SourceSilent } from '../source/connection.ts';
import {
  type ChangeStream,
  type LogIntervals,
  type LoggedChange,
  type LoggedRow,
  type LoggedTransaction,
  PART_CHANGES,
} from './change-source.ts';
import { lsnText, lsnValue } from './lsn.ts';
import { shapeOf, type TableShape, TextPgoutput } from './pgoutput-text.ts';

/**
 * The publication gone (dropped, or never made): a person runs setup again, which a command repeats
 * with the --mapping given (commands/cli/source.ts, withRepeat). Ends the sync, in one line.
 */
export const publicationGone = (publication: string, cause?: unknown) =>
  new SyncRefused(`the publication ${publication} does not exist: run npm run sync -- setup --source <url>`, { cause });

/**
 * One open stream of a logical replication slot, decoded by pgoutput (postgres.ts opens it). The protocol is
 * pg-logical-replication's: it connects in replication mode, starts the slot and parses pgoutput's messages
 * (https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html), which is subtle
 * binary work a maintained library does better than a copy here. Around it, this file keeps what the sync
 * relies on and the library does not give, or gives wrong in 2.5.0:
 *
 * - Values as pgoutput's text (pgoutput-text.ts).
 * - Acknowledgement only of what the consumer acknowledged, at exactly that position. The library's
 *   acknowledge(lsn) reports lsn + 1 (physical replication's convention), and PostgreSQL skips, on the next
 *   start, every transaction whose commit record begins before the confirmed position: a transaction
 *   committed right after the acknowledged one would be lost. So it is given position - 1. Its periodic
 *   status update (acknowledge.timeoutSeconds) would confirm the last position received, unasked: it is off,
 *   and this stream sends its own, with the consumer's position.
 * - Keepalives asked for (a status update with "reply requested", every PING_MS): the server answers at
 *   once (https://www.postgresql.org/docs/current/protocol-replication.html), so a silent server or a dead
 *   connection is noticed within SOURCE_SILENCE_MS instead of never.
 * - A keepalive's clock: the library counts it from 1999-12-25 instead of PostgreSQL's epoch, 2000-01-01.
 * - Bounded memory: the library's flow control pauses the socket while a message is handled; a handler
 *   waits while QUEUED_PARTS parts are unread, and a large transaction is handed over in parts.
 */

/** How often a status update asks the server for a keepalive (these four: unless options.intervals says otherwise). */
const PING_MS = 2_000;
/** While no transaction comes, how often the log's progress is handed over (an empty part with a commit). */
const IDLE_PART_MS = 5_000;
/** How often the publication's tables are read again (a table dropped or added says nothing in the log). */
const WATCH_MS = 10_000;
const PART_BYTES = 4 * 1024 * 1024;
const QUEUED_PARTS = 4;
/** 2000-01-01 (PostgreSQL's epoch) minus the library's 946080000000 (1999-12-25), in ms. */
const KEEPALIVE_CLOCK_FIX_MS = 946_684_800_000 - 946_080_000_000;

interface StreamOptions {
  client: ClientConfig;
  slot: string;
  publication: string;
  /** Where to start: transactions whose commit is at or after it. */
  position: bigint;
  /** The last shape seen of each table, by name: kept by the source across streams. */
  shapes: Map<string, TableShape>;
  /** The publication's tables now, by name (null: the publication is gone). */
  published(): Promise<Map<string, TableShape> | null>;
  /** The slot's confirmed position once this stream holds the slot. */
  confirmed(): Promise<bigint | undefined>;
  /** Shorter intervals than PING_MS, IDLE_PART_MS, WATCH_MS and SOURCE_SILENCE_MS (a test's). */
  intervals?: LogIntervals;
}

export class PgoutputStream implements ChangeStream {
  readonly #options: StreamOptions;
  readonly #service: LogicalReplicationService;
  readonly #sockets = new Set<Socket>();
  readonly #parts: LoggedTransaction[] = [];
  #reader?: () => void;
  #room: (() => void)[] = [];
  #waitingForRoom = false;
  #failure?: { error: unknown };
  #closed = false;
  #subscribed?: Promise<unknown>;
  #timer?: NodeJS.Timeout;
  #ticks = 0;
  /** The intervals in ms, and the ping and the watch in ticks of the timer. */
  readonly #every: { silence: number; idlePart: number; tick: number; pingTicks: number; watchTicks: number };
  /** The consumer's position, as the server was last told (0: not known yet, nothing is sent). */
  #acknowledged = 0n;
  // The transaction being read.
  #inTransaction = false;
  #changes: LoggedChange[] = [];
  /** Parts of it already handed over: its commit then ends them, even with nothing after. */
  #partsGiven = false;
  #bytes = 0;
  #committedAt = 0;
  /** Changes noticed outside the log (the publication's watch), handed over with the next part. */
  #pending: LoggedChange[] = [];
  // The log's progress: XLogData messages received and handled, so that a keepalive counts only once
  // everything received before it is handled; and the last position handed over.
  #received = 0;
  #handled = 0;
  #keepalive?: { position: bigint; at: number; after: number };
  #emptyCommit?: { position: bigint; at: number };
  #handedOver: bigint;
  #lastPartAt = Date.now();
  #lastHeard = Date.now();
  #published?: Map<string, TableShape>;

  constructor(options: StreamOptions) {
    this.#options = options;
    this.#handedOver = options.position;
    const { pingMs = PING_MS, idlePartMs = IDLE_PART_MS, watchMs = WATCH_MS } = options.intervals ?? {};
    const silence = options.intervals?.silenceMs ?? SOURCE_SILENCE_MS;
    // A tick a second with the defaults (a ping every 2 ticks, a watch every 10); shorter where a test asks.
    const tick = Math.min(1_000, pingMs, idlePartMs, watchMs, silence);
    this.#every = {
      silence,
      idlePart: idlePartMs,
      tick,
      pingTicks: Math.max(1, Math.round(pingMs / tick)),
      watchTicks: Math.max(1, Math.round(watchMs / tick)),
    };
    this.#service = new LogicalReplicationService(
      {
        ...options.client,
        // The socket is kept, so that close() can always destroy it.
        stream: () => {
          const socket = new Socket();
          this.#sockets.add(socket);
          socket.once('close', () => this.#sockets.delete(socket));
          return socket;
        },
      },
      { acknowledge: { auto: false, timeoutSeconds: 0 }, flowControl: { enabled: true } },
    );
    this.#service.on('data', (_lsn: string, message: Pgoutput.Message) => this.#onMessage(message));
    this.#service.on('heartbeat', (lsn: string, time: number, reply: boolean) => this.#onKeepalive(lsn, time, reply));
    this.#service.on('error', (error: Error) => this.#fail(error));
  }

  /**
   * Starts streaming; rejects with the server's error (a slot in use, dropped, invalidated) or a silence.
   * `known` is the publication as the streams before this one last saw it: a table dropped or made again
   * since (while the sync was reconnecting, say) is said at once, as the watch says it (#watch).
   */
  async start(published: Map<string, TableShape>, known?: Map<string, TableShape>): Promise<void> {
    this.#published = known?.size ? known : published;
    this.#compare(published);
    const plugin = new TextPgoutput(
      this.#options.publication,
      () => {
        this.#received++;
        this.#lastHeard = Date.now();
      },
      (error) => this.#fail(error),
    );
    await new Promise<void>((resolve, reject) => {
      const silence = setTimeout(() => reject(new SourceSilent(this.#every.silence)), this.#every.silence);
      const settle = (error?: unknown) => {
        clearTimeout(silence);
        this.#service.off('start', started);
        if (error === undefined) resolve();
        else reject(error);
      };
      const started = () => settle();
      this.#service.once('start', started);
      this.#subscribed = this.#service.subscribe(plugin, this.#options.slot, lsnText(this.#options.position)).then(
        // The server ended the replication (it is shutting down): as a dropped connection.
        () => this.#fail(new Error('Connection terminated: the server ended the replication stream')),
        (error) => {
          settle(error);
          this.#fail(error);
        },
      );
    });
    this.#lastHeard = Date.now();
    this.#acknowledged = (await this.#options.confirmed().catch(() => undefined)) ?? this.#options.position;
    this.#timer = setInterval(() => this.#tick(), this.#every.tick);
    this.#timer.unref();
    this.#status(true);
  }

  async acknowledge(position: string): Promise<void> {
    const value = lsnValue(position);
    if (value > this.#acknowledged) {
      this.#acknowledged = value;
      this.#status(false);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#reader?.();
    for (const resume of this.#room.splice(0)) resume();
    // destroy() ends the connection: node-postgres cuts the socket of a connection with a query under way (the
    // START_REPLICATION), and the walsender sees it at once; if anything lingers, the socket is cut after 1 s.
    let cut: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#service.destroy().catch(() => {}),
      new Promise<void>((resolve) => {
        cut = setTimeout(resolve, 1_000);
      }),
    ]);
    clearTimeout(cut);
    for (const socket of this.#sockets) socket.destroy();
    await this.#subscribed?.catch(() => {});
  }

  [Symbol.asyncIterator](): AsyncIterator<LoggedTransaction> {
    return {
      next: async () => {
        for (;;) {
          if (this.#failure) {
            const { error } = this.#failure;
            this.#failure = { error: undefined };
            if (error !== undefined) throw error;
            return { value: undefined, done: true };
          }
          const part = this.#parts.shift();
          if (part) {
            if (this.#parts.length < QUEUED_PARTS) for (const resume of this.#room.splice(0)) resume();
            return { value: part, done: false };
          }
          if (this.#closed) return { value: undefined, done: true };
          await new Promise<void>((resolve) => {
            this.#reader = resolve;
          });
          this.#reader = undefined;
        }
      },
      // Leaving a for-await loop ends the stream, as leaving a Node stream's loop destroys it.
      return: async () => {
        await this.close();
        return { value: undefined, done: true };
      },
    };
  }

  #fail(error: unknown) {
    if (this.#closed || this.#failure) return;
    this.#failure = { error };
    void this.close();
  }

  /** A standby status update: the consumer's position as written, flushed and applied. */
  #status(replyRequested: boolean) {
    if (this.#closed || this.#acknowledged === 0n) return;
    // The library reports the position it is given plus one (see above).
    void this.#service.acknowledge(lsnText(this.#acknowledged - 1n), replyRequested).catch(() => {});
  }

  #tick() {
    if (this.#closed) return;
    this.#ticks++;
    // Silence counts only while waiting for the server, not while the reader takes its time.
    if (this.#waitingForRoom) this.#lastHeard = Date.now();
    else if (Date.now() - this.#lastHeard > this.#every.silence)
      return this.#fail(new SourceSilent(this.#every.silence));
    if (this.#ticks % this.#every.pingTicks === 0) this.#status(true);
    if (this.#ticks % this.#every.watchTicks === 0) void this.#watch();
    this.#progress();
  }

  #onKeepalive(lsn: string, time: number, replyRequested: boolean) {
    this.#lastHeard = Date.now();
    this.#keepalive = { position: lsnValue(lsn), at: time + KEEPALIVE_CLOCK_FIX_MS, after: this.#received };
    if (replyRequested) this.#status(false);
    this.#progress();
  }

  async #onMessage(message: Pgoutput.Message) {
    try {
      await this.#handle(message);
    } finally {
      this.#handled++;
      this.#progress();
    }
  }

  async #handle(message: Pgoutput.Message) {
    switch (message.tag) {
      case 'begin':
        this.#inTransaction = true;
        this.#committedAt = Math.floor(Number(message.commitTime) / 1000);
        return;
      case 'relation':
        return this.#add(...this.#shapeChanges(message.name, shapeOf(message.relationOid, message.columns)));
      case 'insert':
        return this.#add({ kind: 'insert', table: message.relation.name, row: loggedRow(message.new) });
      case 'update': {
        const old = message.old ?? message.key;
        const row = loggedRow(message.new);
        return this.#add({
          kind: 'update',
          table: message.relation.name,
          row,
          ...(old ? { old: loggedRow(old) } : {}),
        });
      }
      case 'delete':
        return this.#add({ kind: 'delete', table: message.relation.name, old: loggedRow(message.old ?? message.key) });
      case 'truncate':
        return this.#add({ kind: 'truncate', tables: message.relations.map((relation) => relation.name) });
      case 'commit': {
        const position = lsnValue(message.commitEndLsn!);
        const changes = this.#changes;
        const partsGiven = this.#partsGiven;
        this.#inTransaction = false;
        this.#partsGiven = false;
        this.#changes = [];
        this.#bytes = 0;
        // A transaction with nothing of the publication (PostgreSQL 13 and 14 send them): progress only.
        if (changes.length === 0 && !partsGiven) this.#emptyCommit = { position, at: this.#committedAt };
        else await this.#handOver({ changes, commit: { position: lsnText(position), committedAt: this.#committedAt } });
        return;
      }
      default:
        return; // types, origins: nothing the sync reads
    }
  }

  /** A table's relation message: a change of its columns (or of the table itself) since the last one seen. */
  #shapeChanges(table: string, shape: TableShape): LoggedChange[] {
    const last = this.#options.shapes.get(table);
    this.#options.shapes.set(table, shape);
    if (!last || (last.oid === shape.oid && last.columns === shape.columns)) return [];
    // Another oid: the table was dropped and made again, its rows gone with no DELETE in the log.
    return last.oid === shape.oid
      ? [{ kind: 'schema', table }]
      : [
          { kind: 'schema', table },
          { kind: 'truncate', tables: [table] },
        ];
  }

  async #add(...changes: LoggedChange[]) {
    for (const change of changes) {
      this.#changes.push(change);
      this.#bytes += change.kind === 'insert' || change.kind === 'update' ? rowBytes(change.row) : 64;
      if (change.kind === 'update' && change.old) this.#bytes += rowBytes(change.old);
    }
    if (this.#changes.length >= PART_CHANGES || this.#bytes >= PART_BYTES) {
      const part = this.#changes;
      this.#changes = [];
      this.#bytes = 0;
      this.#partsGiven = true;
      await this.#handOver({ changes: part });
    }
  }

  /** Gives a part to the reader, then waits while too many are unread (the library keeps the socket paused). */
  async #handOver(part: LoggedTransaction) {
    this.#give(part);
    while (this.#parts.length >= QUEUED_PARTS && !this.#closed) {
      this.#waitingForRoom = true;
      await new Promise<void>((resolve) => this.#room.push(resolve));
      this.#waitingForRoom = false;
      this.#lastHeard = Date.now();
    }
  }

  #give(part: LoggedTransaction) {
    if (this.#pending.length) part.changes.unshift(...this.#pending.splice(0));
    this.#parts.push(part);
    if (part.commit) this.#handedOver = lsnValue(part.commit.position);
    this.#lastPartAt = Date.now();
    this.#reader?.();
  }

  /**
   * While idle, the log's progress as an empty part with a commit, so that the consumer acknowledges it and the
   * slot lets the WAL go. A keepalive's position is where the server has read the WAL to: every transaction
   * whose commit comes before it has been sent (https://www.postgresql.org/docs/current/protocol-replication.html),
   * so it counts once everything received before the keepalive is handled, and never inside a transaction.
   */
  #progress() {
    if (this.#closed || this.#failure || this.#inTransaction) return;
    if (this.#parts.length && !this.#pending.length) return; // the reader is behind: no need to tell it more
    let best = this.#emptyCommit;
    const keepalive = this.#keepalive;
    if (keepalive && this.#handled >= keepalive.after && (!best || keepalive.position > best.position))
      best = keepalive;
    const advanced = best !== undefined && best.position > this.#handedOver;
    if (!this.#pending.length && (!advanced || Date.now() - this.#lastPartAt < this.#every.idlePart)) return;
    const position = advanced ? best!.position : this.#handedOver;
    const committedAt = best?.at ?? this.#keepalive?.at ?? Date.now();
    this.#give({ changes: [], commit: { position: lsnText(position), committedAt } });
  }

  /**
   * The publication's tables, compared with the last look: pgoutput says nothing of a table dropped (its rows go
   * with no DELETE in the log, and it leaves the publication) or added to it (its earlier rows never were in the
   * log). Either is handed over as a schema change and a truncate of that table: the sync reads it again.
   */
  async #watch() {
    const now = await this.#options.published().catch(() => undefined);
    if (this.#closed || now === undefined) return;
    if (now === null) return this.#fail(publicationGone(this.#options.publication));
    this.#compare(now);
  }

  /** The publication now, against the last look: each table dropped, made again or added, said. */
  #compare(now: Map<string, TableShape>) {
    const before = this.#published ?? now;
    this.#published = now;
    for (const table of new Set([...before.keys(), ...now.keys()])) {
      const [was, is] = [before.get(table), now.get(table)];
      if (was?.oid === is?.oid) continue;
      if (is) this.#options.shapes.set(table, is);
      this.#pending.push({ kind: 'schema', table }, { kind: 'truncate', tables: [table] });
    }
  }
}

/** A row as pgoutput gives it, by column name; a TOASTed value an UPDATE left alone is not sent, so absent. */
function loggedRow(tuple: Record<string, unknown> | null): LoggedRow {
  const row: Record<string, string | null> = {};
  for (const [name, value] of Object.entries(tuple ?? {})) {
    if (value === undefined) continue;
    row[name] = value === null ? null : String(value);
  }
  return row;
}

const rowBytes = (row: LoggedRow) => {
  let bytes = 0;
  for (const value of Object.values(row)) bytes += (value?.length ?? 0) + 16;
  return bytes;
};
