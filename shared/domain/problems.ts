import { quote } from './strings.ts';

/**
 * How a record that breaks a rule between records is named, one way for both front ends
 * (docs/contract.md, sections 7 and 9): the import says it of a snapshot's record
 * (`projects[5] (id 1234)`), the sync of a source's row (`projects 1234`). What prints a problem
 * escapes it (commands/cli/text.ts).
 */
export type Origin = 'snapshot' | 'source';

export const problemOf = {
  duplicateId: (where: string) => `${where}: id is a duplicate`,
  duplicateSlug: (where: string, slug: string) => `${where}: slug ${quote(slug)} is a duplicate`,
  /** A reference to a record the snapshot or the source does not hold. */
  missing: (where: string, field: string, id: number | string, what: string, origin: Origin) =>
    `${where}: ${field} ${id} is not ${what} of the ${origin}`,
  clientOfOtherTeam: (where: string, clientId: number, clientTeam: number, projectTeam: number) =>
    `${where}: client_id ${clientId} belongs to team ${clientTeam}, not to the project's team ${projectTeam}`,
  slugTaken: (where: string, slug: string, holder: number) =>
    `${where}: slug ${quote(slug)} is already used by team ${holder}`,
} as const;
