import { hash } from 'node:crypto';

/**
 * Bearer tokens as the functions check them. Only a token's SHA-256 is ever stored, and a lookup
 * is by that hash, so nothing about which part of a wrong token was wrong can leak. (New tokens
 * are made by commands/tokens/secret.ts.)
 *
 * A bearer value is read the way Laravel Sanctum's `PersonalAccessToken::findToken` reads it
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

export function hashToken(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/**
 * Spaces only, as docs/contract.md (section 2) and Laravel's `bearerToken()` have it: a tab or a
 * no-break space after the scheme names no token. The token itself holds no white space of any kind.
 */
const BEARER = /^ *bearer +(\S+) *$/i;

/** The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive). */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
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

/**
 * Whether the token found by the bearer's hash is the one it names: any token for the secret
 * alone, else only the token with that Sanctum id.
 */
export function bearerNames(bearer: Bearer, tokenSanctumId: number | undefined): boolean {
  if (bearer.sanctumId === undefined) return true;
  return tokenSanctumId !== undefined && String(tokenSanctumId) === bearer.sanctumId;
}

/** A token with an `expires_at` of now or earlier is expired; one that cannot be read counts as expired. */
export function isExpired(expiresAt: string | null | undefined, now: Date): boolean {
  if (expiresAt == null) return false;
  const time = Date.parse(expiresAt);
  return Number.isNaN(time) || time <= now.getTime();
}
