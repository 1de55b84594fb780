import { hash } from 'node:crypto';

/**
 * Bearer tokens as the functions check them. Only a token's SHA-256 is ever stored, and a lookup
 * is by that hash, so nothing about which part of a wrong token was wrong can leak.
 * (New tokens are made by commands/tokens/secret.ts.)
 */

export function hashToken(secret: string): string {
  return hash('sha256', secret, 'hex');
}

const BEARER = /^\s*bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive). */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
}

/** A token with an `expires_at` of now or earlier is expired; one that cannot be read counts as expired. */
export function isExpired(expiresAt: string | null | undefined, now: Date): boolean {
  if (expiresAt == null) return false;
  const time = Date.parse(expiresAt);
  return Number.isNaN(time) || time <= now.getTime();
}
