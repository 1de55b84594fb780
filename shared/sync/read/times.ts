/**
 * Times as the source holds them, as ISO 8601 for the snapshot's rules (shared/domain/timestamp.ts).
 * A column with a zone comes as `2026-01-02 03:04:05+00` (the sync's sessions are in UTC); one
 * without (Laravel's `timestamp` columns on PostgreSQL, DATETIME on MySQL) as `2026-01-02 03:04:05`,
 * which is a time in the application's zone: UTC by Laravel's default `app.timezone`, or the zone
 * the sync is told (docs/contract.md, section 9).
 */
const SOURCE_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?([+-]\d{2}(?::?\d{2})?|Z)?$/;

/** Whether `zone` is a time zone this Node knows (an IANA name such as Europe/Berlin, or UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The source's text as ISO 8601 with an offset, or the text as it is when it is no time (the rules then refuse it). */
export function sourceTime(text: string, zone: string): string {
  const match = SOURCE_TIME.exec(text.trim());
  if (!match) return text;
  const [, year, month, day, hour, minute, second, fraction = '', offset] = match;
  const wall = `${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}`;
  // +05, +05:30 and Z stand as they are; +0530 gains its colon.
  if (offset)
    return offset === 'Z' || offset.includes(':') || offset.length === 3
      ? `${wall}${offset}`
      : `${wall}${offset.slice(0, 3)}:${offset.slice(3)}`;
  if (zone === 'UTC') return `${wall}Z`;
  const minutes = offsetOf(Date.UTC(+year!, +month! - 1, +day!, +hour!, +minute!, +second!), zone);
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${wall}${sign}${String(Math.trunc(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/**
 * The zone's offset (minutes east of UTC) for a wall time in it, given as if it were UTC: the
 * offset at the instant the wall time names, found in two steps so that a wall time just after a
 * change of offset gets the new one.
 */
function offsetOf(wallAsUtc: number, zone: string): number {
  const first = offsetAt(wallAsUtc, zone);
  const second = offsetAt(wallAsUtc - first * 60_000, zone);
  return second;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset at an instant, in minutes. */
function offsetAt(instant: number, zone: string): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(instant)).map((p) => [p.type, Number(p.value)]));
  const asUtc = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return Math.round((asUtc - Math.floor(instant / 1000) * 1000) / 60_000);
}
