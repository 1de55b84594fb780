import { randomBytes } from 'node:crypto';
import {
  QueryCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { hashToken } from '../../shared/auth/token.ts';
import { financeFieldsJson } from './finance.ts';
import { daemonJson, LIST_RESOURCES, projectJson, type ListResource } from '../../shared/domain/resources.ts';
import type { SnapshotPlan, TeamImage } from './snapshot.ts';
import { getItems } from '../store/batch-get.ts';
import { writeAll } from '../store/batch-write.ts';
import { ordinalKey, resourcePartition, teamHeadKey, tokenKey, userKey, userTokenKey, type Key } from '../../shared/store/keys.ts';

/**
 * Import: each team of a snapshot is written as a new generation beside the one readers use,
 * then switched to in one transaction on its head items. Readers see the team before or after,
 * never half-written, even if the import is killed (the unfinished generation is only garbage,
 * collected by the next import of the team).
 */

export type ImportPhase = 'items' | 'switch' | 'cleanup';
export interface ImportProgress {
  phase: ImportPhase;
  done: number;
  total: number;
}

export interface ImportOptions {
  /** Called as the import goes; an async observer is awaited (the import waits for it). */
  onProgress?: (progress: ImportProgress) => void | Promise<void>;
  concurrency?: number;
}

export interface ImportSummary {
  teams: number;
  items: number;
  users: number;
  tokens: number;
}

/** Thrown before anything is written when the table itself makes the snapshot unusable. */
export class ImportRejected extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ImportRejected';
    this.problems = problems;
  }
}

interface HeadItem {
  team_id: number;
  slug?: string;
  generation?: string;
  members?: Set<number>;
  pending?: Set<string>;
  retired?: Set<string>;
  previous?: string;
}

export async function importSnapshot(
  doc: DynamoDBDocumentClient,
  tableName: string,
  plan: SnapshotPlan,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const io = new TableIo(doc, tableName);
  const snapshotTeamIds = new Set(plan.teams.map((t) => t.id));
  const snapshotUserIds = new Set(plan.users.map((u) => u.id));

  // 1. Read what the import depends on, and reject before writing anything.
  const heads = await io.getHeads(plan.teams.map((t) => teamHeadKey(t.id)));
  const slugHolders = await io.getHeads(plan.teams.map((t) => teamHeadKey(t.slug)));
  const problems: string[] = [];
  plan.teams.forEach((team, i) => {
    const holder = slugHolders.get(`TEAMREF#${team.slug}`);
    if (holder && holder.team_id !== team.id && !snapshotTeamIds.has(holder.team_id)) {
      problems.push(`teams[${i}] (id ${team.id}): slug "${team.slug}" is already used by team ${holder.team_id}`);
    }
  });
  const switchOrder = orderForSlugMoves(plan.teams, heads, problems);
  if (problems.length > 0) throw new ImportRejected(problems);
  const oldUsers = await io.getUsers([...snapshotUserIds]);

  // 2. Reserve a new generation per team (invisible to readers until the switch).
  const generations = new Map<number, string>();
  for (const team of plan.teams) {
    const generation = newGenerationId();
    generations.set(team.id, generation);
    await io.update(teamHeadKey(team.id), 'SET team_id = :id ADD pending :g', { ':id': team.id, ':g': new Set([generation]) });
  }

  // 3. Write every project and daemon of every team into its new generation.
  const totalItems = plan.teams.reduce((n, t) => n + t.projects.length + t.daemons.length, 0);
  let writtenItems = 0;
  await options.onProgress?.({ phase: 'items', done: 0, total: totalItems });
  await writeAll(doc, tableName, itemRequests(plan.teams, generations), {
    concurrency: options.concurrency,
    onWritten: async (count) => {
      writtenItems += count;
      await options.onProgress?.({ phase: 'items', done: writtenItems, total: totalItems });
    },
  });

  // 4. Users and tokens are upserted; a token keeps its revocation and creation time.
  await writeAll(doc, tableName, plan.users.map((u) => ({ PutRequest: { Item: { ...userKey(u.id), name: u.name, teams: u.teams } } })));
  for (const token of plan.tokens) await io.upsertToken(token);

  // 5. Switch each team to its new generation: heads (id and slug copies) in one transaction.
  let switched = 0;
  for (const team of switchOrder) {
    // Bookkeeping (pending generations) is re-read; the condition stays on the generation this
    // import started from, so an import that switched the team meanwhile is not overwritten.
    const startedFrom = heads.get(`TEAMREF#${team.id}`)?.generation;
    const now = (await io.getHeads([teamHeadKey(team.id)])).get(`TEAMREF#${team.id}`);
    await io.switchTeam(team, generations.get(team.id)!, startedFrom, now, snapshotUserIds);
    await options.onProgress?.({ phase: 'switch', done: ++switched, total: plan.teams.length });
  }

  // 6. Users who left a team that is not in this snapshot leave its member list too.
  for (const [teamId, userIds] of teamsLeft(plan, oldUsers, snapshotTeamIds)) {
    await io.removeMembers(teamId, userIds);
  }

  // 7. Delete generations no reader can reach any more (all but the current and previous).
  let cleaned = 0;
  for (const team of plan.teams) {
    await io.collectGarbage(team.id);
    await options.onProgress?.({ phase: 'cleanup', done: ++cleaned, total: plan.teams.length });
  }
  return { teams: plan.teams.length, items: totalItems, users: plan.users.length, tokens: plan.tokens.length };
}

function newGenerationId(): string {
  return Date.now().toString(36) + randomBytes(4).toString('hex');
}

function* itemRequests(teams: TeamImage[], generations: Map<number, string>) {
  for (const team of teams) {
    const generation = generations.get(team.id)!;
    const lists: Record<ListResource, string[]> = {
      projects: team.projects.map(projectJson),
      daemons: team.daemons.map(daemonJson),
    };
    for (const resource of LIST_RESOURCES) {
      const pk = resourcePartition(team.id, generation, resource);
      const list = lists[resource];
      for (let i = 0; i < list.length; i++) {
        yield { PutRequest: { Item: { pk, sk: ordinalKey(i + 1), j: list[i] } } };
      }
    }
  }
}

/**
 * A team may take a slug another team of the same snapshot gives up; that team must switch
 * first. A cycle (two teams swapping slugs) cannot be ordered and is rejected.
 */
function orderForSlugMoves(teams: TeamImage[], heads: Map<string, HeadItem>, problems: string[]): TeamImage[] {
  const currentSlug = (team: TeamImage) => heads.get(`TEAMREF#${team.id}`)?.slug;
  const ordered: TeamImage[] = [];
  let remaining = [...teams];
  while (remaining.length > 0) {
    const blocked = (team: TeamImage) =>
      remaining.some((other) => other !== team && currentSlug(other) === team.slug && other.slug !== team.slug);
    const ready = remaining.filter((team) => !blocked(team));
    if (ready.length === 0) {
      for (const team of remaining) problems.push(`teams (id ${team.id}): slug "${team.slug}" is held by a team of this snapshot that takes another team's slug in turn; rename in two imports`);
      return ordered;
    }
    ordered.push(...ready);
    remaining = remaining.filter((team) => !ready.includes(team));
  }
  return ordered;
}

function teamsLeft(plan: SnapshotPlan, oldUsers: Map<number, number[]>, snapshotTeamIds: Set<number>): Map<number, number[]> {
  const left = new Map<number, number[]>();
  for (const user of plan.users) {
    for (const teamId of oldUsers.get(user.id) ?? []) {
      if (!snapshotTeamIds.has(teamId) && !user.teams.includes(teamId)) left.set(teamId, [...(left.get(teamId) ?? []), user.id]);
    }
  }
  return left;
}

/** The importer's DynamoDB calls, kept apart from its plan. */
class TableIo {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(doc: DynamoDBDocumentClient, tableName: string) {
    this.doc = doc;
    this.tableName = tableName;
  }

  async getHeads(keys: Key[], consistent = true): Promise<Map<string, HeadItem>> {
    const items = await getItems(this.doc, this.tableName, keys, { consistent });
    return new Map(items.map((item) => [String(item.pk), item as unknown as HeadItem]));
  }

  async getUsers(userIds: number[]): Promise<Map<number, number[]>> {
    const items = await getItems(this.doc, this.tableName, userIds.map(userKey), { consistent: true });
    return new Map(items.map((item) => [Number(String(item.pk).slice('USER#'.length)), (item.teams as number[]) ?? []]));
  }

  async update(key: Key, expression: string, values: Record<string, unknown>, condition?: string): Promise<void> {
    await this.doc.send(new UpdateCommand({
      TableName: this.tableName, Key: key, UpdateExpression: expression,
      ExpressionAttributeValues: values, ConditionExpression: condition,
    }));
  }

  async upsertToken(token: SnapshotPlan['tokens'][number]): Promise<void> {
    const hash = hashToken(token.secret);
    await this.doc.send(new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: this.tableName,
            Key: tokenKey(hash),
            UpdateExpression: 'SET user_id = :user, #name = :name, abilities = :abilities, expires_at = :expires, created_at = if_not_exists(created_at, :now)',
            ExpressionAttributeNames: { '#name': 'name' },
            ExpressionAttributeValues: {
              ':user': token.userId, ':name': token.name, ':abilities': token.abilities,
              ':expires': token.expiresAt, ':now': new Date().toISOString(),
            },
          },
        },
        { Put: { TableName: this.tableName, Item: { ...userTokenKey(token.userId, hash) } } },
      ],
    }));
  }

  /** The switch: both head copies name the new generation at once, or neither does. */
  async switchTeam(team: TeamImage, generation: string, startedFrom: string | undefined, old: HeadItem | undefined, snapshotUserIds: Set<number>): Promise<void> {
    const members = new Set([...(old?.members ?? [])].filter((id) => !snapshotUserIds.has(id)));
    for (const id of team.memberIds) members.add(id);
    const pending = new Set([...(old?.pending ?? [])].filter((g) => g !== generation));
    // Every generation but the new one and the one readers may still be on becomes garbage.
    const retired = new Set([...(old?.retired ?? []), ...pending, ...(old?.previous ? [old.previous] : [])]);
    const view = {
      team_id: team.id,
      slug: team.slug,
      name: team.name,
      generation,
      projects: team.projects.length,
      daemons: team.daemons.length,
      finance: financeFieldsJson(team.finance),
      ...(members.size > 0 ? { members } : {}),
      updated_at: new Date().toISOString(),
    };
    const bookkeeping = {
      ...(old?.generation ? { previous: old.generation } : {}),
      ...(retired.size > 0 ? { retired } : {}),
    };
    const actions: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
      {
        Put: {
          TableName: this.tableName,
          Item: { ...teamHeadKey(team.id), ...view, ...bookkeeping },
          // Two imports of one team cannot interleave: the second one's switch fails.
          ConditionExpression: startedFrom ? 'generation = :old' : 'attribute_not_exists(generation)',
          ExpressionAttributeValues: startedFrom ? { ':old': startedFrom } : undefined,
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: { ...teamHeadKey(team.slug), ...view },
          ConditionExpression: 'attribute_not_exists(pk) OR team_id = :id',
          ExpressionAttributeValues: { ':id': team.id },
        },
      },
    ];
    if (old?.slug && old.slug !== team.slug) {
      actions.push({
        Delete: {
          TableName: this.tableName,
          Key: teamHeadKey(old.slug),
          ConditionExpression: 'attribute_not_exists(pk) OR team_id = :id',
          ExpressionAttributeValues: { ':id': team.id },
        },
      });
    }
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: actions }));
    } catch (error) {
      if ((error as Error).name === 'TransactionCanceledException') {
        throw new Error(`team ${team.id} changed while it was being imported (another import ran at the same time); run the import again`, { cause: error });
      }
      throw error;
    }
  }

  async removeMembers(teamId: number, userIds: number[]): Promise<void> {
    const head = (await this.getHeads([teamHeadKey(teamId)])).get(`TEAMREF#${teamId}`);
    if (!head?.generation) return;
    for (const key of [teamHeadKey(teamId), ...(head.slug ? [teamHeadKey(head.slug)] : [])]) {
      await this.update(key, 'DELETE members :users', { ':users': new Set(userIds) }, 'attribute_exists(pk)');
    }
  }

  async collectGarbage(teamId: number): Promise<void> {
    const head = (await this.getHeads([teamHeadKey(teamId)])).get(`TEAMREF#${teamId}`);
    const retired = [...(head?.retired ?? [])];
    if (retired.length === 0) return;
    for (const generation of retired) {
      for (const resource of LIST_RESOURCES) await this.deletePartition(resourcePartition(teamId, generation, resource));
    }
    await this.update(teamHeadKey(teamId), 'DELETE retired :gone', { ':gone': new Set(retired) });
  }

  /** Deletes every item of a partition, reading its keys a page at a time. */
  private async deletePartition(pk: string): Promise<void> {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ProjectionExpression: 'pk, sk',
        ExclusiveStartKey: startKey,
      }));
      const keys = (page.Items ?? []) as Key[];
      await writeAll(this.doc, this.tableName, keys.map((Key) => ({ DeleteRequest: { Key } })));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }
}
