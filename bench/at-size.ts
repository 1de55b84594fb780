import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoDbLimiter } from '../commands/local/dynamodb-limiter.ts';
import { freshTable, type TestTable } from '../test/support/dynamodb.ts';
import type { LatencyRow } from './commit-to-answer.ts';
import { importSnapshot } from './data.ts';
import { ADD_PROJECT, editing, TEAM, teamApi } from './one-team.ts';
import { benchTeams, type PartContext, projectId, servedAfter, withDatabase, withSync } from './sources.ts';

/**
 * A team of 100,000 projects through the limiter (DynamoDB's limits): seconds from a commit to the
 * answer by the sync (PostgreSQL), and from the import's start to the answer by the import (`npm run
 * import` of the whole snapshot with the change), for a project renamed, one added, one removed.
 */
type Served = (table: TestTable, i: number) => Promise<boolean>;

export async function measureAtSize(ctx: PartContext): Promise<{ rows: LatencyRow[]; firstLoads: string[] }> {
  const size = ctx.quick ? 2_000 : 100_000;
  const rounds = ctx.quick ? 1 : 5;
  const label = size.toLocaleString('en');
  const limiter = await startDynamoDbLimiter({ target: ctx.endpoint });
  const data = benchTeams({ teams: 1, projects: size });
  const file = join(tmpdir(), `bench-size-${process.pid}.json`);
  const rows: LatencyRow[] = [];
  const firstLoads: string[] = [];
  const since = (started: number) => `${((performance.now() - started) / 1000).toFixed(0)} s`;
  try {
    await withDatabase('postgres', data, async (db, version) => {
      let started = performance.now();
      ctx.say(`the sync's first full pass of a team of ${label} projects, through the limiter...`);
      await withSync(db, limiter.endpoint, async (_, synced) => {
        await servedAfter(started, async () => (await teamApi(synced).total()) === size, 1_800);
        firstLoads.push(`the sync's first full pass ${since(started)}`);
        ctx.say('the import of the same team, through the limiter...');
        writeFileSync(file, JSON.stringify(data));
        const imported = await freshTable(limiter.endpoint);
        started = performance.now();
        await importSnapshot(file, imported);
        firstLoads.push(`the import ${since(started)}`);
        const middle = Math.floor(size / 2);
        const edit = editing(data);
        const changes: [string, (i: number) => [string, unknown[]], (i: number) => void, Served][] = [
          [
            'a project renamed',
            (i) => ['UPDATE projects SET name = $1 WHERE id = $2', [`Renamed ${i}`, projectId(TEAM, middle)]],
            (i) => edit.rename(projectId(TEAM, middle), `Renamed ${i}`),
            async (table, i) => (await teamApi(table).nameAt(middle + 1)) === `Renamed ${i}`,
          ],
          [
            'a project added in the middle',
            (i) => [ADD_PROJECT, [projectId(TEAM, middle + i) + 1, TEAM, `Added ${i}`]],
            (i) => edit.add(projectId(TEAM, middle + i) + 1, `Added ${i}`),
            async (table, i) => (await teamApi(table).total()) === size + i,
          ],
          [
            'a project removed',
            (i) => ['DELETE FROM projects WHERE id = $1', [projectId(TEAM, Math.floor(size / 4) + i)]],
            (i) => edit.remove(projectId(TEAM, Math.floor(size / 4) + i)),
            async (table, i) => (await teamApi(table).total()) === size + rounds - i,
          ],
        ];
        for (const [change, statement, edited, served] of changes) {
          ctx.say(`${label} projects: ${change}, ${rounds} times by the sync and by the import...`);
          const [bySync, byImport] = [[] as number[], [] as number[]];
          for (let i = 1; i <= rounds; i++) {
            await db.query(...statement(i));
            bySync.push(await servedAfter(performance.now(), () => served(synced, i)));
            edited(i);
            writeFileSync(file, JSON.stringify(data));
            const from = performance.now();
            await importSnapshot(file, imported);
            byImport.push(await servedAfter(from, () => served(imported, i)));
          }
          rows.push({ engine: `${version}, the sync`, change, seconds: bySync });
          rows.push({ engine: 'the import (`npm run import`)', change, seconds: byImport });
        }
      });
    });
    const throttled = Object.entries(limiter.stats().tables).map(([table, s]) => `${table}: ${s.throttled}`);
    ctx.say(`the limiter's throttled demands: ${throttled.join('; ')}`);
    return { rows, firstLoads };
  } finally {
    rmSync(file, { force: true });
    await limiter.stop();
  }
}
