import { describe, expect, it } from 'vitest';
import { bearerNames, hashToken, readBearer } from '../../shared/api/bearer.ts';

/** Laravel Sanctum's two bearer forms (PersonalAccessToken::findToken), docs/contract.md section 6. */
const SECRET = 'x7Kq2mV9pL4nR8tW1zY6bC3dF5gH0jA2sE4uI6oP';

describe('readBearer', () => {
  it('reads the secret alone by its hash, with no id', () => {
    expect(readBearer(`Bearer ${SECRET}`)).toEqual({ tokenHash: hashToken(SECRET) });
  });

  it("splits <id>|<secret> at the first |, and reads the token by the secret's hash", () => {
    expect(readBearer(`Bearer 5|${SECRET}`)).toEqual({ tokenHash: hashToken(SECRET), sanctumId: '5' });
    expect(readBearer('Bearer 12|a|b')).toEqual({ tokenHash: hashToken('a|b'), sanctumId: '12' });
  });

  it("compares an id as a number, as the database does with Sanctum's find($id): leading zeros go", () => {
    expect(readBearer(`Bearer 005|${SECRET}`)?.sanctumId).toBe('5');
    expect(readBearer(`Bearer 0|${SECRET}`)?.sanctumId).toBe('0');
  });

  it('keeps an id too large for a double as written, so it never matches a nearby one', () => {
    expect(readBearer(`Bearer 9007199254740993|${SECRET}`)?.sanctumId).toBe('9007199254740993');
  });

  it.each([
    ['an empty id', `|${SECRET}`],
    ['a letter in the id', `5a|${SECRET}`],
    ['a sign', `+5|${SECRET}`],
    ['a negative id', `-5|${SECRET}`],
    ['a decimal id', `5.0|${SECRET}`],
    ['a non-ASCII digit', `٥|${SECRET}`],
  ])('names no token for %s (the 401 with no read)', (_, value) => {
    expect(readBearer(`Bearer ${value}`)).toBeUndefined();
  });

  it('reads no bearer where there is none', () => {
    expect(readBearer(undefined)).toBeUndefined();
    expect(readBearer(`Basic ${SECRET}`)).toBeUndefined();
  });
});

describe('bearerNames', () => {
  const alone = readBearer(`Bearer ${SECRET}`)!;
  const withId = readBearer(`Bearer 5|${SECRET}`)!;

  it.each([
    ['the secret alone names a token with an id', alone, 5, true],
    ['the secret alone names a token without one', alone, undefined, true],
    ['<id>|<secret> names the token with that id', withId, 5, true],
    ['<id>|<secret> does not name a token with another id', withId, 6, false],
    ['<id>|<secret> does not name a token imported without an id', withId, undefined, false],
  ] as const)('%s', (_, bearer, tokenId, expected) => {
    expect(bearerNames(bearer, tokenId)).toBe(expected);
  });

  it('does not match 9007199254740993 with the double it rounds to', () => {
    expect(bearerNames(readBearer(`Bearer 9007199254740993|${SECRET}`)!, 9007199254740992)).toBe(false);
  });
});
