import { setTimeout as sleep } from 'node:timers/promises';
import type { SourceDatabase, SourceSession } from './source-databases.ts';

/**
 * The Laravel app writing to its own database while something else happens (a migration, the sync at
 * full speed): writers, each on a connection of its own as the application's role, each running the
 * statements `next` gives it one after another, as fast as the server answers (or `paceMs` apart). Every statement is
 * timed and every error kept, so that a test can say that not one of the app's statements failed and
 * none was held up (docs/contract.md, section 9: the app's statements run the same whether the sync
 * runs or not).
 */
export interface AppStatement {
  sql: string;
  params?: unknown[];
}

export interface AppFailure {
  writer: number;
  sql: string;
  message: string;
  /** The server's code: 40P01 is PostgreSQL's deadlock, ER_LOCK_DEADLOCK MySQL's. */
  code?: string;
}

export interface AppWriters {
  /** Statements completed, in all. */
  readonly done: number;
  /** Every statement that failed, in the order they failed. */
  readonly failures: AppFailure[];
  /** The longest a statement took (ms), and which. */
  readonly slowest: { ms: number; sql: string };
  /** Resolves once every writer has completed at least `n` more statements than now. */
  eachDoes(n: number): Promise<void>;
  /** Lets each writer finish the statement it is running, then holds it until resume(). */
  pause(): Promise<void>;
  resume(): void;
  /** Ends the writers (each after its statement) and closes their connections. */
  stop(): Promise<void>;
}

export async function startAppWriters(
  db: SourceDatabase,
  writers: number,
  next: (writer: number, n: number) => AppStatement,
  options: { paceMs?: number } = {},
): Promise<AppWriters> {
  const sessions: SourceSession[] = [];
  for (let i = 0; i < writers; i++) sessions.push(await db.session());
  const counts = sessions.map(() => 0);
  const failures: AppFailure[] = [];
  const slowest = { ms: 0, sql: '' };
  let stopped = false;
  let held: Promise<void> | undefined;
  let release = () => {};
  const idle = sessions.map(() => ({ resolve: () => {} }));
  const parked = new Set<number>();
  const progress = new Set<() => void>();

  const loops = sessions.map(async (session, writer) => {
    while (!stopped) {
      if (held) {
        parked.add(writer);
        idle[writer]!.resolve();
        await held;
        parked.delete(writer);
        continue;
      }
      const statement = next(writer, counts[writer]!);
      const started = performance.now();
      try {
        await session.query(statement.sql, statement.params);
      } catch (error) {
        const { message, code } = error as { message: string; code?: string };
        failures.push({ writer, sql: statement.sql, message, code });
      }
      const ms = performance.now() - started;
      if (ms > slowest.ms) Object.assign(slowest, { ms, sql: statement.sql });
      counts[writer]! += 1;
      for (const check of progress) check();
      // An app's requests come apart (a writer at full speed has none).
      if (options.paceMs) await sleep(options.paceMs);
    }
  });

  return {
    get done() {
      return counts.reduce((a, b) => a + b, 0);
    },
    failures,
    slowest,
    eachDoes: (n) => {
      const target = counts.map((count) => count + n);
      return new Promise<void>((resolve) => {
        const check = () => {
          if (counts.every((count, i) => count >= target[i]!)) {
            progress.delete(check);
            resolve();
          }
        };
        progress.add(check);
      });
    },
    pause: async () => {
      held ??= new Promise<void>((resolve) => (release = resolve));
      await Promise.all(
        sessions.map((_, writer) =>
          parked.has(writer) ? undefined : new Promise<void>((resolve) => (idle[writer] = { resolve })),
        ),
      );
    },
    resume: () => {
      held = undefined;
      release();
    },
    stop: async () => {
      stopped = true;
      held = undefined;
      release();
      await Promise.all(loops);
      await Promise.all(sessions.map((session) => session.close()));
    },
  };
}
