import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbClient } from '../../shared/table/dynamodb-client.ts';
import { onEveryWrite } from '../../shared/write/writer.ts';
import type { TestTable } from './dynamodb.ts';

/** What an item written is, by its key (shared/table/keys.ts). */
export type WrittenKind =
  | 'project'
  | 'daemon'
  | 'list hashes'
  | 'member'
  | 'head'
  | 'team'
  | 'finance'
  | 'token'
  | 'user'
  | 'user token'
  | 'sanctum'
  | 'team list'
  | 'ledger'
  | 'lock'
  | 'sync lease';

export function kindOf(key: { pk?: unknown; sk?: unknown }): WrittenKind {
  const pk = String(key.pk);
  const sk = String(key.sk);
  if (pk.endsWith('#projects')) return 'project';
  if (pk.endsWith('#daemons')) return 'daemon';
  // The ids and hashes of a list generation written dense (shared/write/list-hashes.ts).
  if (pk.endsWith('#H')) return 'list hashes';
  if (pk.endsWith('#MEMBER')) return 'member';
  // A list's head (each copy), the finance summary (each copy), and the team's record.
  if (pk.startsWith('TEAMREF#')) return sk.startsWith('LIST#') ? 'head' : sk === 'TEAM' ? 'team' : 'finance';
  if (pk.startsWith('TOKEN#')) return 'token';
  if (pk.startsWith('USER#')) return sk === 'USER' ? 'user' : 'user token';
  if (pk.startsWith('SANCTUM#')) return 'sanctum';
  if (pk === 'TEAMS') return 'team list';
  if (pk.startsWith('LEDGER#')) return 'ledger';
  // A team's writers' lock, and the import's lease: neither holds data.
  if (pk.startsWith('LOCK#') || pk === 'IMPORT') return 'lock';
  if (pk === 'SYNC') return 'sync lease';
  throw new Error(`an item of no known kind was written: ${pk} ${sk}`);
}

/** Items written, by kind; `data` leaves out the locks and the leases, which hold no data. */
export class WriteCount {
  readonly byKind = new Map<WrittenKind, number>();
  /** Every key written, as `pk sk`. */
  readonly keys: string[] = [];

  add(key: { pk?: unknown; sk?: unknown }): void {
    this.keys.push(`${key.pk} ${key.sk}`);
    const kind = kindOf(key);
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
  }

  of(...kinds: WrittenKind[]): number {
    return kinds.reduce((n, kind) => n + (this.byKind.get(kind) ?? 0), 0);
  }

  get data(): number {
    return [...this.byKind].reduce((n, [kind, count]) => (kind === 'lock' || kind === 'sync lease' ? n : n + count), 0);
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries(this.byKind);
  }
}

/**
 * Counts the items the table's own clients write (its `doc` and, when it has one, its `bulk`), as
 * countedTable does through a client of its own: for a table whose clients are the commands' own
 * (test/support/limited-dynamodb.ts, throughCommandClients).
 */
export function countedOn(table: TestTable) {
  let count = new WriteCount();
  for (const doc of new Set([table.doc, table.bulk ?? table.doc])) onEveryWrite(doc, (key) => count.add(key));
  return {
    table,
    async count(write: () => Promise<unknown>): Promise<WriteCount> {
      count = new WriteCount();
      await write();
      return count;
    },
    restart(): WriteCount {
      count = new WriteCount();
      return count;
    },
  };
}

/**
 * The table through a document client that counts every item written, at its own middleware stack
 * (shared/write/writer.ts, onEveryWrite: what the sync reports as items written), as
 * test/support/calls.ts counts reads: a write the code makes is a write counted.
 */
export function countedTable(table: TestTable) {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  let count = new WriteCount();
  onEveryWrite(doc, (key) => count.add(key));
  return {
    table: { ...table, client, doc } as TestTable,
    /** Counts the items `write` writes through this table. */
    async count(write: () => Promise<unknown>): Promise<WriteCount> {
      count = new WriteCount();
      await write();
      return count;
    },
    /** Counts from now on; the count returned grows as writes come. */
    restart(): WriteCount {
      count = new WriteCount();
      return count;
    },
  };
}
