import { randomBytes } from 'node:crypto';

/**
 * New token secrets: `tra_` + 43 base64url characters (256 random bits). The fixed prefix lets
 * secret scanners recognise a leaked one. Shown once; only its SHA-256 is stored.
 */
export const TOKEN_PREFIX = 'tra_';

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}
