const months = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];

/** A clock time, `1:56 pm` or `13:56`; `suffix` keeps the group names unique when the pattern is used twice. */
function clockPattern(suffix: string): string {
  return String.raw`(?:(?<hour12${suffix}>\d{1,2})(?::(?<minute12${suffix}>\d{2}))?\s*(?<meridiem${suffix}>[ap])\.?\s*m\.?|(?<hour24${suffix}>\d{1,2}):(?<minute24${suffix}>\d{2}))`;
}
const dayFirst = String.raw`(?<day1>\d{1,2})(?:st|nd|rd|th)?\s+(?<month1>[a-z]+)\.?`;
const monthFirst = String.raw`(?<month2>[a-z]+)\.?\s+(?<day2>\d{1,2})(?:st|nd|rd|th)?`;
const locomoPattern = new RegExp(
  String.raw`^\s*(?:${clockPattern("a")}\s*,?\s*(?:on\s+)?)?(?:${dayFirst}|${monthFirst})\s*,?\s*(?<year>\d{4})(?:\s*,?\s*(?:at\s+)?${clockPattern("b")})?\s*$`,
  "i",
);

/**
 * Parses LoCoMo's session dates (`"1:56 pm on 8 May, 2023"`) into UTC milliseconds; also accepts the variants a
 * re-export might produce (`"8 May 2023"`, `"May 8, 2023, 1:56 PM"`, `"13:56 on 8 May 2023"`, abbreviated months)
 * and plain ISO-8601. The dataset gives no zone, so the wall-clock time is read as UTC. Undefined when unparseable
 * or not a real calendar date.
 */
export function parseLocomoDate(text: string): number | undefined {
  if (/^\s*\d{4}-\d{2}-\d{2}/.test(text)) {
    const iso = Date.parse(text);
    return Number.isNaN(iso) ? undefined : iso;
  }
  const groups = locomoPattern.exec(text)?.groups;
  if (!groups) return undefined;
  const month = monthIndex(groups.month1 ?? groups.month2 ?? "");
  const day = Number(groups.day1 ?? groups.day2);
  const year = Number(groups.year);
  const time = clockTime(groups, "a") ?? clockTime(groups, "b") ?? { hour: 0, minute: 0 };
  if (month === undefined || !time) return undefined;
  const milliseconds = Date.UTC(year, month, day, time.hour, time.minute);
  const check = new Date(milliseconds);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month || check.getUTCDate() !== day) return undefined;
  return milliseconds;
}

function monthIndex(name: string): number | undefined {
  const lower = name.toLowerCase();
  if (lower.length < 3) return undefined;
  const index = months.findIndex((month) => month.startsWith(lower) || (lower === "sept" && month === "september"));
  return index === -1 ? undefined : index;
}

function clockTime(
  groups: Record<string, string | undefined>,
  suffix: string,
): { hour: number; minute: number } | undefined | false {
  const hour12 = groups[`hour12${suffix}`];
  const hour24 = groups[`hour24${suffix}`];
  if (hour12 !== undefined) {
    const hour = Number(hour12);
    const minute = Number(groups[`minute12${suffix}`] ?? "0");
    if (hour < 1 || hour > 12 || minute > 59) return false;
    return { hour: (hour % 12) + (groups[`meridiem${suffix}`]?.toLowerCase() === "p" ? 12 : 0), minute };
  }
  if (hour24 !== undefined) {
    const hour = Number(hour24);
    const minute = Number(groups[`minute24${suffix}`]);
    if (hour > 23 || minute > 59) return false;
    return { hour, minute };
  }
  return undefined;
}
