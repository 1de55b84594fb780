/**
 * ISO 8601 times from snapshots, normalised to the API's one shape: UTC, whole seconds,
 * `YYYY-MM-DDTHH:MM:SS+00:00`. A fraction of a second is truncated, never rounded.
 */
// Extended (2026-01-02T05:04:05+02:00) and basic (20260102T050405+0200) formats; seconds and a
// fraction are optional; the offset is Z, ±HH, ±HH:MM or ±HHMM (±HH:MM not in the basic format).
const EXTENDED = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;
const BASIC = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(\d{2})?)$/;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Returns the normalised UTC time, or undefined when the text is not a valid ISO 8601 time. */
export function toUtcTimestamp(text: string): string | undefined {
  const m = EXTENDED.exec(text) ?? BASIC.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((part) => Number(part ?? 0)) as [
    number, number, number, number, number, number,
  ];
  const offsetSign = m[8] === '-' ? -1 : 1;
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;

  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day); // setUTCFullYear, unlike Date.UTC, keeps years 0-99
  local.setUTCHours(hour, minute, second, 0);
  const utc = new Date(local.getTime() - offsetSign * (offsetHours * 60 + offsetMinutes) * 60_000);
  const utcYear = utc.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return undefined;
  return (
    `${pad(utcYear, 4)}-${pad(utc.getUTCMonth() + 1)}-${pad(utc.getUTCDate())}` +
    `T${pad(utc.getUTCHours())}:${pad(utc.getUTCMinutes())}:${pad(utc.getUTCSeconds())}+00:00`
  );
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}
