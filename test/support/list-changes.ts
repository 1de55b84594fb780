import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ledgerPartitions, replacedUntil, retiredUntil } from '../../shared/table/keys.ts';
import { SWEEP_AFTER_MS } from '../../shared/write/ledger.ts';
import type { TestTable } from './dynamodb.ts';
import type { WriteCount } from './writes.ts';

/**
 * What the tests of "At any size" (docs/contract.md, section 9) share: a team's projects with room
 * between their ids (so that one can be added in the middle), the model of a list the API's pages
 * are compared with, and the items a count holds for one team.
 */

/** A team's `count` projects: ids teamId × 1,000,000 + 2, + 4, …, so that an odd id goes between two. */
export function spacedProjects(teamId: number, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const id = teamId * 1_000_000 + 2 * (i + 1);
    return {
      id,
      team_id: teamId,
      client_id: null,
      name: `Project ${id}`,
      slug: `project-${id}`,
      created_at: '2026-01-02T03:04:05+00:00',
    };
  });
}

/** A list as the API should serve it: ids in order, each with its name. */
export class ListModel {
  readonly ids: number[];
  readonly names = new Map<number, string>();

  constructor(items: { id: number; name: string }[]) {
    this.ids = items.map((item) => item.id).sort((a, b) => a - b);
    for (const item of items) this.names.set(item.id, item.name);
  }

  /** The index where `id` is or would go. */
  indexOf(id: number): number {
    let low = 0;
    let high = this.ids.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.ids[middle]! < id) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  set(id: number, name: string): void {
    const at = this.indexOf(id);
    if (this.ids[at] !== id) this.ids.splice(at, 0, id);
    this.names.set(id, name);
  }

  remove(id: number): void {
    const at = this.indexOf(id);
    if (this.ids[at] === id) this.ids.splice(at, 1);
    this.names.delete(id);
  }

  /** The page (1-based) of `perPage` that holds, or would hold, `id`. */
  pageOf(id: number, perPage: number): number {
    return Math.floor(Math.min(this.indexOf(id), Math.max(0, this.ids.length - 1)) / perPage) + 1;
  }

  /** What page `page` of `perPage` should hold: ids and names. */
  page(page: number, perPage: number): { id: number; name: string }[] {
    return this.ids.slice((page - 1) * perPage, page * perPage).map((id) => ({ id, name: this.names.get(id)! }));
  }
}

/**
 * The team a written item belongs to, from its key (shared/table/keys.ts), or undefined for items of
 * no team (tokens, users, the writers' leases). `slugs` maps a slug to its team's id.
 */
export function teamOfKey(key: string, slugs: ReadonlyMap<string, number>): number | undefined {
  const [pk = '', sk = ''] = key.split(' ');
  let match = /^TEAM#(\d+)#/.exec(pk) ?? /^LOCK#(\d+)$/.exec(pk);
  if (match) return Number(match[1]);
  match = /^TEAMREF#(.+)$/.exec(pk);
  if (match) return /^\d+$/.test(match[1]!) ? Number(match[1]) : slugs.get(match[1]!);
  if (pk.startsWith('LEDGER#')) {
    match = /^[PRV]#(?:\d{15}#)?(\d+)#/.exec(sk);
    return match ? Number(match[1]) : undefined;
  }
  if (pk === 'TEAMS') return Number(sk);
  return undefined;
}

/** The items of a count that a change of `teamId` wrote: the team's own, and those of no team but the sync's lease. */
export function itemsOfTeam(count: WriteCount, teamId: number, slugs: ReadonlyMap<string, number>): string[] {
  return count.keys.filter((key) => {
    if (/^SYNC /.test(key)) return false;
    const team = teamOfKey(key, slugs);
    return team === undefined || team === teamId;
  });
}

interface PageReader {
  get(target: string, options: { token: string }): Promise<{ status: number; body: any }>;
}

/**
 * A full walk of a team's projects by `links.next`, from the first page: every item in the order
 * served, and every `meta.total` seen. A 503 (DynamoDB throttled or slow: try again) is asked again,
 * up to 3 times; any other answer but 200 fails the walk.
 */
export async function walkProjects(api: PageReader, team: string | number, token: string, perPage = 50) {
  const items: { id: number; name: string }[] = [];
  const totals = new Set<number>();
  let target: string | null = `/api/${team}/projects?per_page=${perPage}`;
  let pages = 0;
  while (target) {
    let answer = await api.get(target, { token });
    for (let retry = 0; answer.status === 503 && retry < 3; retry++) answer = await api.get(target, { token });
    if (answer.status !== 200) throw new Error(`${target}: ${answer.status} ${JSON.stringify(answer.body)}`);
    for (const item of answer.body.data as { id: number; name: string }[]) items.push({ id: item.id, name: item.name });
    totals.add(answer.body.meta.total);
    const next: string | null = answer.body.links.next;
    target = next === null ? null : `${new URL(next).pathname}${new URL(next).search}`;
    pages += 1;
  }
  return { items, totals: [...totals], pages };
}

/** The model's whole list, as a walk should give it. */
export const modelItems = (model: ListModel) => model.ids.map((id) => ({ id, name: model.names.get(id)! }));

/**
 * Resolves once the ledger holds nothing a sweep at the writers' clock `now` would remove: the sweep a
 * write started is done (the sync sweeps beside its next batches, shared/write/apply.ts). Each entry
 * goes once its items have gone; a moment more lets the last batch of deletes land.
 */
export async function sweptAt(table: TestTable, now: number, limitMs = 300_000): Promise<void> {
  const until = now - SWEEP_AFTER_MS;
  const due = async () => {
    for (const pk of ledgerPartitions()) {
      for (const range of [retiredUntil(until), replacedUntil(until)]) {
        const { Items } = await table.doc.send(
          new QueryCommand({
            TableName: table.tableName,
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: { ':pk': pk, ':from': range.from, ':to': range.to },
            ConsistentRead: true,
            Limit: 1,
          }),
        );
        if ((Items ?? []).length > 0) return true;
      }
    }
    return false;
  };
  const started = performance.now();
  while (await due()) {
    if (performance.now() - started > limitMs) throw new Error(`the sweep was not done within ${limitMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
}
