import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { progressDisplay } from '../commands/cli/progress.ts';
import { importSnapshot } from '../commands/import/importer.ts';
import { readSnapshotFile } from '../commands/import/snapshot-file.ts';
import { startDynamoDbLimiter } from '../commands/local/dynamodb-limiter.ts';
import { defaultMapping } from '../shared/sync/mapping.ts';
import { runSync } from '../shared/sync/run.ts';
import { parseSourceUrl } from '../shared/sync/source/url.ts';
import { freshTable } from '../test/support/dynamodb.ts';
import { countedTable, type WriteCount } from '../test/support/writes.ts';
import { benchTeams, ENGINES, type PartContext, withDatabase } from './sources.ts';

/**
 * A first load through the limiter (DynamoDB's limits): 1,000 teams of 100 projects and 100,000
 * tokens, imported from a snapshot (pass 1 and pass 2, as `npm run import` runs them) and loaded by
 * the sync's first full pass from each engine, each showing its progress as its command does.
 */
export interface FirstLoadRow {
  what: string;
  seconds: number;
  tokens: number;
  count: WriteCount;
  units: number;
  throttled: number;
}

export async function measureFirstLoad(ctx: PartContext): Promise<FirstLoadRow[]> {
  const data = benchTeams({ teams: ctx.quick ? 20 : 1_000, projects: 100, members: 10, tokens: 10 });
  const tokens = data.tokens!.length;
  const limiter = await startDynamoDbLimiter({ target: ctx.endpoint });
  const rows: FirstLoadRow[] = [];
  const load = async (what: string, write: (table: ReturnType<typeof countedTable>['table']) => Promise<unknown>) => {
    const counted = countedTable(await freshTable(limiter.endpoint));
    ctx.say(`the first load by ${what}...`);
    const started = performance.now();
    const count = await counted.count(() => write(counted.table));
    const stats = limiter.stats().tables[counted.table.tableName]!;
    rows.push({
      what,
      seconds: (performance.now() - started) / 1000,
      tokens,
      count,
      units: stats.writeUnits,
      throttled: stats.throttled,
    });
  };
  const file = join(tmpdir(), `bench-first-load-${process.pid}.json`);
  try {
    writeFileSync(file, JSON.stringify(data));
    await load('the import', async (table) => {
      const progress = progressDisplay();
      const snapshot = await readSnapshotFile(file, progress);
      if (!snapshot) throw new Error('the snapshot is invalid');
      await importSnapshot(table.doc, table.tableName, snapshot, { onProgress: progress.importing });
      progress.stop();
    });
    for (const engine of ENGINES) {
      await withDatabase(engine, data, (db, version) =>
        load(`the sync's first full pass (${version})`, async (table) => {
          const progress = progressDisplay();
          await runSync(
            {
              source: parseSourceUrl(db.syncUrl),
              mapping: (shape) => defaultMapping(engine, shape),
              timezone: 'UTC',
              table: { doc: table.doc, tableName: table.tableName },
              say: ctx.say,
              metric: () => {},
            },
            { once: true, onProgress: progress.passing },
          );
          progress.stop();
        }),
      );
    }
    return rows;
  } finally {
    await rm(file, { force: true });
    await limiter.stop();
  }
}
