/** The abilities a token can carry. `*` grants every ability. */
export const ABILITIES = ['finances:read', 'daemons:read', 'projects:read'] as const;
export type Ability = (typeof ABILITIES)[number];

/** Every ability a token can carry. */
export const TOKEN_ABILITIES: readonly string[] = [...ABILITIES, '*'];
export const isTokenAbility = (value: string) => TOKEN_ABILITIES.includes(value);

export const grants = (abilities: readonly string[], needed: Ability) =>
  abilities.includes(needed) || abilities.includes('*');
