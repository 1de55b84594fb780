import type { Demand, Kind } from './capacity-ledger.ts';
import {
  itemSize,
  readUnits,
  writeUnits,
  type AttributeValue,
  type ReadMode,
  type WireItem,
} from './capacity-units.ts';

/**
 * What each data-plane request of DynamoDB's JSON protocol asks of the limiter
 * (dynamodb-limiter.ts): the units it wants where (its demands, estimated before it runs), the
 * request to forward once some are refused, and what each admitted demand really cost, from
 * DynamoDB Local's answer. Pure: the limiter does the sending.
 *
 * Estimates are what the request alone tells: a put's item size; 1 WCU for an update or a delete
 * (the item's size is known only once it is found); the least read (0.5 RCU eventually consistent,
 * 1 strongly) for a read. Costs are DynamoDB Local's ConsumedCapacity where it is per request, which
 * follows DynamoDB's rules (a put or update costs the larger of the old and the new item, a delete
 * the deleted item, a Query the total size it read, rounded up once). A batch or a transaction is
 * one figure per table: items whose cost the request tells (a put's) keep it, and the rest is shared
 * among the others. Reads of a BatchGetItem or TransactGetItems are costed here from the items
 * returned, since DynamoDB Local charges nothing for a key that finds no item, where DynamoDB charges
 * a read ("DynamoDB read and write operations": a read of an item that does not exist still
 * consumes read capacity).
 */

export interface TableInfo {
  name: string;
  arn: string;
  partitionKey: string;
  sortKey?: string;
  onDemand: boolean;
}

/**
 * A request or an answer of DynamoDB's JSON protocol, parsed and not checked. Its fields are read
 * through the shapes below, DynamoDB's for the operation that names them ("Amazon DynamoDB API
 * Reference"), with only the fields read here. A request DynamoDB will refuse can be anything: one
 * whose plan throws is passed through unplanned (dynamodb-limiter.ts).
 */
export type Body = Record<string, unknown>;

/** GetItem, Query, Scan, PutItem, UpdateItem and DeleteItem. */
type SingleRequest = { TableName: string; Key?: WireItem; Item?: WireItem; ConsistentRead?: boolean };
type QueryRequest = {
  KeyConditionExpression?: string;
  KeyConditions?: Record<string, { ComparisonOperator?: string; AttributeValueList?: AttributeValue[] }>;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
};
/** One item of a BatchWriteItem (its RequestItems and UnprocessedItems, per table). */
export type WriteRequest = { PutRequest?: { Item: WireItem }; DeleteRequest?: { Key: WireItem } };
/** A BatchGetItem's keys of one table and how to read them (its RequestItems and UnprocessedKeys). */
export type KeysAndAttributes = { Keys: WireItem[]; ConsistentRead?: boolean };
type BatchWriteRequest = { RequestItems?: Record<string, WriteRequest[]> };
type BatchWriteAnswer = { UnprocessedItems?: Record<string, WriteRequest[]> };
export type BatchGetRequest = { RequestItems?: Record<string, KeysAndAttributes> };
export type BatchGetAnswer = {
  Responses?: Record<string, WireItem[]>;
  UnprocessedKeys?: Record<string, KeysAndAttributes>;
};
/** An item of a TransactWriteItems or TransactGetItems: its one action, `{Put: {…}}`. */
type TransactItem = Record<string, TransactAction>;
type TransactAction = { TableName: string; Key?: WireItem; Item?: WireItem };
type TransactRequest = { TransactItems?: TransactItem[] };
type TransactGetAnswer = { Responses?: { Item?: WireItem }[] };
type ConsumedCapacity = { TableName?: string; CapacityUnits?: number };
type CapacityAnswer = { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] };

/** A batch's refused items, per table: a BatchWriteItem's UnprocessedItems or a BatchGetItem's UnprocessedKeys. */
export type Unprocessed = Record<string, WriteRequest[] | KeysAndAttributes>;

type Shape = 'single' | 'batch' | 'transaction';

export interface Plan {
  kind: Kind;
  shape: Shape;
  /** In the request's order: the request itself, or one per item or key. */
  demands: Demand[];
  /** The request with only the admitted demands (a batch); the request itself otherwise. */
  forward(admitted: boolean[]): Body;
  /** A batch's refused items, in the form of its UnprocessedItems or UnprocessedKeys. */
  unprocessed(refused: boolean[]): Unprocessed;
  /** Per demand, what it cost (0 where it was not admitted or not done), from a successful answer. */
  costs(answer: Body, admitted: boolean[]): number[];
}

/** The data-plane operations the limiter limits; every other passes through. */
export const LIMITED = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactGetItems',
  'TransactWriteItems',
]);

/** A table's name, also where the request names it by its ARN. */
export const tableName = (nameOrArn: string) => nameOrArn.replace(/^arn:[^:]*:dynamodb:[^:]*:[^:]*:table\//, '');

/** How stats() names a partition key value: a string as it is, a number or binary tagged. */
function partitionLabel(value: AttributeValue | undefined): string | undefined {
  const [type, content] = Object.entries(value ?? {})[0] ?? [];
  if (type === undefined) return undefined;
  return type === 'S' ? String(content) : `${type}:${String(content)}`;
}

/** The tables a request names, to be described before it is planned. */
export function tablesOf(operation: string, body: Body): string[] {
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem')
    return Object.keys((body as BatchWriteRequest | BatchGetRequest).RequestItems ?? {}).map(tableName);
  if (operation === 'TransactGetItems' || operation === 'TransactWriteItems')
    return [
      ...new Set(((body as TransactRequest).TransactItems ?? []).map((item) => tableName(actionOf(item).TableName))),
    ];
  return typeof body.TableName === 'string' ? [tableName(body.TableName)] : [];
}

/** The one action of a transaction's item: `{Put: {…}}` is its Put (an item with none, one DynamoDB refuses: `{}`). */
const actionOf = (item: TransactItem): TransactAction => Object.values(item)[0] ?? ({} as TransactAction);
const modeOf = (body: { ConsistentRead?: boolean }): ReadMode => (body.ConsistentRead === true ? 'strong' : 'eventual');
/** What reading this item cost; reading none (it does not exist) costs the least read. */
const readCost = (item: WireItem | undefined, mode: ReadMode) => readUnits(itemSize(item ?? {}), mode);

/** The partition key value a Query's key condition fixes (`pk = :v`, either way round, or KeyConditions). */
export function queryPartition(body: Body, partitionKey: string): AttributeValue | undefined {
  const query = body as QueryRequest;
  const names = query.ExpressionAttributeNames ?? {};
  const values = query.ExpressionAttributeValues ?? {};
  const equality = /([#\w.]+)\s*=\s*(:\w+)|(:\w+)\s*=\s*([#\w.]+)/g;
  for (const match of String(query.KeyConditionExpression ?? '').matchAll(equality)) {
    const name = match[1] ?? match[4]!;
    if ((name.startsWith('#') ? names[name] : name) === partitionKey) return values[match[2] ?? match[3]!];
  }
  const legacy = query.KeyConditions?.[partitionKey];
  return legacy?.ComparisonOperator === 'EQ' ? legacy.AttributeValueList?.[0] : undefined;
}

/** DynamoDB Local's figure for a table in an answer (one object, or one per table). */
function consumed(answer: Body, table: string): number | undefined {
  const all = [(answer as CapacityAnswer).ConsumedCapacity ?? []].flat();
  const found = all.find((entry) => tableName(String(entry.TableName)) === table);
  return typeof found?.CapacityUnits === 'number' ? found.CapacityUnits : undefined;
}

/**
 * Shares a table's figure among its items. Those whose cost is `known` (a put's, by its item) keep
 * it; the others share what is left in proportion to their estimates, each at least `least`. With
 * none unknown, what the figure has beyond the estimates (a put that replaced a larger item) is
 * shared in proportion to them. An item never costs less than its estimate tells: DynamoDB Local's
 * figure for a transaction can fall short of DynamoDB's rules (two puts of 1,000 bytes in one
 * transaction: 2 WCU, not 4). Without a figure, each keeps its estimate.
 */
export function share(total: number | undefined, estimates: number[], known: boolean[], least: number): number[] {
  if (total === undefined) return estimates;
  const sum = (which: (i: number) => boolean) => estimates.reduce((all, units, i) => (which(i) ? all + units : all), 0);
  if (known.every(Boolean)) {
    const estimated = sum(() => true);
    const extra = Math.max(0, total - estimated);
    return estimates.map((units) => units + (estimated > 0 ? (extra * units) / estimated : 0));
  }
  const rest = Math.max(0, total - sum((i) => known[i]!));
  const weight = sum((i) => !known[i]);
  return estimates.map((units, i) => (known[i] ? units : Math.max(least, units, (rest * units) / weight)));
}

/** The plan of a request; `tables` holds every table tablesOf named. */
export function planFor(operation: string, body: Body, tables: Map<string, TableInfo>): Plan {
  const info = (name: string) => tables.get(tableName(name))!;
  const demand = (table: string, key: WireItem | undefined, units: number): Demand => ({
    table: tableName(table),
    partition: partitionLabel(key?.[info(table).partitionKey]),
    units,
  });
  const single = (kind: Kind, demand: Demand, cost: (answer: Body) => number): Plan => ({
    kind,
    shape: 'single',
    demands: [demand],
    forward: () => body,
    unprocessed: () => ({}),
    costs: (answer) => [cost(answer)],
  });

  switch (operation) {
    case 'GetItem':
    case 'Query':
    case 'Scan': {
      const request = body as SingleRequest;
      const least = readCost(undefined, modeOf(request));
      const { partitionKey } = info(request.TableName);
      // A Query reads one partition; a Scan reads them all, so it is limited by its table alone.
      const key: WireItem | undefined =
        operation === 'GetItem'
          ? request.Key
          : operation === 'Query'
            ? { [partitionKey]: queryPartition(body, partitionKey) ?? {} }
            : undefined;
      const read = demand(request.TableName, key, least);
      return single('read', read, (answer) => Math.max(least, consumed(answer, read.table) ?? least));
    }
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem': {
      const request = body as SingleRequest;
      const units = operation === 'PutItem' ? writeUnits(itemSize(request.Item ?? {})) : 1;
      const write = demand(request.TableName, operation === 'PutItem' ? request.Item : request.Key, units);
      return single('write', write, (answer) => Math.max(1, consumed(answer, write.table) ?? units));
    }
    case 'BatchWriteItem':
      return batchWrite(body, demand);
    case 'BatchGetItem':
      return batchGet(body, info, demand);
    case 'TransactWriteItems':
      return transaction('write', body, demand);
    case 'TransactGetItems':
      return transaction('read', body, demand);
    default:
      throw new Error(`the limiter has no plan for ${operation}`);
  }
}

type MakeDemand = (table: string, key: WireItem | undefined, units: number) => Demand;

/** Entries of a batch's RequestItems, one per item or key, with their table. */
function entries<T>(requestItems: Record<string, T[]>): { table: string; entry: T }[] {
  return Object.entries(requestItems).flatMap(([table, list]) => list.map((entry) => ({ table, entry })));
}

/** The entries kept, grouped back by table as the request names them. */
/** A BatchGetItem's keys (its RequestItems or UnprocessedKeys), one entry per key. */
const keysOf = (requests: Record<string, KeysAndAttributes>) =>
  entries<WireItem>(Object.fromEntries(Object.entries(requests).map(([table, r]) => [table, r.Keys ?? []])));

function grouped<T>(list: { table: string; entry: T }[], keep: boolean[]): Record<string, T[]> {
  const byTable: Record<string, T[]> = {};
  list.forEach(({ table, entry }, i) => {
    if (!keep[i]) return;
    byTable[table] ??= [];
    byTable[table].push(entry);
  });
  return byTable;
}

function batchWrite(body: Body, demand: MakeDemand): Plan {
  const list = entries((body as BatchWriteRequest).RequestItems ?? {});
  const puts = list.map(({ entry }) => entry.PutRequest !== undefined);
  const demands = list.map(({ table, entry }, i) =>
    puts[i]
      ? demand(table, entry.PutRequest!.Item, writeUnits(itemSize(entry.PutRequest!.Item)))
      : demand(table, entry.DeleteRequest?.Key, 1),
  );
  return {
    kind: 'write',
    shape: 'batch',
    demands,
    forward: (admitted) => ({ ...body, RequestItems: grouped(list, admitted) }),
    unprocessed: (refused) => grouped(list, refused),
    costs(answer, admitted) {
      const unprocessed = (answer as BatchWriteAnswer).UnprocessedItems ?? {};
      const left = new Set(entries(unprocessed).map(({ entry }) => JSON.stringify(entry)));
      const done = list.map(({ entry }, i) => admitted[i]! && !left.has(JSON.stringify(entry)));
      return costsByTable(demands, done, (table) => consumed(answer, table), puts, 1);
    },
  };
}

/** Per demand done, its share of its table's figure (share()); 0 for the others. */
function costsByTable(
  demands: Demand[],
  done: boolean[],
  figure: (table: string) => number | undefined,
  known: boolean[],
  least: number,
): number[] {
  const costs = demands.map(() => 0);
  for (const table of new Set(demands.map((d) => d.table))) {
    const members = demands.flatMap((d, i) => (d.table === table && done[i] ? [i] : []));
    const shares = share(
      figure(table),
      members.map((i) => demands[i]!.units),
      members.map((i) => known[i]!),
      least,
    );
    for (const [n, i] of members.entries()) costs[i] = shares[n]!;
  }
  return costs;
}

function batchGet(body: Body, info: (name: string) => TableInfo, demand: MakeDemand): Plan {
  const requests = (body as BatchGetRequest).RequestItems ?? {};
  const list = keysOf(requests);
  const modes = list.map(({ table }) => modeOf(requests[table]!));
  const demands = list.map(({ table, entry }, i) => demand(table, entry, readCost(undefined, modes[i]!)));
  const keep = (which: boolean[]) =>
    Object.fromEntries(
      Object.entries(grouped(list, which)).map(([table, keys]) => [table, { ...requests[table], Keys: keys }]),
    );
  return {
    kind: 'read',
    shape: 'batch',
    demands,
    forward: (admitted) => ({ ...body, RequestItems: keep(admitted) }),
    unprocessed: keep,
    costs(reply, admitted) {
      const answer = reply as BatchGetAnswer;
      // An item's key, to match what came back with what was asked (the answer is in no order).
      const identity = (table: string, item: WireItem) => {
        const { partitionKey, sortKey } = info(table);
        const sort = sortKey === undefined ? null : item[sortKey];
        if (item[partitionKey] === undefined || sort === undefined) return undefined;
        return `${tableName(table)}\u0000${JSON.stringify([item[partitionKey], sort])}`;
      };
      const left = new Set(keysOf(answer.UnprocessedKeys ?? {}).map(({ table, entry }) => identity(table, entry)));
      const found = new Map<string | undefined, WireItem>();
      let unmatched = false;
      for (const { table, entry } of entries(answer.Responses ?? {})) {
        const id = identity(table, entry);
        if (id === undefined) unmatched = true;
        found.set(id, entry);
      }
      const done = list.map(({ table, entry }, i) => admitted[i]! && !left.has(identity(table, entry)));
      const own = list.map(({ table, entry }, i) =>
        done[i] ? readCost(found.get(identity(table, entry)), modes[i]!) : 0,
      );
      if (!unmatched) return own;
      // A projection left the keys out of what came back: the items cannot be told apart, so each
      // table's total (read from the items themselves) is shared among its keys.
      const total = (table: string) =>
        (answer.Responses?.[table] ?? []).reduce((sum, item) => sum + readCost(item, modeOf(requests[table]!)), 0);
      return costsByTable(
        demands,
        done,
        (table) => total(table),
        done.map(() => false),
        readCost(undefined, 'eventual'),
      );
    },
  };
}

/** A TransactWriteItems or TransactGetItems: all of it admitted, or none (it is refused whole). */
function transaction(kind: Kind, body: Body, demand: MakeDemand): Plan {
  const items = (body as TransactRequest).TransactItems ?? [];
  const puts = items.map((item) => item.Put !== undefined);
  // Every item of a transaction is read or written twice, a ConditionCheck's too ("two underlying reads
  // or writes of every item"), so none costs less than 2 units.
  const demands = items
    .map(actionOf)
    .map((action) =>
      demand(
        action.TableName,
        action.Item ?? action.Key,
        kind === 'read' ? readCost(undefined, 'transactional') : writeUnits(itemSize(action.Item ?? {}), true),
      ),
    );
  return {
    kind,
    shape: 'transaction',
    demands,
    forward: () => body,
    unprocessed: () => ({}),
    costs: (answer, admitted) =>
      kind === 'write'
        ? costsByTable(demands, admitted, (table) => consumed(answer, table), puts, writeUnits(0, true))
        : demands.map((_, i) =>
            admitted[i] ? readCost((answer as TransactGetAnswer).Responses?.[i]?.Item, 'transactional') : 0,
          ),
  };
}
