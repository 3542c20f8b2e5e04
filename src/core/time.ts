/**
 * RFC 3339 times (`2024-05-08T13:56:00Z`, `2024-05-08T15:56:00.250+02:00`): a real calendar date and
 * an explicit offset. `Date.parse` alone accepts "hello 2024" and "1", rolls 31 February over to
 * 2 March, and reads a time without an offset in the machine's time zone, so the same input would
 * mean different instants on different machines.
 */
const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** What a refused time is told; one wording on every surface. */
export const rfc3339Reason = "must be an RFC 3339 time with an offset or Z, e.g. 2024-05-08T13:56:00Z";

/** Milliseconds since the epoch, or `null` when `value` is not an RFC 3339 time on a real date. Sub-millisecond digits are dropped. */
export function parseRfc3339(value: string): number | null {
  const match = rfc3339.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second, fraction, zone, offsetHour, offsetMinute] = match;
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return null;
  // Leap second 60 has no millisecond of its own; refusing it beats moving it silently.
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  if (offsetHour !== undefined && (Number(offsetHour) > 23 || Number(offsetMinute) > 59)) return null;
  const millis = (fraction ?? "").padEnd(3, "0").slice(0, 3);
  const offset = zone === "Z" || zone === "z" ? "Z" : zone;
  const ms = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${offset}`);
  return Number.isNaN(ms) ? null : ms;
}

export function isRfc3339(value: string): boolean {
  return parseRfc3339(value) !== null;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** English month names, January first (`Date#getUTCMonth` order). */
export const monthNames: readonly string[] = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
