import { bearerToken, hashToken } from './token.ts';

/**
 * A bearer value read the way Laravel Sanctum's `PersonalAccessToken::findToken` reads it
 * (laravel/sanctum, src/PersonalAccessToken.php), so that the original service's clients keep
 * their tokens (docs/contract.md, section 6): a value without `|` is the secret alone, looked up
 * by its hash; `<id>|<secret>` is split at the first `|` and names the token found by the
 * secret's hash only when that token has the id. The token is always read by the hash, so an
 * unknown token costs the same read whichever form it came in.
 */
export interface Bearer {
  /** SHA-256 of the secret: the key the token is read by. */
  tokenHash: string;
  /** The Sanctum id an `<id>|<secret>` value gives, as decimal digits without leading zeros. */
  sanctumId?: string;
}

/**
 * The bearer of an `Authorization` header, or undefined when the header names no token at all
 * (no bearer, or an id that is not digits: such a value can match no token, so it is not read).
 * An id is compared as a number, leading zeros allowed, as the database compares Sanctum's
 * `find($id)` with the `id` column.
 */
export function readBearer(header: string | undefined): Bearer | undefined {
  const value = bearerToken(header);
  if (value === undefined) return undefined;
  const bar = value.indexOf('|');
  if (bar === -1) return { tokenHash: hashToken(value) };
  const id = value.slice(0, bar);
  if (!/^[0-9]+$/.test(id)) return undefined;
  return { tokenHash: hashToken(value.slice(bar + 1)), sanctumId: id.replace(/^0+(?=.)/, '') };
}

/** Whether the token found by the bearer's hash is the one it names: any token for the secret alone, else only the token with that Sanctum id. */
export function bearerNames(bearer: Bearer, tokenSanctumId: number | undefined): boolean {
  return (
    bearer.sanctumId === undefined || (tokenSanctumId !== undefined && String(tokenSanctumId) === bearer.sanctumId)
  );
}
