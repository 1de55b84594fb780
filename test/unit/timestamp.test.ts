import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toUtcTimestamp } from '../../shared/domain/timestamp.ts';

const SHAPE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The contract's UTC shape of an instant, as Date computes it (whole seconds). */
function expectedUtc(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** Writes the instant `utcMs` as local time at `offsetMinutes` east of UTC, with that offset. */
function localText(utcMs: number, offsetMinutes: number, fraction: string, colon: boolean): string {
  const local = new Date(Math.floor(utcMs / 1000) * 1000 + offsetMinutes * 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${pad(Math.floor(abs / 60))}${colon ? ':' : ''}${pad(abs % 60)}`;
  return (
    `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}` +
    `T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}` +
    `${fraction ? `.${fraction}` : ''}${offset}`
  );
}

describe('toUtcTimestamp', () => {
  it.each([
    ['converts a positive offset to UTC', '2026-01-02T05:04:05+02:00', '2026-01-02T03:04:05+00:00'],
    [
      'converts a negative offset to UTC across midnight and the year',
      '2025-12-31T22:30:00-05:00',
      '2026-01-01T03:30:00+00:00',
    ],
    [
      'converts a positive offset to UTC back across midnight and the year',
      '2026-01-01T01:00:00+05:30',
      '2025-12-31T19:30:00+00:00',
    ],
    ['writes Z as +00:00', '2026-03-04T10:11:12Z', '2026-03-04T10:11:12+00:00'],
    ['keeps a time already in the output shape unchanged', '2026-03-04T10:11:12+00:00', '2026-03-04T10:11:12+00:00'],
    ['treats -00:00 as UTC', '2026-03-04T10:11:12-00:00', '2026-03-04T10:11:12+00:00'],
    ['accepts an offset without a colon', '2026-01-02T05:04:05+0200', '2026-01-02T03:04:05+00:00'],
    ['accepts an offset of hours only', '2026-01-02T05:04:05-03', '2026-01-02T08:04:05+00:00'],
    [
      'truncates a fraction of a second instead of rounding it',
      '2026-01-02T03:04:05.999Z',
      '2026-01-02T03:04:05+00:00',
    ],
    [
      'does not roll the last fraction of a year over into the next year',
      '2025-12-31T23:59:59.999999999Z',
      '2025-12-31T23:59:59+00:00',
    ],
    ['truncates a fraction together with an offset', '2026-01-02T05:04:05.5+02:00', '2026-01-02T03:04:05+00:00'],
    ['accepts a comma as the decimal sign of the fraction', '2026-01-02T03:04:05,75Z', '2026-01-02T03:04:05+00:00'],
    ['accepts the 29th of February of a leap year', '2024-02-29T12:00:00Z', '2024-02-29T12:00:00+00:00'],
    ['accepts the 29th of February of a year divisible by 400', '2000-02-29T12:00:00Z', '2000-02-29T12:00:00+00:00'],
  ])('%s', (_behaviour, input, expected) => {
    expect(toUtcTimestamp(input)).toBe(expected);
  });

  it.each([
    ['a time without an offset', '2026-01-02T05:04:05'],
    ['a date alone', '2026-01-02'],
    ['an empty string', ''],
    ['free text', 'yesterday'],
    ['a Unix timestamp', '1767323045'],
    ['the 29th of February of a common year', '2025-02-29T12:00:00Z'],
    ['the 29th of February of a century not divisible by 400', '1900-02-29T12:00:00Z'],
    ['the 30th of February', '2024-02-30T12:00:00Z'],
    ['the 31st of April', '2026-04-31T12:00:00Z'],
    ['month 13', '2026-13-01T12:00:00Z'],
    ['month 00', '2026-00-01T12:00:00Z'],
    ['day 00', '2026-01-00T12:00:00Z'],
    ['hour 25', '2026-01-01T25:00:00Z'],
    ['minute 60', '2026-01-01T12:60:00Z'],
    ['second 61', '2026-01-01T12:00:61Z'],
    ['an offset of 24 hours', '2026-01-01T12:00:00+24:00'],
    ['an offset of 60 minutes', '2026-01-01T12:00:00+02:60'],
    ['trailing text', '2026-01-01T12:00:00Z junk'],
    ['leading text', 'on 2026-01-01T12:00:00Z'],
  ])('rejects %s', (_, text) => {
    expect(toUtcTimestamp(text)).toBeUndefined();
  });

  it('converts any valid time with any offset to the instant Date computes, in the contract shape', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9000-12-31T23:59:59Z'), noInvalidDate: true }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        fc.stringMatching(/^[0-9]{0,9}$/),
        fc.boolean(),
        (date, offsetMinutes, fraction, colon) => {
          const text = localText(date.getTime(), offsetMinutes, fraction, colon);
          const result = toUtcTimestamp(text);
          expect(result).toBe(expectedUtc(date.getTime()));
          expect(result).toMatch(SHAPE);
        },
      ),
    );
  });

  it('agrees with Date.parse on every time it accepts in Date’s own format', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
        (date) => {
          const text = date.toISOString();
          expect(toUtcTimestamp(text)).toBe(expectedUtc(Date.parse(text)));
        },
      ),
    );
  });
});

describe('other ISO 8601 forms', () => {
  it.each([
    ['2026-01-02T05:04Z', '2026-01-02T05:04:00+00:00'],
    ['2026-01-02T05:04+02:00', '2026-01-02T03:04:00+00:00'],
    ['20260102T050405Z', '2026-01-02T05:04:05+00:00'],
    ['20260102T050405+0200', '2026-01-02T03:04:05+00:00'],
    ['20260102T050405.999-0130', '2026-01-02T06:34:05+00:00'],
    ['20260102T0504+02', '2026-01-02T03:04:00+00:00'],
  ])('reads %s (minute precision or the basic format) as %s', (input, expected) => {
    expect(toUtcTimestamp(input)).toBe(expected);
  });

  it.each(['20260102T05:04:05Z', '2026-0102T050405Z', '20260102T050405+02:00'])(
    'rejects %s, which mixes the basic and extended formats',
    (input) => {
      expect(toUtcTimestamp(input)).toBeUndefined();
    },
  );
});
