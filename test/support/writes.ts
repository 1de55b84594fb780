import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDbClient } from '../../shared/store/dynamodb-client.ts';
import type { TestTable } from './dynamodb.ts';

/** What an item written is, by its key (shared/store/keys.ts). */
export type WrittenKind =
  | 'project'
  | 'daemon'
  | 'member'
  | 'head'
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
  if (pk.endsWith('#MEMBER')) return 'member';
  if (pk.startsWith('TEAMREF#')) return sk === 'HEAD' ? 'head' : 'finance';
  if (pk.startsWith('TOKEN#')) return 'token';
  if (pk.startsWith('USER#')) return sk === 'USER' ? 'user' : 'user token';
  if (pk === 'SANCTUM') return 'sanctum';
  if (pk === 'TEAMS') return 'team list';
  if (pk === 'GENERATIONS') return 'ledger';
  if (pk === 'IMPORT') return 'lock';
  if (pk === 'SYNC') return 'sync lease';
  throw new Error(`an item of no known kind was written: ${pk} ${sk}`);
}

/** Items written, by kind; `data` leaves out the lock and the lease, which hold no data. */
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

type WriteRequest = {
  PutRequest?: { Item: Record<string, unknown> };
  DeleteRequest?: { Key: Record<string, unknown> };
};
type Input = {
  Item?: Record<string, unknown>;
  Key?: Record<string, unknown>;
  RequestItems?: Record<string, WriteRequest[]>;
  TransactItems?: Record<string, { Item?: Record<string, unknown>; Key?: Record<string, unknown> }>[];
};

/**
 * The table through a document client that counts every item written, at its own middleware
 * stack (as test/support/calls.ts counts reads): a write the code makes is a write counted. Only
 * what DynamoDB accepted counts: a failed call writes nothing (a BatchWriteItem's unprocessed
 * items are counted when they are sent again and accepted).
 */
export function countedTable(table: TestTable) {
  const client = createDynamoDbClient({ endpoint: table.endpoint, maxAttempts: 5, requestTimeoutMs: 30_000 });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  let count = new WriteCount();
  doc.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      const input = args.input as Input;
      const result = await next(args);
      const output = result.output as { UnprocessedItems?: Record<string, WriteRequest[]> };
      switch (operation) {
        case 'PutItem':
          count.add(input.Item!);
          break;
        case 'UpdateItem':
        case 'DeleteItem':
          count.add(input.Key!);
          break;
        case 'BatchWriteItem': {
          const keyOf = (request: WriteRequest) => {
            const { pk, sk } = request.PutRequest?.Item ?? request.DeleteRequest!.Key;
            return `${pk}\u0000${sk}`;
          };
          const unprocessed = new Set(
            Object.values(output.UnprocessedItems ?? {})
              .flat()
              .map(keyOf),
          );
          for (const request of Object.values(input.RequestItems ?? {}).flat()) {
            if (!unprocessed.has(keyOf(request))) count.add(request.PutRequest?.Item ?? request.DeleteRequest!.Key);
          }
          break;
        }
        case 'TransactWriteItems':
          for (const action of input.TransactItems ?? []) {
            if (action.ConditionCheck) continue;
            const write = (action.Put ?? action.Update ?? action.Delete)!;
            count.add(write.Item ?? write.Key!);
          }
      }
      return result;
    },
    // Before marshalling: keys as plain values.
    { step: 'initialize', name: 'testWriteCounter' },
  );
  return {
    table: { ...table, client, doc } as TestTable,
    /** Counts the items `write` writes through this table. */
    async count(write: () => Promise<unknown>): Promise<WriteCount> {
      count = new WriteCount();
      await write();
      return count;
    },
  };
}
