/**
 * ISO 8601 times from snapshots, normalised to the API's one shape: UTC, whole seconds,
 * `YYYY-MM-DDTHH:MM:SS+00:00`. A fraction of a second is truncated, never rounded.
 */
// Extended (2026-01-02T05:04:05+02:00) and basic (20260102T050405+0200) formats; seconds and a
// fraction are optional; the offset is Z, ±HH, ±HH:MM or ±HHMM (±HH:MM not in the basic format).
const EXTENDED =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;
const BASIC = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,]\d+)?)?(?:([Zz])|([+-])(\d{2})(\d{2})?)$/;

/** The last time normalised: a record's check and its JSON as served ask for the same one in a row. */
let last: { text: string; utc: string | undefined } | undefined;

/** Returns the normalised UTC time, or undefined when the text is not a valid ISO 8601 time. */
export function toUtcTimestamp(text: string): string | undefined {
  if (last?.text === text) return last.utc;
  const utc = normalised(text);
  last = { text, utc };
  return utc;
}

function normalised(text: string): string | undefined {
  const m = EXTENDED.exec(text) ?? BASIC.exec(text);
  if (!m) return undefined;
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, , , offsetHours = 0, offsetMinutes = 0] = m
    .slice(1)
    .map((part) => Number(part ?? 0));
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  // A day the month does not have (February 30th, month 13, day 0) is not a time.
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  // By arithmetic rather than with a Date: its setters and toISOString take microseconds a call, and
  // an import of 100,000 projects calls this twice a project.
  const offset = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3_600 + (minute - offset) * 60 + second;
  const days = Math.floor(seconds / 86_400);
  const [utcYear, utcMonth, utcDay] = civilFromDays(days);
  if (utcYear < 0 || utcYear > 9999) return undefined;
  const inDay = seconds - days * 86_400;
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${String(utcYear).padStart(4, '0')}-${two(utcMonth)}-${two(utcDay)}`;
  const time = `${two(Math.floor(inDay / 3_600))}:${two(Math.floor(inDay / 60) % 60)}:${two(inDay % 60)}`;
  return `${date}T${time}+00:00`;
}

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeap(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

/** Days since 1970-01-01 of a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The date of a day since 1970-01-01 (H. Hinnant's civil_from_days): year, month, day. */
function civilFromDays(days: number): [number, number, number] {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shifted = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * shifted + 2) / 5) + 1;
  const month = shifted < 10 ? shifted + 3 : shifted - 9;
  return [yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day];
}
