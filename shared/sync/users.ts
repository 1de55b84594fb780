import { tokenKey, userKey } from '../table/keys.ts';
import type { DesiredUser } from '../write/desired.ts';
import { listUserTokens } from '../write/memberships.ts';
import { readItems } from '../write/reads.ts';
import type { TableRef } from '../write/writer.ts';
import type { Mapping } from './mapping.ts';
import type { SourceConnection } from './source/connection.ts';
import type { Touched } from './touches.ts';

/**
 * Users the log named, read again (docs/contract.md, section 9): a user that is gone leaves every
 * team its item lists, and its tokens go; a user renamed is written (only a user the table already
 * holds: users come in as members); a user the table does not hold who is in the source (new, or
 * deleted and inserted again with the same id) brings the teams that list it and its tokens to be
 * read again, as their rows may have waited for it.
 */
export async function readChangedUsers(
  source: SourceConnection,
  mapping: Mapping,
  table: TableRef,
  touched: Touched,
): Promise<{ users: DesiredUser[]; removedUsers: number[] }> {
  const users: DesiredUser[] = [];
  const removedUsers: number[] = [];
  const ids = [...touched.users];
  if (ids.length === 0) return { users, removedUsers };
  const marks = ids.map(() => '?').join(', ');
  const rows = await source.query(
    `SELECT q.id, q.name FROM (${mapping.queries.users}) q WHERE q.id IN (${marks})`,
    ids,
  );
  const present = new Map(rows.map((row) => [Number(row.id), row.name === null ? undefined : String(row.name)]));
  const stored = new Map(
    (await readItems(table, ids.map(userKey))).map((item) => [Number(String(item.pk).slice('USER#'.length)), item]),
  );
  const arrived: number[] = [];
  for (const id of ids) {
    const item = stored.get(id);
    if (!item) {
      if (present.has(id)) arrived.push(id);
      continue;
    }
    if (present.has(id)) {
      users.push({ id, name: present.get(id) });
      continue;
    }
    removedUsers.push(id);
    for (const teamId of (item.teams as Iterable<number> | undefined) ?? []) touched.team(Number(teamId), 'members');
    const hashes = await listUserTokens(table, id);
    for (const token of await readItems(table, hashes.map(tokenKey))) {
      if (token.sanctum_id !== undefined) touched.tokens.add(Number(token.sanctum_id));
    }
  }
  if (arrived.length > 0) await readArrived(source, mapping, arrived, touched);
  return { users, removedUsers };
}

async function readArrived(source: SourceConnection, mapping: Mapping, ids: number[], touched: Touched) {
  const { queries } = mapping;
  const marks = ids.map(() => '?').join(', ');
  const teams = await source.query(
    `SELECT m.team_id AS id FROM (${queries.team_user}) m WHERE m.user_id IN (${marks})
     UNION SELECT t.id FROM (${queries.teams}) t WHERE t.user_id IN (${marks})`,
    [...ids, ...ids],
  );
  for (const row of teams) touched.team(Number(row.id), 'members');
  for (const row of await source.query(`SELECT t.id FROM (${queries.tokens}) t WHERE t.user_id IN (${marks})`, ids)) {
    touched.tokens.add(Number(row.id));
  }
}
