import type { SourceDatabase } from '../test/support/source-databases.ts';
import { ADD_MEMBER, ADD_PROJECT, outsider, outsiderToken, TEAM, teamApi, withOutsiders } from './one-team.ts';
import {
  benchTeams,
  ENGINES,
  type PartContext,
  projectId,
  secretOf,
  servedAfter,
  tokenId,
  type Use,
  usageBetween,
  usageByName,
  userId,
  withDatabase,
  withSync,
} from './sources.ts';

/**
 * From commit to answer (docs/performance.md): seconds from a commit to the first answer that shows
 * it, per kind of change, on both engines, with `npm run sync` reading the database's log in a process
 * of its own against DynamoDB Local.
 */
export interface LatencyRow {
  engine: string;
  change: string;
  seconds: number[];
}

/** What each process used while an engine's commits were timed (seconds: CPU, and waiting for a CPU). */
export interface Usage {
  engine: string;
  seconds: number;
  use: Map<string, Use>;
}

/** A kind of change: its statement (round i), and whether an answer shows it yet. */
type Kind = [
  name: string,
  commit: (db: SourceDatabase, i: number) => Promise<unknown>,
  served: (i: number) => Promise<boolean>,
];

/** Seconds from each commit to the first answer that shows it, `rounds` of each kind, on each engine. */
export async function measureLatencies(ctx: PartContext): Promise<{ rows: LatencyRow[]; usage: Usage[] }> {
  const rounds = ctx.quick ? 2 : 15;
  const projects = 2_000;
  const rows: LatencyRow[] = [];
  const usage: Usage[] = [];
  for (const engine of ENGINES) {
    const data = withOutsiders(benchTeams({ teams: 1, projects, daemons: 300, tokens: rounds + 1 }), rounds);
    await withDatabase(engine, data, async (db, version) => {
      await withSync(db, ctx.endpoint, async (_, table) => {
        const { get, total, nameAt } = teamApi(table);
        await servedAfter(performance.now(), async () => (await total()) === projects);
        const statusOf = async (token: string) => (await get('projects?per_page=1', token)).status;
        const kinds: Kind[] = [
          [
            'a project inserted',
            (db, i) => db.query(ADD_PROJECT, [projectId(TEAM, projects - 1 + i), TEAM, 'New']),
            async (i) => (await total()) === projects + i,
          ],
          [
            'a project renamed (raw UPDATE)',
            (db, i) => db.query('UPDATE projects SET name = $1 WHERE id = $2', [`Renamed ${i}`, projectId(TEAM, 999)]),
            async (i) => (await nameAt(1_000)) === `Renamed ${i}`,
          ],
          [
            'a project deleted',
            (db, i) => db.query('DELETE FROM projects WHERE id = $1', [projectId(TEAM, projects - 1 + i)]),
            async (i) => (await total()) === projects + rounds - i,
          ],
          [
            'a daemon changed',
            (db, i) => db.query('UPDATE daemons SET processes = $1 WHERE id = $2', [i + 1, TEAM * 10_000_000 + 1]),
            async (i) => (await get('daemons?per_page=1')).body.data[0].processes === i + 1,
          ],
          [
            'a cost line changed',
            (db, i) => db.query('UPDATE costs SET amount = $1 WHERE team_id = $2', [10 + i, TEAM]),
            async (i) => (await get('finances')).body.data[0].amount === 10 + i,
          ],
          [
            'a member added',
            (db, i) => db.query(ADD_MEMBER, [TEAM, outsider(i - 1)]),
            async (i) => (await statusOf(outsiderToken(i - 1))) === 200,
          ],
          [
            'a member removed',
            (db, i) => db.query('DELETE FROM team_user WHERE team_id = $1 AND user_id = $2', [TEAM, outsider(i - 1)]),
            async (i) => (await statusOf(outsiderToken(i - 1))) === 404,
          ],
          [
            'a token revoked (Sanctum deletes it)',
            (db, i) => db.query('DELETE FROM personal_access_tokens WHERE id = $1', [tokenId(userId(TEAM, 0), i)]),
            async (i) => (await statusOf(secretOf(tokenId(userId(TEAM, 0), i)))) === 401,
          ],
        ];
        ctx.say(`${version}: ${rounds} commits of each kind...`);
        const [before, started] = [usageByName(), performance.now()];
        for (const [change, commit, served] of kinds) {
          const seconds: number[] = [];
          for (let i = 1; i <= rounds; i++) {
            await commit(db, i);
            seconds.push(await servedAfter(performance.now(), () => served(i)));
          }
          rows.push({ engine: version, change, seconds });
        }
        const elapsed = (performance.now() - started) / 1000;
        usage.push({ engine: version, seconds: elapsed, use: usageBetween(before, usageByName(), 1) });
      });
    });
  }
  return { rows, usage };
}
