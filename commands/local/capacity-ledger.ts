/**
 * The throughput DynamoDB allows, as token buckets, and what was consumed and refused, for the
 * DynamoDB limiter (dynamodb-limiter.ts). Pure: time is the caller's clock, nothing is sent.
 *
 * Each partition key value has a bucket of write units and one of read units, and each table one of
 * each. A bucket holds at most one second's worth of its rate and refills continuously: DynamoDB
 * documents no burst at the partition level ("burst capacity can't alleviate partition-level
 * throttling", and it is a provisioned table's, kept for unused provisioned capacity), so none is
 * given here; a new table starts full.
 *
 * A demand (a request, or one item of a batch or a transaction) is admitted when its partition's
 * bucket and its table's hold its estimated units (a demand larger than a bucket needs it full) and
 * takes them. Once DynamoDB Local has answered, it is settled at what it really cost: the difference
 * is taken or given back, so a read that turned out larger than estimated leaves its buckets in debt,
 * and the requests after it wait for the refill. That is the order DynamoDB itself can work in: the
 * size a Query reads is known only once it has read it.
 */

export type Kind = 'read' | 'write';
/** Which of a demand's buckets was short. */
export type Limit = 'partition' | 'table';

interface Rates {
  /** Units a second for one partition key value. */
  partitionWrite: number;
  partitionRead: number;
  /** Units a second for a whole table. */
  tableWrite: number;
  tableRead: number;
}

/** Units wanted in one table and, when the request names one, one partition key value. */
export interface Demand {
  table: string;
  /** The partition key value, as stats() names it; undefined for a Scan (every partition). */
  partition?: string;
  units: number;
}

interface Usage {
  writeUnits: number;
  readUnits: number;
  /** Demands refused: whole requests, and items of a batch or a transaction. */
  throttled: number;
}
interface TableStats extends Usage {
  /** Requests answered with a throttling error (the rest of `throttled` were returned unprocessed). */
  throttledRequests: number;
  partitions: Record<string, Usage>;
}
export interface LimiterStats {
  tables: Record<string, TableStats>;
}

/** Float refills land a hair below whole units: 1e-9 of a unit is not a unit short. */
const EPSILON = 1e-9;

class TokenBucket {
  private readonly rate: number;
  private level: number;
  private at: number;

  constructor(rate: number, now: number) {
    this.rate = rate;
    this.level = rate;
    this.at = now;
  }

  /** What it holds now: refilled at `rate` a second since last asked, up to one second's worth. */
  current(now: number): number {
    if (now > this.at) {
      this.level = Math.min(this.rate, this.level + ((now - this.at) / 1_000) * this.rate);
      this.at = now;
    }
    return this.level;
  }

  /** Whether `units` (with `pending` already promised from it) may be taken now. */
  allows(units: number, now: number, pending = 0): boolean {
    return this.current(now) - pending + EPSILON >= Math.min(units, this.rate);
  }

  /** Takes units (a negative number gives them back); the level may go below zero, a debt. */
  take(units: number, now: number): void {
    this.current(now);
    this.level = Math.min(this.rate, this.level - units);
  }
}

const emptyUsage = (): Usage => ({ writeUnits: 0, readUnits: 0, throttled: 0 });

export class CapacityLedger {
  private readonly rates: Rates;
  private readonly clock: () => number;
  private buckets = new Map<string, TokenBucket>();
  private tables = new Map<string, TableStats>();

  constructor(rates: Rates, clock: () => number) {
    this.rates = rates;
    this.clock = clock;
  }

  /**
   * Admits the demands that fit, in order, each taking its units before the next is judged (the
   * items of a BatchWriteItem or BatchGetItem). Returns, per demand, undefined when admitted or the
   * limit that refused it. `atomic`: all are admitted or none (a transaction); then a refusal is
   * reported for each demand that did not fit, and undefined for the others.
   */
  admit(kind: Kind, demands: Demand[], { atomic = false } = {}): (Limit | undefined)[] {
    const now = this.clock();
    const pending = new Map<TokenBucket, number>();
    const refusals = demands.map((demand) => {
      const [partition, table] = this.bucketsOf(kind, demand, now);
      const limit =
        partition && !partition.allows(demand.units, now, pending.get(partition))
          ? 'partition'
          : table.allows(demand.units, now, pending.get(table))
            ? undefined
            : 'table';
      if (limit) return limit;
      if (atomic) {
        for (const bucket of [partition, table])
          if (bucket) pending.set(bucket, (pending.get(bucket) ?? 0) + demand.units);
      } else {
        partition?.take(demand.units, now);
        table.take(demand.units, now);
      }
      return undefined;
    });
    const refused = refusals.some(Boolean);
    if (atomic && !refused) for (const [bucket, units] of pending) bucket.take(units, now);
    demands.forEach((demand, i) => {
      if (refusals[i]) this.count(kind, demand, 0, 1);
    });
    return refusals;
  }

  /**
   * Settles an admitted demand at what it cost (`units`, from DynamoDB Local's answer): its
   * buckets are charged the difference from its estimate, and the units are counted as consumed.
   */
  settle(kind: Kind, demand: Demand, units: number): void {
    const now = this.clock();
    const [partition, table] = this.bucketsOf(kind, demand, now);
    partition?.take(units - demand.units, now);
    table.take(units - demand.units, now);
    this.count(kind, demand, units, 0);
  }

  /** Counts a request answered with a throttling error (its demands were counted by admit). */
  throttledRequest(table: string): void {
    this.tableStats(table).throttledRequests++;
  }

  stats(): LimiterStats {
    return structuredClone({ tables: Object.fromEntries(this.tables) });
  }

  /** Forgets every count and refills every bucket, as for a new table. */
  reset(): void {
    this.buckets.clear();
    this.tables.clear();
  }

  private bucketsOf(kind: Kind, { table, partition }: Demand, now: number) {
    const bucket = (scope: string, rate: number) => {
      const key = `${kind}\u0000${table}\u0000${scope}`;
      let found = this.buckets.get(key);
      if (!found) {
        found = new TokenBucket(rate, now);
        this.buckets.set(key, found);
      }
      return found;
    };
    const write = kind === 'write';
    const ofPartition =
      partition === undefined
        ? undefined
        : bucket(`p:${partition}`, write ? this.rates.partitionWrite : this.rates.partitionRead);
    return [ofPartition, bucket('t', write ? this.rates.tableWrite : this.rates.tableRead)] as const;
  }

  private tableStats(table: string): TableStats {
    let stats = this.tables.get(table);
    if (!stats) {
      stats = { ...emptyUsage(), throttledRequests: 0, partitions: {} };
      this.tables.set(table, stats);
    }
    return stats;
  }

  private count(kind: Kind, { table, partition }: Demand, units: number, throttled: number): void {
    const tableStats = this.tableStats(table);
    const usages: Usage[] = [tableStats];
    if (partition !== undefined) {
      tableStats.partitions[partition] ??= emptyUsage();
      usages.push(tableStats.partitions[partition]);
    }
    for (const usage of usages) {
      if (kind === 'write') usage.writeUnits += units;
      else usage.readUnits += units;
      usage.throttled += throttled;
    }
  }
}
