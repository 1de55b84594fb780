import type { TestTable } from '../test/support/dynamodb.ts';
import type { SourceSnapshot } from '../test/support/source-seed.ts';
import { tableApi } from '../test/support/table-api.ts';
import { secretOf, slugOf, tokenId, userId } from './sources.ts';

/**
 * The team the parts on one change measure (commit-to-answer.ts, at-size.ts, write-size.ts): team 1,
 * its owner's token, users of no team to make members, the statements that change it, the same
 * changes made to its snapshot for the import, and the API's answers about it.
 */
export const TEAM = 1;
const OWNER_TOKEN = secretOf(tokenId(userId(TEAM, 0)));
export const outsider = (i: number) => 9_000 + i;
export const outsiderToken = (i: number) => secretOf(tokenId(outsider(i)));

export const ADD_PROJECT =
  'INSERT INTO projects (id, team_id, name, slug, created_at, updated_at) ' +
  'VALUES ($1, $2, $3, $3, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)';
export const ADD_MEMBER =
  'INSERT INTO team_user (team_id, user_id, role, created_at, updated_at) ' +
  "VALUES ($1, $2, 'editor', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)";

/** `count` users of no team added to the snapshot, each with a token of every ability. */
export function withOutsiders(data: SourceSnapshot, count: number): SourceSnapshot {
  for (let i = 0; i < count; i++) {
    data.users!.push({ id: outsider(i), teams: [] });
    data.tokens!.push({ id: tokenId(outsider(i)), user_id: outsider(i), token: outsiderToken(i), abilities: ['*'] });
  }
  return data;
}

/** The same changes made to a snapshot, for the import (projects kept in id order). */
export function editing(data: SourceSnapshot) {
  const projects = data.projects!;
  const at = (id: number) => {
    const index = projects.findIndex((p) => p.id >= id);
    return index < 0 ? projects.length : index;
  };
  return {
    rename: (id: number, name: string) => {
      projects[at(id)]!.name = name;
    },
    add: (id: number, name: string) =>
      void projects.splice(at(id), 0, { id, team_id: TEAM, name, slug: name, created_at: '2026-01-02T03:04:05Z' }),
    remove: (id: number) => void projects.splice(at(id), 1),
  };
}

const readers = new Map<string, ReturnType<typeof tableApi>>();

/** The API's answers about the team from a table: its handlers in this process, one set per table, warm. */
export function teamApi(table: TestTable) {
  const api = readers.get(table.tableName) ?? readers.set(table.tableName, tableApi(table)).get(table.tableName)!;
  const get = (route: string, token = OWNER_TOKEN) => api.get(`/api/${slugOf(TEAM)}/${route}`, { token });
  return {
    get,
    /** The team's count of projects. */
    total: async (): Promise<number | undefined> => (await get('projects?per_page=1')).body.meta?.total,
    /** The name of the project at a position (from 1). */
    nameAt: async (position: number): Promise<string | undefined> =>
      (await get(`projects?per_page=1&page=${position}`)).body.data?.[0]?.name,
  };
}
