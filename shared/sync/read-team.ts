import { WrittenNumber } from '../domain/decimal.ts';
import { type Cost, SERVERS_LABEL } from '../domain/finance.ts';
import { type AnyRecord, checkRecord, type Collection as RecordCollection } from '../domain/records.ts';
import { servedJson } from '../domain/served-json.ts';
import type { ListResource } from '../table/keys.ts';
import { ListFingerprint } from '../write/fingerprint.ts';
import { financePart } from '../write/finance-part.ts';
import type { DesiredTeam, DesiredUser } from '../write/plan.ts';
import type { EmitItem } from '../write/steps.ts';
import type { Collection, Mapping } from './mapping.ts';
import type { Row, SourceConnection } from './source.ts';
import { sourceTime } from './times.ts';

/**
 * One team of the source, read as the snapshot's rules judge it (docs/contract.md, sections 7 and
 * 9), inside one read-only repeatable-read transaction (source.ts, readConsistently): a team is
 * never built from two states of the source. Its lists are read twice in that transaction: once
 * to judge each row and fingerprint the list, and, if the list differs from what the table holds,
 * once more to hand its items to the writers' step 3; never held whole in memory.
 *
 * A row that breaks a rule keeps the part it belongs to as the table holds it (a bad project keeps
 * the projects; a bad team row keeps the whole team), and is named in one line: the source's
 * collection, the row's id, the field and the rule.
 */

/** The parts of a team a change asks to read: `team` is its identity and members. */
export type SourcePart = 'team' | 'members' | ListResource | 'finance';
export const ALL_SOURCE_PARTS: readonly SourcePart[] = ['team', 'members', 'projects', 'daemons', 'finance'];

/** A row the rules refuse, as one line names it: `projects 1234: name contains a control character`. */
export interface Refusal {
  collection: Collection;
  id: string;
  problem: string;
  /** The team whose part it keeps (0: a token's), and that part. */
  teamId: number;
  part: SourcePart | 'token';
}

export const refusalLine = (r: Refusal) => `${r.collection} ${r.id}: ${r.problem}`;

export interface SourceTeam {
  /** absent: no such team in the source; refused: its own row breaks a rule (the whole team is kept). */
  state: 'present' | 'absent' | 'refused';
  /** The parts that were read and kept every rule. */
  desired?: DesiredTeam;
  /** Its members' users, for their user items (a user whose row breaks a rule is left out). */
  users: DesiredUser[];
  refusals: Refusal[];
  /** Hands the items of a list again, in id order (step 3 of the writers), in the same transaction. */
  items: (emit: EmitItem) => Promise<void>;
}

/** An id as the rules judge it: a number, or the text of one no double holds exactly (WrittenNumber). */
export function sourceId(value: unknown): unknown {
  if (typeof value === 'string' && /^-?\d+$/.test(value)) {
    const number = Number(value);
    return Number.isSafeInteger(number) ? number : new WrittenNumber(value);
  }
  return value;
}

/** A decimal column's text, as the rules judge an amount (exact: a string). */
const amount = (value: unknown) => (typeof value === 'number' ? String(value) : value);

export async function readTeam(
  source: SourceConnection,
  mapping: Mapping,
  teamId: number,
  parts: ReadonlySet<SourcePart>,
  timezone: string,
): Promise<SourceTeam> {
  const from = (collection: Collection) => `(${mapping.queries[collection]})`;
  const refusals: Refusal[] = [];
  const refuse = (part: SourcePart, collection: Collection, id: unknown, problems: string[]) => {
    for (const problem of problems) refusals.push({ collection, id: String(id ?? '?'), problem, teamId, part });
  };
  const check = (
    part: SourcePart,
    collection: Collection,
    record: Record<string, unknown>,
    only?: readonly string[],
  ) => {
    const result = checkRecord(collection as RecordCollection, record, only);
    if (!result.ok) refuse(part, collection, record.id, result.problems);
    return result.ok ? result.record : undefined;
  };
  const none = async () => {};

  const [teamRow] = await source.query(
    `SELECT q.id, q.slug, q.name, q.user_id FROM ${from('teams')} q WHERE q.id = ?`,
    [teamId],
  );
  if (!teamRow) return { state: 'absent', users: [], refusals, items: none };
  const team = check('team', 'teams', { id: sourceId(teamRow.id), slug: teamRow.slug, name: teamRow.name });
  if (!team) return { state: 'refused', users: [], refusals, items: none };
  const identity = { id: teamId, slug: team.slug!, name: team.name! };
  const desired: DesiredTeam = { identity, where: `teams ${teamId}` };
  const users: DesiredUser[] = [];

  if (parts.has('team') || parts.has('members')) {
    const owner = sourceId(teamRow.user_id);
    const rows = await source.query(
      `SELECT u.id, u.name FROM ${from('users')} u
       WHERE u.id IN (SELECT m.user_id FROM ${from('team_user')} m WHERE m.team_id = ?) OR u.id = ? ORDER BY u.id`,
      [teamId, typeof owner === 'number' ? owner : -1],
    );
    const memberIds: number[] = [];
    for (const row of rows) {
      const id = sourceId(row.id);
      if (typeof id !== 'number') continue;
      memberIds.push(id);
      const user = check('members', 'users', { id, name: row.name ?? undefined, teams: [] });
      if (user) users.push({ id, name: user.name });
    }
    desired.memberIds = memberIds;
  }

  const lists: { list: ListResource; sql: string; judge: (row: Row) => AnyRecord | undefined }[] = [];
  if (parts.has('projects')) {
    const clients = new Set<unknown>();
    for (const row of await source.query(`SELECT q.id, q.team_id FROM ${from('clients')} q WHERE q.team_id = ?`, [
      teamId,
    ])) {
      const client = check('projects', 'clients', { id: sourceId(row.id), team_id: sourceId(row.team_id) }, [
        'id',
        'team_id',
      ]);
      if (client) clients.add(client.id);
    }
    lists.push({
      list: 'projects',
      sql: `SELECT q.id, q.team_id, q.client_id, q.name, q.slug, q.created_at FROM ${from('projects')} q
            WHERE q.team_id = ? ORDER BY q.id`,
      judge: (row) => {
        const record = check('projects', 'projects', {
          id: sourceId(row.id),
          team_id: sourceId(row.team_id),
          client_id: row.client_id === null ? null : sourceId(row.client_id),
          name: row.name,
          slug: row.slug,
          created_at: row.created_at === null ? null : sourceTime(String(row.created_at), timezone),
        });
        if (record && record.client_id !== null && !clients.has(record.client_id)) {
          refuse('projects', 'projects', row.id, [`client_id ${record.client_id} is not a client of team ${teamId}`]);
          return undefined;
        }
        return record;
      },
    });
  }
  if (parts.has('daemons')) {
    lists.push({
      list: 'daemons',
      sql: `SELECT d.id, d.environment_id, d.server_id, d.name, d.command, d.username, d.directory, d.processes,
                   s.id AS found_server
            FROM ${from('daemons')} d JOIN ${from('environments')} e ON e.id = d.environment_id
            LEFT JOIN ${from('servers')} s ON s.id = d.server_id
            WHERE e.team_id = ? ORDER BY d.id`,
      judge: (row) => {
        const record = check('daemons', 'daemons', {
          id: sourceId(row.id),
          environment_id: sourceId(row.environment_id),
          server_id: sourceId(row.server_id),
          name: row.name,
          command: row.command,
          username: row.username,
          directory: row.directory,
          processes: sourceId(typeof row.processes === 'number' ? row.processes : String(row.processes)),
        });
        if (record && row.found_server === null) {
          refuse('daemons', 'daemons', row.id, [`server_id ${record.server_id} is not a server`]);
          return undefined;
        }
        return record;
      },
    });
  }

  // Pass 1: each list judged whole and fingerprinted; a list with a refused row is kept.
  for (const { list, sql, judge } of lists) {
    const fingerprint = new ListFingerprint();
    let count = 0;
    let refused = false;
    let previous: unknown;
    await source.stream(sql, [teamId], (row) => {
      const record = judge(row);
      if (record && record.id === previous) {
        refuse(list, list, row.id, ['id is a duplicate']);
        refused = true;
      }
      previous = record?.id;
      if (!record) refused = true;
      else if (!refused) {
        fingerprint.add(servedJson(list, record as Record<string, unknown>));
        count += 1;
      }
    });
    if (!refused) desired[list] = { count, fingerprint: fingerprint.value() };
  }

  if (parts.has('finance')) {
    const costs: Cost[] = [];
    let refused = false;
    const servers = await source.query(
      `SELECT q.id, q.team_id, q.monthly_cost, q.currency FROM ${from('servers')} q WHERE q.team_id = ? ORDER BY q.id`,
      [teamId],
    );
    for (const row of servers) {
      const server = check(
        'finance',
        'servers',
        {
          id: sourceId(row.id),
          team_id: sourceId(row.team_id),
          monthly_cost: amount(row.monthly_cost),
          currency: row.currency,
        },
        ['id', 'team_id', 'monthly_cost', 'currency'],
      );
      if (server) costs.push({ label: SERVERS_LABEL, currency: server.currency!, units: server.monthly_cost! });
      else refused = true;
    }
    const lines = await source.query(
      `SELECT q.id, q.team_id, q.label, q.amount, q.currency FROM ${from('costs')} q WHERE q.team_id = ? ORDER BY q.id`,
      [teamId],
    );
    for (const row of lines) {
      const cost = check('finance', 'costs', {
        id: sourceId(row.id),
        team_id: sourceId(row.team_id),
        label: row.label,
        amount: amount(row.amount),
        currency: row.currency,
      });
      if (cost) costs.push({ label: cost.label!, currency: cost.currency!, units: cost.amount! });
      else refused = true;
    }
    const finance = financePart(identity, costs);
    refuse('finance', 'teams', teamId, finance.problems);
    if (!refused && finance.problems.length === 0)
      desired.finance = { json: finance.json, fingerprint: finance.fingerprint };
  }

  return {
    state: 'present',
    desired,
    users,
    refusals,
    // Pass 2: the same rows (the same transaction), numbered in id order.
    items: async (emit) => {
      for (const { list, sql, judge } of lists) {
        if (!desired[list]) continue;
        let ordinal = 0;
        await source.stream(sql, [teamId], (row) =>
          emit(teamId, list, ++ordinal, servedJson(list, judge(row) as Record<string, unknown>)),
        );
      }
    },
  };
}
