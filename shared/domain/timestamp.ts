/**
 * ISO 8601 times from snapshots, normalised to the API's one shape: UTC, whole seconds,
 * `YYYY-MM-DDTHH:MM:SS+00:00`. A fraction of a second is truncated, never rounded.
 */
// Extended (2026-01-02T05:04:05+02:00) and basic (20260102T050405+0200) formats; seconds and a
// fraction are optional; the offset is Z, ±HH, ±HH:MM or ±HHMM (±HH:MM not in the basic format).
const EXTENDED =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;
const BASIC = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(\d{2})?)$/;

/** Returns the normalised UTC time, or undefined when the text is not a valid ISO 8601 time. */
export function toUtcTimestamp(text: string): string | undefined {
  const m = EXTENDED.exec(text) ?? BASIC.exec(text);
  if (!m) return undefined;
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, , , offsetHours = 0, offsetMinutes = 0] = m
    .slice(1)
    .map((part) => Number(part ?? 0));
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const time = new Date(0);
  time.setUTCFullYear(year, month - 1, day); // setUTCFullYear, unlike Date.UTC, keeps years 0-99
  // A day the month does not have (February 30th, month 13, day 0) rolls over into another month.
  if (time.getUTCMonth() !== month - 1 || time.getUTCDate() !== day) return undefined;
  time.setUTCHours(hour, minute - (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes), second);
  const utcYear = time.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return undefined;
  return `${time.toISOString().slice(0, 19)}+00:00`;
}
