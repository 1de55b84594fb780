import { PGlite } from '@electric-sql/pglite';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { freshTable, importDocument } from '../support/dynamodb.ts';
import { projects, team, user } from '../support/snapshots.ts';
import { createSourceDatabase, type SourceDatabase, sourceServer } from '../support/source-databases.ts';

/**
 * docs/migrating.md, tested as written: its SQL (read from the page) exports Sanctum's
 * personal_access_tokens from PostgreSQL itself (PGlite: PostgreSQL compiled to WebAssembly) into
 * the snapshot's `tokens`; the snapshot imports, and the bearer values a Laravel client holds get
 * the answers Laravel gave them. The MySQL query runs on the suite's MariaDB, through the mariadb
 * client, as the guide runs it.
 */
const GUIDE = readFileSync(new URL('../../docs/migrating.md', import.meta.url), 'utf8');
const sqlOf = (dialect: string) => {
  const block = new RegExp(`\`\`\`sql ${dialect}\\n([\\s\\S]*?)\\n\`\`\``).exec(GUIDE);
  if (!block) throw new Error(`docs/migrating.md has no \`\`\`sql ${dialect} block`);
  return block[1]!;
};

/** Sanctum's migration (laravel/sanctum, database/migrations/…_create_personal_access_tokens_table.php), as Laravel makes it in each database. */
const TABLE = {
  postgresql: `CREATE TABLE personal_access_tokens (
    id bigserial PRIMARY KEY, tokenable_type varchar(255) NOT NULL, tokenable_id bigint NOT NULL, name varchar(255) NOT NULL,
    token varchar(64) NOT NULL UNIQUE, abilities text NULL, last_used_at timestamp(0) NULL, expires_at timestamp(0) NULL,
    created_at timestamp(0) NULL, updated_at timestamp(0) NULL)`,
  mysql: `CREATE TABLE personal_access_tokens (
    id bigint unsigned AUTO_INCREMENT PRIMARY KEY, tokenable_type varchar(255) NOT NULL, tokenable_id bigint unsigned NOT NULL,
    name varchar(255) NOT NULL, token varchar(64) NOT NULL UNIQUE, abilities text NULL, last_used_at timestamp NULL,
    expires_at timestamp NULL, created_at timestamp NULL, updated_at timestamp NULL)`,
};

/** Str::random(40): 40 letters and digits, here drawn from a fixed seed. */
const random40 = (seed: string) =>
  createHash('sha512')
    .update(seed)
    .digest('base64')
    .replace(/[^A-Za-z0-9]/g, '')
    .slice(0, 40);
/** Sanctum 3.3 and later append the entropy's CRC32 (hex) to the 40 characters; earlier versions do not. */
const withCrc = (entropy: string) => entropy + crc32(entropy).toString(16).padStart(8, '0');
const sha256 = (secret: string) => createHash('sha256').update(secret).digest('hex');

const USER = 'App\\Models\\User';
/** Rows in id order, as createToken writes them: the sha256 of the plain text, which the client holds as `<id>|<plain>`. */
const ROWS = [
  { type: USER, user: 10, name: 'ci', plain: withCrc(random40('ci')), abilities: '["*"]', expires: null },
  { type: USER, user: 11, name: 'other team', plain: random40('other'), abilities: '["projects:read"]', expires: null },
  { type: 'App\\Models\\Team', user: 1, name: 'a team', plain: random40('team'), abilities: '["*"]', expires: null },
  {
    type: USER,
    user: 10,
    name: 'expired',
    plain: random40('expired'),
    abilities: '["*"]',
    expires: '2020-01-01 00:00:00',
  },
  {
    type: USER,
    user: 10,
    name: 'rocket',
    plain: random40('rocket'),
    abilities: '["projects:read","servers:write"]',
    expires: '2037-06-30 12:00:00',
  },
  { type: USER, user: 10, name: '', plain: random40('unnamed'), abilities: null, expires: null },
];
const CREATED_AT = '2026-01-01 10:00:00';
const bearer = (id: number) => `${id}|${ROWS[id - 1]!.plain}`;
const secret = (id: number) => ROWS[id - 1]!.plain;

const insertSql = (quote: (s: string) => string) =>
  ROWS.map(
    (row) =>
      `INSERT INTO personal_access_tokens (tokenable_type, tokenable_id, name, token, abilities, expires_at, created_at, updated_at) VALUES (${[
        quote(row.type),
        row.user,
        quote(row.name),
        quote(sha256(row.plain)),
        row.abilities === null ? 'NULL' : quote(row.abilities),
        row.expires === null ? 'NULL' : quote(row.expires),
        quote(CREATED_AT),
        quote(CREATED_AT),
      ].join(', ')});`,
  ).join('\n');

/** The export the guide's queries must print: the users' tokens, by hash, with ids. */
const EXPECTED = [
  { id: 1, user_id: 10, name: 'ci', token_sha256: sha256(secret(1)), abilities: ['*'] },
  { id: 2, user_id: 11, name: 'other team', token_sha256: sha256(secret(2)), abilities: ['projects:read'] },
  {
    id: 4,
    user_id: 10,
    name: 'expired',
    token_sha256: sha256(secret(4)),
    abilities: ['*'],
    expires_at: '2020-01-01T00:00:00+00:00',
  },
  {
    id: 5,
    user_id: 10,
    name: 'rocket',
    token_sha256: sha256(secret(5)),
    abilities: ['projects:read', 'servers:write'],
    expires_at: '2037-06-30T12:00:00+00:00',
  },
  { id: 6, user_id: 10, token_sha256: sha256(secret(6)), abilities: [] },
];

/** EXPECTED's expiries with Sanctum's `expiration` at 60 minutes: the earlier of expires_at and an hour after creation. */
const HOUR_AFTER_CREATION = '2026-01-01T11:00:00+00:00';
const EXPIRES_WITH_AN_HOUR = [
  HOUR_AFTER_CREATION,
  HOUR_AFTER_CREATION,
  '2020-01-01T00:00:00+00:00',
  HOUR_AFTER_CREATION,
  HOUR_AFTER_CREATION,
];

/** One PostgreSQL for the file (starting one takes seconds): the table, with the rows. */
let postgres: Promise<PGlite> | undefined;
afterAll(async () => (await postgres)?.close());

async function exportFromPostgres(query = sqlOf('postgresql')): Promise<unknown> {
  postgres ??= (async () => {
    const db = await PGlite.create();
    await db.exec(TABLE.postgresql);
    await db.exec(insertSql((s) => `'${s.replaceAll("'", "''")}'`));
    return db;
  })();
  const { rows } = await (await postgres).query<{ tokens: unknown }>(query);
  const tokens = rows[0]!.tokens;
  return typeof tokens === 'string' ? JSON.parse(tokens) : tokens;
}

describe("the guide's PostgreSQL query", () => {
  it("exports the users' tokens by their hash, with ids, names, abilities and expiry", async () => {
    expect(await exportFromPostgres()).toEqual(EXPECTED);
  }, 120_000);

  it("gives each token the earlier of expires_at and Sanctum's expiration, when that is set", async () => {
    const query = sqlOf('postgresql').replace('NULL::integer AS expiration_minutes', '60 AS expiration_minutes');
    const tokens = (await exportFromPostgres(query)) as { expires_at?: string }[];
    expect(tokens.map((t) => t.expires_at)).toEqual(EXPIRES_WITH_AN_HOUR);
  }, 120_000);
});

describe('a snapshot with the exported tokens', () => {
  let api: TestApi;

  beforeAll(async () => {
    const table = await freshTable();
    await importDocument(table, {
      teams: [team(1, 'acme'), team(2, 'other')],
      users: [user(10, [1]), user(11, [2])],
      tokens: await exportFromPostgres(),
      projects: projects(1, 3),
    });
    api = await startApi(table);
  }, 120_000);

  afterAll(() => api?.close());

  const UNAUTHENTICATED = { status: 401, text: '{"message":"Unauthenticated."}', authenticate: 'Bearer' };

  it.each([
    ['<id>|<secret> of a token Sanctum 2 made', () => bearer(5)],
    ['the secret alone', () => secret(5)],
    ['<id>|<secret> of a token Sanctum 3.3+ made (CRC32 suffix)', () => bearer(1)],
  ])("answers %s as Laravel did: 200 with the team's projects", async (_, value) => {
    const r = await api.get('/api/acme/projects', { token: value() });
    expect(r.status).toBe(200);
    expect(r.body.data.map((p: { id: number }) => p.id)).toEqual([100_001, 100_002, 100_003]);
  });

  it.each([
    ['a wrong id', () => `6|${secret(5)}`],
    ['a wrong secret', () => `5|${secret(5).slice(0, -1)}x`],
    ['a malformed id', () => `5a|${secret(5)}`],
    ['an expired token', () => bearer(4)],
    ['a token of a model that is not a user (not exported)', () => bearer(3)],
  ])("refuses %s with the contract's 401", async (_, value) => {
    const r = await api.get('/api/acme/projects', { token: value() });
    expect({ status: r.status, text: r.text, authenticate: r.headers.get('www-authenticate') }).toEqual(
      UNAUTHENTICATED,
    );
  });

  it("keeps Laravel's abilities and memberships: 403 without the ability, 404 for another team", async () => {
    expect((await api.get('/api/acme/finances', { token: bearer(5) })).body.missing_permissions).toEqual([
      'finances:read',
    ]);
    expect((await api.get('/api/acme/projects', { token: bearer(6) })).status).toBe(403);
    expect((await api.get('/api/acme/projects', { token: bearer(2) })).status).toBe(404);
  });
});

describe.skipIf(sourceServer('mysql').state === 'missing')("the guide's MySQL query, on the suite's MariaDB", () => {
  let db: SourceDatabase;
  beforeAll(async () => {
    db = await createSourceDatabase('mysql', { schema: false });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('exports the same tokens from MariaDB, with the mariadb client as the guide runs it', () => {
    const url = new URL(db.url);
    const client = ['-h', url.hostname, '-P', url.port, '-u', db.user, `-p${db.password}`, db.database];
    const run = (sql: string) => {
      const result = spawnSync('mariadb', [...client, '--batch', '--raw', '--skip-column-names'], {
        input: sql,
        encoding: 'utf8',
        timeout: 60_000,
      });
      if (result.status !== 0) throw new Error(`mariadb failed: ${result.stderr}`);
      return result.stdout;
    };
    const quote = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
    run(`DROP TABLE IF EXISTS personal_access_tokens; ${TABLE.mysql}; SET time_zone = '+00:00';\n${insertSql(quote)}`);
    const exported = (query: string) => JSON.parse(run(query).trim().split('\n').at(-1)!) as { expires_at?: string }[];
    expect(exported(sqlOf('mysql'))).toEqual(EXPECTED);
    const withExpiration = exported(
      sqlOf('mysql').replace('SET @expiration_minutes = NULL;', 'SET @expiration_minutes = 60;'),
    );
    expect(withExpiration.map((t) => t.expires_at)).toEqual(EXPIRES_WITH_AN_HOUR);
  });
});
