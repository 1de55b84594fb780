import type { ListResource } from '../table/keys.ts';
import type { LoggedChange, LoggedRow } from './log/change-source.ts';
import { type ChangePart, IDENTIFIER, type Mapping, type Touch } from './mapping.ts';
import type { TeamAsk } from './read/team.ts';

/**
 * What the changes the log reports touch (docs/contract.md, section 9): the parts of teams, the items
 * of their lists, the users and the tokens to read again from the source. The log's rows are not
 * applied: they only say where to look, so a change seen twice costs a read and writes nothing.
 * A touch whose team the row does not hold (a daemon's team is its environment's) is resolved by its
 * SELECT when the touches are read, in the same snapshot of the source.
 */

type TeamPart = Exclude<ChangePart, 'user' | 'token'>;

interface TeamTouches {
  parts: Set<TeamPart>;
  items: Partial<Record<ListResource, Set<number>>>;
}

/** The touches gathered since the last batch was applied. */
export class Touched {
  readonly teams = new Map<number, TeamTouches>();
  readonly users = new Set<number>();
  readonly tokens = new Set<number>();
  /** Touches whose team a SELECT over the row gives, resolved when they are read. */
  readonly unresolved: { touch: Touch; row: LoggedRow }[] = [];
  /** Parts of every team (a TRUNCATE), which a full pass of those parts reads. */
  readonly everyTeam = new Set<TeamPart>();
  /** Tables whose shape may have changed: what the sync reads is checked again. */
  readonly reshaped = new Set<string>();
  /** Changes taken, and the oldest commit among them (ms), for the lag. */
  changes = 0;
  oldestCommit = Number.POSITIVE_INFINITY;

  get empty(): boolean {
    return (
      this.teams.size +
        this.users.size +
        this.tokens.size +
        this.unresolved.length +
        this.everyTeam.size +
        this.reshaped.size ===
      0
    );
  }

  /** A part of a team, whole. */
  team(teamId: number, part: TeamPart): void {
    this.teamTouches(teamId).parts.add(part);
  }

  /** One item of a team's list. */
  item(teamId: number, list: ListResource, id: number): void {
    const touches = this.teamTouches(teamId);
    touches.items[list] ??= new Set();
    touches.items[list].add(id);
  }

  /** What a team's touches ask to read: a list touched whole needs none of its items apart. */
  asks(teamId: number): TeamAsk {
    const { parts, items } = this.teamTouches(teamId);
    return { parts, items };
  }

  /** The touches of these teams, moved out into a Touched of their own (teams busy being written apart). */
  extractTeams(teamIds: ReadonlySet<number>): Touched {
    const moved = new Touched();
    for (const teamId of teamIds) {
      const touches = this.teams.get(teamId);
      if (!touches) continue;
      moved.teams.set(teamId, touches);
      this.teams.delete(teamId);
    }
    return moved;
  }

  /** Another batch's touches taken over (a batch put back to be read again). */
  merge(other: Touched): void {
    for (const [teamId, touches] of other.teams) {
      for (const part of touches.parts) this.team(teamId, part);
      for (const [list, ids] of Object.entries(touches.items) as [ListResource, Set<number>][]) {
        for (const id of ids) this.item(teamId, list, id);
      }
    }
    for (const id of other.users) this.users.add(id);
    for (const id of other.tokens) this.tokens.add(id);
    this.unresolved.push(...other.unresolved);
    for (const part of other.everyTeam) this.everyTeam.add(part);
    for (const table of other.reshaped) this.reshaped.add(table);
    this.changes += other.changes;
    this.oldestCommit = Math.min(this.oldestCommit, other.oldestCommit);
  }

  private teamTouches(teamId: number): TeamTouches {
    let touches = this.teams.get(teamId);
    if (!touches) {
      touches = { parts: new Set(), items: {} };
      this.teams.set(teamId, touches);
    }
    return touches;
  }
}

/** Adds what one change touches, by the mapping's entry for its table. */
export function touch(touched: Touched, mapping: Mapping, change: LoggedChange): void {
  if (change.kind === 'schema') {
    touched.reshaped.add(change.table);
    return;
  }
  if (change.kind === 'truncate') {
    // Every token or user of a table emptied: a full pass of tokens (with the members) finds which.
    for (const table of change.tables)
      for (const t of mapping.watch[table]?.touches ?? [])
        touched.everyTeam.add(t.part === 'user' || t.part === 'token' ? 'members' : t.part);
    touched.changes += 1;
    return;
  }
  const watch = mapping.watch[change.table];
  if (!watch) return;
  // An update that changes none of the columns that matter is no change (Sanctum's last_used_at).
  if (change.kind === 'update' && change.old && watch.columns.every((c) => change.old![c] === change.row[c])) return;
  touched.changes += 1;
  const rows =
    change.kind === 'insert' ? [change.row] : change.kind === 'delete' ? [change.old] : [change.old, change.row];
  for (const t of watch.touches) {
    if (!(t.on ?? ['insert', 'update', 'delete']).includes(change.kind)) continue;
    for (const row of rows) if (row) touchRow(touched, t, row);
  }
}

function touchRow(touched: Touched, touch: Touch, row: LoggedRow): void {
  if (touch.part === 'user' || touch.part === 'token') {
    const id = idOf(row[touch.id!]);
    if (id !== undefined) (touch.part === 'user' ? touched.users : touched.tokens).add(id);
    return;
  }
  if (!IDENTIFIER.test(touch.team!)) {
    touched.unresolved.push({ touch, row });
    return;
  }
  const teamId = idOf(row[touch.team!]);
  // A row without the column (an old row the log gave only the key of): its team is read again whole.
  if (teamId === undefined) {
    if (!(touch.team! in row)) touched.unresolved.push({ touch, row });
    return;
  }
  const itemId = touch.item === undefined ? undefined : idOf(row[touch.item]);
  if (itemId !== undefined && (touch.part === 'projects' || touch.part === 'daemons'))
    touched.item(teamId, touch.part, itemId);
  else touched.team(teamId, touch.part);
}

/** An id the log gives as text, or undefined for NULL or anything that is no id. */
export function idOf(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || !/^\d+$/.test(value)) return undefined;
  const id = Number(value);
  return Number.isSafeInteger(id) ? id : undefined;
}
