/**
 * The import's words: every problem a snapshot can have, said one way, and the list that keeps
 * at most 50 of them (docs/contract.md, section 7). Data echoed into a message (a key, a slug) is quoted
 * with its control and escape characters escaped and its length capped, so a snapshot can never
 * drive the operator's terminal; a JSON syntax error echoes nothing of the file.
 */

import { count, counted, escapeText, shownText } from '../cli/text.ts';
import { quote as quoted } from '../../shared/domain/strings.ts';
import { WrittenNumber } from '../../shared/domain/decimal.ts';
import { problemOf } from '../../shared/domain/problems.ts';

const MAX_LISTED_PROBLEMS = 50;

/** Collects problems: the first 50 are kept, the rest only counted. */
export class Problems {
  /** The first 50, in the order they are found: a record's own as it is read, then those between records. */
  private readonly listed: string[] = [];
  /** Every problem, listed or only counted. */
  count = 0;

  add(problem: string): void {
    if (this.count++ < MAX_LISTED_PROBLEMS) this.listed.push(problem);
  }

  /** The lines to print: at most 50 problems, then `… and N more problems`. */
  lines(): string[] {
    const more = this.count - this.listed.length;
    return more > 0 ? [...this.listed, `… and ${counted(more, 'more problem', 'more problems')}`] : this.listed;
  }
}

/** Quotes text from the snapshot for a message (shared/domain/strings.ts), escaped as everything a command echoes. */
function quote(text: string): string {
  return escapeText(quoted(text));
}

/** `projects[5] (id 1234)`: where a record is, with its id when it has a usable one (a long one cut). */
export function locate(collection: string, index: number, id?: unknown): string {
  if (typeof id === 'number') return `${collection}[${index}] (id ${shownText(id)})`;
  if (id instanceof WrittenNumber) return `${collection}[${index}] (id ${shownText(id.shown)})`;
  if (typeof id === 'string') return `${collection}[${index}] (id ${quote(id)})`;
  return `${collection}[${index}]`;
}

export const say = {
  notAnObject: 'the snapshot must be a JSON object',
  notJson: (line: number, column: number) =>
    `the file is not valid JSON: syntax error at line ${line}, column ${column}`,
  notUtf8: (offset: number) =>
    `the file is not UTF-8 text: an invalid byte sequence at byte ${count(offset)} (counted from 0)`,
  empty: 'the file is empty: a snapshot is one JSON object',
  unknownCollection: (key: string, closest: string) =>
    `unknown collection ${quote(key)} (did you mean ${quote(closest)}?)`,
  unknownField: (where: string, key: string, closest: string) =>
    `${where}: unknown field ${quote(key)} (did you mean ${quote(closest)}?)`,
  duplicateKey: (where: string, key: string) => `${where}: the key ${quote(key)} appears twice in one object`,
  notAnArray: (collection: string) => `${collection}: must be an array`,
  recordNotAnObject: (where: string) => `${where}: must be an object`,
  duplicateId: problemOf.duplicateId,
  duplicateSlug: (where: string, slug: string) => escapeText(problemOf.duplicateSlug(where, slug)),
  duplicateSecret: (where: string) =>
    `${where}: token is a duplicate of an earlier token (the same secret, as token or token_sha256)`,
  notInSnapshot: (where: string, field: string, id: number, what: string) =>
    problemOf.missing(where, field, id, what, 'snapshot'),
  clientOfOtherTeam: problemOf.clientOfOtherTeam,
  tooManyTeams: (where: string, teams: number, limit: number) =>
    `${where}: teams would list ${counted(teams, 'team')} with those it is in outside this snapshot, ` +
    `more than the ${count(limit)} a user may be in`,
  // Rejections that need the table (after validation, before the first write).
  slugTaken: (where: string, slug: string, holder: number) => escapeText(problemOf.slugTaken(where, slug, holder)),
  slugCycle: (where: string, slug: string, holder: string, holderSlug: string) =>
    `${where}: slug ${quote(slug)} is held by ${holder}, which takes slug ${quote(holderSlug)} in turn; ` +
    'rename in two imports',
  tokenOfAnotherUser: (where: string, owner: number) =>
    `${where}: this token already exists for user ${owner}; ` +
    'a token cannot move to another user (revoke it and issue a new one)',
} as const;
