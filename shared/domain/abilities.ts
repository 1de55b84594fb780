/** The abilities a token can carry. `*` grants every ability. */
export const ABILITIES = ['finances:read', 'daemons:read', 'projects:read'] as const;
export type Ability = (typeof ABILITIES)[number];
const ALL_ABILITIES = '*';
export type TokenAbility = Ability | typeof ALL_ABILITIES;

export const TOKEN_ABILITIES: readonly string[] = [...ABILITIES, ALL_ABILITIES];

export function isTokenAbility(value: string): value is TokenAbility {
  return TOKEN_ABILITIES.includes(value);
}

export function grants(abilities: readonly string[], needed: Ability): boolean {
  return abilities.includes(needed) || abilities.includes(ALL_ABILITIES);
}
