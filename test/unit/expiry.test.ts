import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isExpired } from '../../shared/api/bearer.ts';
import { toUtcTimestamp } from '../../shared/domain/timestamp.ts';
import { expiryFrom } from '../../commands/tokens/expiry.ts';

const NOW = new Date('2026-06-01T12:00:00.000Z');

describe('expiryFrom', () => {
  it.each([
    ['90d', '90 days', '2026-08-30T12:00:00+00:00'],
    ['12h', '12 hours', '2026-06-02T00:00:00+00:00'],
    ['30m', '30 minutes', '2026-06-01T12:30:00+00:00'],
  ])('reads %s as %s from now', (text, _meaning, expiry) => {
    expect(expiryFrom(text, NOW)).toBe(expiry);
  });

  it('writes the API’s UTC shape, dropping milliseconds', () => {
    expect(expiryFrom('1m', new Date('2026-06-01T12:00:00.999Z'))).toBe('2026-06-01T12:01:00+00:00');
  });

  it.each(['', '90', 'd', '0d', '-1d', '1.5h', '90 d', '90D', '1w', '1y', '90days', '1000000d'])(
    'rejects %j',
    (text) => {
      expect(() => expiryFrom(text, NOW)).toThrow('--expires-in must look like 90d, 12h or 30m');
    },
  );

  it('writes an expiry the snapshot and token rules read back as the same instant', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 999_999 }), fc.constantFrom('d', 'h', 'm'), (n, unit) => {
        const expiry = expiryFrom(`${n}${unit}`, NOW);
        expect(toUtcTimestamp(expiry)).toBe(expiry);
        const minutes = n * { d: 1440, h: 60, m: 1 }[unit];
        expect(Date.parse(expiry)).toBe(NOW.getTime() + minutes * 60_000);
      }),
    );
  });

  it('makes a token that is not expired now but is once the time has passed', () => {
    const expiry = expiryFrom('30m', NOW);
    expect(isExpired(expiry, NOW)).toBe(false);
    expect(isExpired(expiry, new Date(NOW.getTime() + 30 * 60_000))).toBe(true);
  });
});
