import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateToken, TOKEN_PREFIX } from '../../commands/tokens/secret.ts';
import { bearerToken, hashToken, isExpired } from '../../shared/api/bearer.ts';

describe('generateToken', () => {
  it('starts with the recognisable prefix tra_', () => {
    expect(TOKEN_PREFIX).toBe('tra_');
    expect(generateToken().startsWith('tra_')).toBe(true);
  });

  it('carries at least 160 random bits after the prefix', () => {
    const body = generateToken().slice(TOKEN_PREFIX.length);
    // base64url: 6 bits a character.
    expect(body).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(body.length * 6).toBeGreaterThanOrEqual(160);
  });

  it('is a bearer token that travels in a header unchanged', () => {
    const secret = generateToken();
    expect(bearerToken(`Bearer ${secret}`)).toBe(secret);
  });

  it('makes a different token every time', () => {
    const tokens = new Set(Array.from({ length: 1000 }, generateToken));
    expect(tokens.size).toBe(1000);
  });

  it('uses every character position randomly: no fixed part beyond the prefix', () => {
    const tokens = Array.from({ length: 200 }, generateToken);
    const length = tokens[0]!.length;
    for (let i = TOKEN_PREFIX.length; i < length - 1; i++) {
      expect(new Set(tokens.map((t) => t[i])).size).toBeGreaterThan(1);
    }
  });
});

describe('hashToken', () => {
  it('is the SHA-256 of the secret in lower-case hex', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('hashes the empty string like SHA-256 does', () => {
    expect(hashToken('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hashes the UTF-8 bytes of the secret', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (secret) => {
        expect(hashToken(secret)).toBe(createHash('sha256').update(Buffer.from(secret, 'utf8')).digest('hex'));
      }),
    );
  });
});

describe('bearerToken', () => {
  it('reads the token of "Bearer <token>"', () => {
    expect(bearerToken('Bearer secret-a')).toBe('secret-a');
  });

  it.each(['bearer', 'BEARER', 'bEaReR'])('reads the scheme %s case-insensitively', (scheme) => {
    expect(bearerToken(`${scheme} secret-a`)).toBe('secret-a');
  });

  it('ignores spaces around the header value', () => {
    expect(bearerToken('   Bearer secret-a   ')).toBe('secret-a');
  });

  it('ignores several spaces between scheme and token', () => {
    expect(bearerToken('Bearer    secret-a')).toBe('secret-a');
  });

  it('keeps the token’s own case', () => {
    expect(bearerToken('Bearer SeCrEt')).toBe('SeCrEt');
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['spaces only', '   '],
    ['the scheme without a token', 'Bearer'],
    ['the scheme and spaces', 'Bearer   '],
    ['a token without a scheme', 'secret-a'],
    ['the Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['the Token scheme', 'Token secret-a'],
    ['the scheme glued to the token', 'Bearersecret-a'],
    ['two tokens', 'Bearer secret-a secret-b'],
    ['two Authorization headers joined with a comma', 'Bearer secret-a,Bearer secret-b'],
    ['a tab after the scheme', 'Bearer\tsecret-a'],
    ['a no-break space after the scheme', 'Bearer\u00a0secret-a'],
    ['a tab before the scheme', '\tBearer secret-a'],
    ['a tab after the token', 'Bearer secret-a\t'],
    ['a line feed after the scheme', 'Bearer\nsecret-a'],
    ['an ideographic space after the scheme', 'Bearer\u3000secret-a'],
  ])('reads no token from %s', (_, header) => {
    expect(bearerToken(header)).toBeUndefined();
  });
});

describe('isExpired', () => {
  const now = new Date('2026-06-01T12:00:00.000Z');

  it('is not expired without an expiry (null)', () => {
    expect(isExpired(null, now)).toBe(false);
  });

  it('is not expired without an expiry (undefined)', () => {
    expect(isExpired(undefined, now)).toBe(false);
  });

  it('is not expired one second before expires_at', () => {
    expect(isExpired('2026-06-01T12:00:01+00:00', now)).toBe(false);
  });

  it('is expired when expires_at is exactly now', () => {
    expect(isExpired('2026-06-01T12:00:00+00:00', now)).toBe(true);
  });

  it('is expired one second after expires_at', () => {
    expect(isExpired('2026-06-01T11:59:59+00:00', now)).toBe(true);
  });

  it('is expired a millisecond after expires_at', () => {
    expect(isExpired('2026-06-01T12:00:00+00:00', new Date(now.getTime() + 1))).toBe(true);
  });

  it('is not expired a millisecond before expires_at', () => {
    expect(isExpired('2026-06-01T12:00:00+00:00', new Date(now.getTime() - 1))).toBe(false);
  });
});

describe('an expiry that cannot be read', () => {
  it('counts as expired, so a damaged record fails closed', () => {
    expect(isExpired('not a time', new Date())).toBe(true);
  });
});
