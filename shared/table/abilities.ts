/**
 * What a token item's abilities mean (docs/contract.md, section 6): the writers store them, the API
 * grants by them.
 */

/** The abilities a route can require. */
export const ABILITIES = ['finances:read', 'daemons:read', 'projects:read'] as const;
export type Ability = (typeof ABILITIES)[number];

/** Every ability a token can carry: a route's, or `*`, which grants every ability. */
export const TOKEN_ABILITIES: readonly string[] = [...ABILITIES, '*'];
export const isTokenAbility = (value: string) => TOKEN_ABILITIES.includes(value);

/** Whether a token's abilities grant the one a route needs. */
export const grants = (abilities: readonly string[], needed: Ability) =>
  abilities.includes(needed) || abilities.includes('*');
