import { WrittenNumber } from '../../domain/decimal.ts';
import { type Cost, SERVERS_LABEL } from '../../domain/finance.ts';
import { problemOf } from '../../domain/problems.ts';
import { type AnyRecord, checkRecord, type Collection as RecordCollection } from '../../domain/records.ts';
import { servedJson } from '../../domain/served-json.ts';
import type { ListResource } from '../../table/keys.ts';
import type { DesiredList, DesiredTeam, DesiredUser } from '../../write/desired.ts';
import { financePart } from '../../write/finance-part.ts';
import { ListFingerprint } from '../../write/fingerprint.ts';
import type { ListEdit } from '../../write/list-edits.ts';
import type { ChangePart, Collection, Mapping } from '../mapping.ts';
import { type Refusal, rowWhere } from '../refusals.ts';
import type { Row, SourceConnection } from '../source/connection.ts';
import { sourceTime } from './times.ts';

/**
 * One team of the source, read as the snapshot's rules judge it (docs/contract.md, sections 7 and 9),
 * inside the caller's read-only repeatable-read transaction: a team is never built from two states of
 * the source. A list is read whole (its items' JSON kept to hand over, and its ids and hashes to
 * compare with the table), or by the item, only the ids the log named.
 *
 * A row that breaks a rule keeps the part it belongs to as the table holds it (a bad project keeps the
 * projects; a bad team row keeps the whole team), and is named in one line: the source's collection,
 * the row's id, the field and the rule.
 */

/** What the sync reads of a team: whole parts, and items of its lists by id. */
export interface TeamAsk {
  parts: ReadonlySet<ChangePart>;
  items?: Partial<Record<ListResource, ReadonlySet<number>>>;
}

export interface SourceTeam {
  /** absent: no such team in the source; refused: its own row breaks a rule (the whole team is kept). */
  state: 'present' | 'absent' | 'refused';
  /** The parts that were read and kept every rule. */
  desired?: DesiredTeam;
  /** Its members' users, for their user items (a user whose row breaks a rule is left out). */
  users: DesiredUser[];
  refusals: Refusal[];
  /** The JSON of lists read whole, by id: what the write is handed (shared/write/desired.ts, ItemSource). */
  json: Map<ListResource, Map<number, string>>;
  /** Whether any list was read whole, for how many items: a large one is written beside, apart. */
  wholeItems: number;
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
  ask: TeamAsk,
  timezone: string,
): Promise<SourceTeam> {
  const from = (collection: Collection) => `(${mapping.queries[collection]})`;
  const refusals: Refusal[] = [];
  const refuse: Refuse = (part, collection, id, problems) => {
    for (const problem of problems) refusals.push({ collection, id: String(id ?? '?'), problem, teamId, part });
  };
  const check: Check = (part, collection, record, only) => {
    const result = checkRecord(collection as RecordCollection, record, only);
    if (!result.ok) refuse(part, collection, record.id, result.problems);
    return result.ok ? result.record : undefined;
  };
  const result: SourceTeam = { state: 'present', users: [], refusals, json: new Map(), wholeItems: 0 };

  const [teamRow] = await source.query(
    `SELECT q.id, q.slug, q.name, q.user_id FROM ${from('teams')} q WHERE q.id = ?`,
    [teamId],
  );
  if (!teamRow) return { ...result, state: 'absent' };
  const team = check('team', 'teams', {
    id: sourceId(teamRow.id),
    ...(teamRow.slug !== null && { slug: teamRow.slug }),
    name: teamRow.name,
  });
  if (!team) return { ...result, state: 'refused' };
  const identity = { id: teamId, ...(team.slug !== undefined && { slug: team.slug }), name: team.name! };
  const desired: DesiredTeam = { identity, where: `teams ${teamId}` };
  result.desired = desired;

  if (ask.parts.has('team') || ask.parts.has('members')) {
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
      if (user) result.users.push({ id, name: user.name });
    }
    desired.memberIds = memberIds;
  }

  for (const list of ['projects', 'daemons'] as const) {
    const judged =
      list === 'projects'
        ? projectRows(source, mapping, teamId, timezone, check, refuse)
        : daemonRows(source, mapping, teamId, check, refuse);
    if (ask.parts.has(list)) {
      const whole = await readWhole(list, judged, refuse);
      if (whole) {
        desired[list] = whole.list;
        result.json.set(list, whole.json);
        result.wholeItems += whole.list.count;
      }
    } else if (ask.items?.[list]?.size) {
      const edits = await judged.byIds([...ask.items[list]!]);
      if (edits) desired[list] = { edits };
    }
  }

  if (ask.parts.has('finance')) {
    const finance = await readFinance(source, mapping, teamId, check);
    const part = financePart(identity, finance.costs);
    refuse('finance', 'teams', teamId, part.problems);
    if (!finance.refused && part.problems.length === 0)
      desired.finance = { json: part.json, fingerprint: part.fingerprint };
  }
  return result;
}

type Check = (
  part: ChangePart,
  collection: Collection,
  record: Record<string, unknown>,
  only?: readonly string[],
) => AnyRecord | undefined;
type Refuse = (part: ChangePart, collection: Collection, id: unknown, problems: string[]) => void;

/** A list's rows as the rules judge them: all of the team's, in id order, or those of some ids. */
interface JudgedRows {
  /** Every row of the team, in id order, each judged (undefined: refused, said already). */
  all: (onRow: (row: Row, record: AnyRecord | undefined) => void) => Promise<void>;
  /** The items of these ids as the team should hold them (null: not the team's), or undefined when one is refused. */
  byIds: (ids: number[]) => Promise<ListEdit[] | undefined>;
}

/** A list read whole: its JSON by id, its ids and hashes; undefined when a row of it is refused. */
async function readWhole(list: ListResource, rows: JudgedRows, refuse: Refuse) {
  const fingerprint = new ListFingerprint();
  const json = new Map<number, string>();
  const ids: number[] = [];
  const hashes: bigint[] = [];
  let refused = false;
  let previous: unknown;
  await rows.all((row, record) => {
    if (record && record.id === previous) {
      refuse(list, list, row.id, ['id is a duplicate']);
      refused = true;
    }
    previous = record?.id;
    if (!record) refused = true;
    if (refused || !record) return;
    const served = servedJson(list, record as Record<string, unknown>);
    ids.push(record.id!);
    hashes.push(fingerprint.add(served));
    json.set(record.id!, served);
  });
  if (refused) return undefined;
  const whole: DesiredList = { count: ids.length, fingerprint: fingerprint.value(), ids, hashes };
  return { list: whole, json };
}

/** The items of these ids as the team should hold them (null: not the team's), or undefined when one is refused. */
function editsOf(list: ListResource, ids: number[], records: (AnyRecord | undefined)[]): ListEdit[] | undefined {
  if (records.includes(undefined)) return undefined;
  const edits = new Map<number, ListEdit>(ids.map((id) => [id, { id, json: null }]));
  for (const record of records as AnyRecord[])
    edits.set(record.id!, { id: record.id!, json: servedJson(list, record as Record<string, unknown>) });
  return [...edits.values()];
}

function projectRows(
  source: SourceConnection,
  mapping: Mapping,
  teamId: number,
  timezone: string,
  check: Check,
  refuse: Refuse,
): JudgedRows {
  const columns = 'q.id, q.team_id, q.client_id, q.name, q.slug, q.created_at';
  const judge = (row: Row) =>
    check('projects', 'projects', {
      id: sourceId(row.id),
      team_id: sourceId(row.team_id),
      client_id: row.client_id === null ? null : sourceId(row.client_id),
      name: row.name,
      slug: row.slug,
      created_at: row.created_at === null ? null : sourceTime(String(row.created_at), timezone),
    });
  /** The client's team of each client id named, from the source (absent: no such client). */
  const clientTeams = async (clientIds: number[]) => {
    const teams = new Map<number, number>();
    if (clientIds.length === 0) return teams;
    const marks = clientIds.map(() => '?').join(', ');
    for (const row of await source.query(
      `SELECT q.id, q.team_id FROM (${mapping.queries.clients}) q WHERE q.id IN (${marks})`,
      clientIds,
    )) {
      teams.set(Number(row.id), Number(row.team_id));
    }
    return teams;
  };
  /** Whether a project's client is one of its team's; says why not. */
  const clientOk = (record: AnyRecord, teams: Map<number, number>, row: Row) => {
    if (record.client_id === null || record.client_id === undefined) return true;
    const owner = teams.get(record.client_id);
    if (owner === teamId) return true;
    const where = rowWhere('projects', row.id);
    const line =
      owner === undefined
        ? problemOf.missing(where, 'client_id', record.client_id, 'a client', 'source')
        : problemOf.clientOfOtherTeam(where, record.client_id, owner, teamId);
    refuse('projects', 'projects', row.id, [line.slice(where.length + 2)]);
    return false;
  };
  return {
    all: async (onRow) => {
      const clients = new Map<number, number>();
      for (const row of await source.query(
        `SELECT q.id, q.team_id FROM (${mapping.queries.clients}) q WHERE q.team_id = ?`,
        [teamId],
      )) {
        const client = check('projects', 'clients', { id: sourceId(row.id), team_id: sourceId(row.team_id) }, [
          'id',
          'team_id',
        ]);
        if (client) clients.set(client.id!, teamId);
      }
      const pending: { row: Row; record: AnyRecord }[] = [];
      await source.stream(
        `SELECT ${columns} FROM (${mapping.queries.projects}) q WHERE q.team_id = ? ORDER BY q.id`,
        [teamId],
        (row) => {
          const record = judge(row);
          if (record && record.client_id !== null && !clients.has(record.client_id!)) pending.push({ row, record });
          else onRow(row, record);
        },
      );
      // Clients of other teams, named as such (a few at most: a rule broken).
      if (pending.length > 0) {
        const teams = await clientTeams(pending.map((p) => p.record.client_id!));
        for (const { row, record } of pending) onRow(row, clientOk(record, teams, row) ? record : undefined);
      }
    },
    byIds: async (ids) => {
      const marks = ids.map(() => '?').join(', ');
      const rows = await source.query(
        `SELECT ${columns} FROM (${mapping.queries.projects}) q WHERE q.id IN (${marks})`,
        ids,
      );
      const judged = rows.filter((row) => Number(row.team_id) === teamId).map((row) => ({ row, record: judge(row) }));
      const teams = await clientTeams(judged.flatMap(({ record }) => (record?.client_id ? [record.client_id] : [])));
      const records = judged.map(({ row, record }) => (record && clientOk(record, teams, row) ? record : undefined));
      return editsOf('projects', ids, records);
    },
  };
}

function daemonRows(
  source: SourceConnection,
  mapping: Mapping,
  teamId: number,
  check: Check,
  refuse: Refuse,
): JudgedRows {
  const select = `SELECT d.id, d.environment_id, d.server_id, d.name, d.command, d.username, d.directory, d.processes,
       e.team_id AS environment_team, s.id AS found_server
     FROM (${mapping.queries.daemons}) d JOIN (${mapping.queries.environments}) e ON e.id = d.environment_id
     LEFT JOIN (${mapping.queries.servers}) s ON s.id = d.server_id`;
  const judge = (row: Row) => {
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
      const where = rowWhere('daemons', row.id);
      refuse('daemons', 'daemons', row.id, [
        problemOf.missing(where, 'server_id', record.server_id!, 'a server', 'source').slice(where.length + 2),
      ]);
      return undefined;
    }
    return record;
  };
  return {
    all: (onRow) =>
      source.stream(`${select} WHERE e.team_id = ? ORDER BY d.id`, [teamId], (row) => onRow(row, judge(row))),
    byIds: async (ids) => {
      const rows = await source.query(`${select} WHERE d.id IN (${ids.map(() => '?').join(', ')})`, ids);
      return editsOf('daemons', ids, rows.filter((r) => Number(r.environment_team) === teamId).map(judge));
    },
  };
}

/** A team's costs: its servers' monthly costs and its cost lines; `refused` when a row of them is. */
async function readFinance(source: SourceConnection, mapping: Mapping, teamId: number, check: Check) {
  const costs: Cost[] = [];
  let refused = false;
  for (const [collection, money] of [
    ['servers', 'monthly_cost'],
    ['costs', 'amount'],
  ] as const) {
    // A server is judged by what finance reads of it (it has no label); a cost line whole.
    const columns = ['id', 'team_id', ...(money === 'amount' ? ['label'] : []), money, 'currency'];
    const rows = await source.query(
      `SELECT ${columns.map((column) => `q.${column}`).join(', ')} FROM (${mapping.queries[collection]}) q ` +
        'WHERE q.team_id = ? ORDER BY q.id',
      [teamId],
    );
    for (const row of rows) {
      const record = check(
        'finance',
        collection,
        { ...row, id: sourceId(row.id), team_id: sourceId(row.team_id), [money]: amount(row[money]) },
        money === 'amount' ? undefined : columns,
      );
      if (record)
        costs.push({ label: record.label ?? SERVERS_LABEL, currency: record.currency!, units: record[money]! });
      else refused = true;
    }
  }
  return { costs, refused };
}
