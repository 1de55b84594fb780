import { createHash } from 'node:crypto';
import type { SourceDatabase, SourceSession } from './source-databases.ts';

/**
 * Writes a snapshot-shaped document (contract section 7, as the factories in snapshots.ts make it)
 * into a source database's Laravel tables, as the Laravel service would have stored it, in one
 * transaction. Nothing is validated: a test may store what the contract calls a bad row (a control
 * character in a name, an amount with 5 decimals) to see what the sync makes of it.
 *
 * - teams: `user_id` (the owner, optional) and `personal_team` (default false) as Jetstream has them.
 * - users: `teams` lists memberships, stored as team_user rows (role 'editor'), except the team the
 *   user owns: Jetstream keeps its owner in teams.user_id alone. `email` defaults to user<id>@example.test.
 * - tokens: as Sanctum stores them: `token` is the SHA-256 hex of the secret (given as `token_sha256`,
 *   or as the plain `token`, hashed here), tokenable_type 'App\Models\User', abilities a JSON list.
 * - costs: `id` is optional (the table numbers them).
 * - Times (a project's created_at, a token's expires_at) may be any ISO 8601 time; they are stored as
 *   Laravel stores them, in UTC in a column without zone, to the second. Every other created_at and
 *   updated_at is SEEDED_AT.
 */
export interface SourceSnapshot {
  teams?: { id: number; slug: string; name: string; user_id?: number | null; personal_team?: boolean }[];
  users?: { id: number; name?: string; email?: string; teams?: number[] }[];
  tokens?: {
    id?: number;
    user_id: number;
    token?: string;
    token_sha256?: string;
    name?: string;
    abilities?: string[] | null;
    expires_at?: string | null;
  }[];
  environments?: { id: number; team_id: number; name: string }[];
  servers?: { id: number; team_id: number; name: string; monthly_cost: string | number; currency: string }[];
  clients?: { id: number; team_id: number; name: string }[];
  projects?: {
    id: number;
    team_id: number;
    client_id?: number | null;
    name: string;
    slug: string;
    created_at?: string;
  }[];
  daemons?: {
    id: number;
    environment_id: number;
    server_id: number;
    name: string;
    command: string;
    username: string;
    directory: string;
    processes: number;
  }[];
  costs?: { id?: number; team_id: number; label: string; amount: string | number; currency: string }[];
}

/** The created_at and updated_at of every seeded row whose snapshot record gives none. */
export const SEEDED_AT = '2026-01-01 00:00:00';

/** Sanctum's tokenable_type for a user's token. */
export const USER_MODEL = 'App\\Models\\User';

/** A password hash of the shape Laravel's bcrypt writes (the sync never reads it). */
const PASSWORD = `$2y$12$${'x'.repeat(53)}`;

type Value = string | number | boolean | null;

/** Inserts the document in one transaction as `as` (default: the application role, which Laravel writes as). */
export async function seedSource(
  db: SourceDatabase,
  snapshot: SourceSnapshot,
  options: { as?: 'app' | 'admin' } = {},
): Promise<void> {
  const tables = seedRows(snapshot);
  const session = await (options.as === 'admin' ? db.adminSession() : db.session());
  try {
    await session.query(db.engine === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
    for (const [table, rows] of tables) {
      const numbered = rows.filter((row) => row.id !== undefined);
      await insert(session, db.engine, table, numbered);
      // Ids given explicitly leave a serial's sequence behind (MySQL's auto_increment follows them):
      // move it past them, so that the rows without id here, and a later insert by Eloquent, follow.
      if (db.engine === 'postgres' && numbered.length > 0)
        await session.query(
          `SELECT setval(pg_get_serial_sequence('"${table}"', 'id'), (SELECT max(id) FROM "${table}"))`,
        );
      await insert(
        session,
        db.engine,
        table,
        rows.filter((row) => row.id === undefined),
      );
    }
    await session.query('COMMIT');
  } catch (error) {
    await session.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await session.close();
  }
}

/** The rows of each table, in an order that satisfies the foreign keys. */
export function seedRows(snapshot: SourceSnapshot): [string, Record<string, Value>[]][] {
  const stamps = { created_at: SEEDED_AT, updated_at: SEEDED_AT };
  const owners = new Map((snapshot.teams ?? []).map((team) => [team.id, team.user_id ?? null]));
  return [
    [
      'users',
      (snapshot.users ?? []).map((user) => ({
        id: user.id,
        name: user.name ?? `User ${user.id}`,
        email: user.email ?? `user${user.id}@example.test`,
        password: PASSWORD,
        ...stamps,
      })),
    ],
    [
      'teams',
      (snapshot.teams ?? []).map((team) => ({
        id: team.id,
        user_id: team.user_id ?? null,
        name: team.name,
        slug: team.slug,
        personal_team: team.personal_team ?? false,
        ...stamps,
      })),
    ],
    [
      'team_user',
      (snapshot.users ?? []).flatMap((user) =>
        (user.teams ?? [])
          .filter((teamId) => owners.get(teamId) !== user.id)
          .map((teamId) => ({ team_id: teamId, user_id: user.id, role: 'editor', ...stamps })),
      ),
    ],
    [
      'personal_access_tokens',
      (snapshot.tokens ?? []).map((token) => ({
        ...(token.id === undefined ? {} : { id: token.id }),
        tokenable_type: USER_MODEL,
        tokenable_id: token.user_id,
        name: token.name ?? 'token',
        token: token.token_sha256 ?? sha256(token.token ?? ''),
        abilities: token.abilities === null ? null : JSON.stringify(token.abilities ?? ['*']),
        expires_at: token.expires_at ? utc(token.expires_at) : null,
        ...stamps,
      })),
    ],
    ['environments', (snapshot.environments ?? []).map((row) => ({ ...row, ...stamps }))],
    ['servers', (snapshot.servers ?? []).map((row) => ({ ...row, ...stamps }))],
    ['clients', (snapshot.clients ?? []).map((row) => ({ ...row, ...stamps }))],
    [
      'projects',
      (snapshot.projects ?? []).map(({ created_at, ...row }) => ({
        ...row,
        client_id: row.client_id ?? null,
        created_at: created_at ? utc(created_at) : SEEDED_AT,
        updated_at: SEEDED_AT,
      })),
    ],
    ['daemons', (snapshot.daemons ?? []).map((row) => ({ ...row, ...stamps }))],
    ['costs', (snapshot.costs ?? []).map((row) => ({ ...row, ...stamps }))],
  ];
}

export function sha256(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** An ISO 8601 time as Laravel writes it into a timestamp column: UTC, 'YYYY-MM-DD HH:MM:SS', the fraction dropped. */
export function utc(iso: string): string {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) throw new Error(`not an ISO 8601 time: ${iso}`);
  return time.toISOString().slice(0, 19).replace('T', ' ');
}

async function insert(session: SourceSession, engine: string, table: string, rows: Record<string, Value>[]) {
  const quote = (name: string) => (engine === 'postgres' ? `"${name}"` : `\`${name}\``);
  // Rows of one shape per statement, a few hundred at a time.
  for (const [shape, group] of Map.groupBy(rows, (row) => Object.keys(row).join(','))) {
    const columns = shape.split(',');
    for (let start = 0; start < group.length; start += 500) {
      const chunk = group.slice(start, start + 500);
      const params = chunk.flatMap((row) => columns.map((column) => row[column] ?? null));
      const tuples = chunk.map((_, r) => `(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
      await session.query(
        `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES ${tuples.join(', ')}`,
        params,
      );
    }
  }
}
