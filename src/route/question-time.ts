/**
 * Dates and relative times in a question, as time windows over session dates (issue 19 part 3,
 * decision 024). Model-free: a small grammar of English date phrases, read at search time only.
 *
 * A question has no "now" of its own. Absolute phrases ("in May 2023", "on 7 May", "October 13,
 * 2023") need none, except a month or day without a year, which is read as its latest occurrence
 * not after the anchor and the one a year before it. Relative phrases ("yesterday", "last week",
 * "last May", "two weeks ago") are read against the anchor: the scope's latest session time, i.e.
 * the question is asked just after the history it is asked of. Phrases relative to an event the
 * question names ("two weeks after the trip") are not read: their anchor is the event's own date,
 * which only a first retrieval pass could supply (decision 024 says why that was left out).
 */
import { monthNames } from "../core/time.ts";

/** Milliseconds since the epoch, UTC; `fromMs` inclusive, `toMs` exclusive. */
export interface TimeWindow {
  readonly fromMs: number;
  readonly toMs: number;
}

const day = 86_400_000;

// Capitalised month names only: "may" and "march" are also verbs.
const month = `(${monthNames.join("|")})`;
const dayNumber = "(\\d{1,2})(?:st|nd|rd|th)?";
const year = "((?:19|20)\\d{2})";

const numberWords: Readonly<Record<string, number>> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  couple: 2,
  few: 3,
};

/** One grammar rule: a pattern and how its match becomes windows (none when it cannot be placed). */
interface Rule {
  readonly pattern: RegExp;
  readonly windows: (match: RegExpExecArray, anchorMs: number | null) => TimeWindow[];
}

const rules: readonly Rule[] = [
  // 7 May 2023, 7th of May, 2023, 7 May
  {
    pattern: new RegExp(`\\b${dayNumber} (?:of )?${month}(?:,? ${year})?\\b`, "g"),
    windows: (match, anchorMs) => dayWindows(monthIndex(match[2]), Number(match[1]), optionalYear(match[3]), anchorMs),
  },
  // May 7, 2023, May 7th, May 7 (not "May 2023")
  {
    pattern: new RegExp(`\\b${month} ${dayNumber}(?!\\d)(?:,? ${year})?\\b`, "g"),
    windows: (match, anchorMs) => dayWindows(monthIndex(match[1]), Number(match[2]), optionalYear(match[3]), anchorMs),
  },
  // May 2023, May, 2023
  {
    pattern: new RegExp(`\\b${month},? ${year}\\b`, "g"),
    windows: (match) => [monthWindow(Number(match[2]), monthIndex(match[1]))],
  },
  // last May, this May, May alone
  {
    pattern: new RegExp(`\\b(?:(last|this) )?${month}\\b`, "gi"),
    windows: (match, anchorMs) => {
      const index = monthIndex(match[2]);
      // Case-insensitive only for the qualifier: the month itself must be capitalised.
      if (index < 0 || anchorMs === null) return [];
      const anchor = new Date(anchorMs);
      const latestYear =
        index < anchor.getUTCMonth() || (index === anchor.getUTCMonth() && match[1]?.toLowerCase() !== "last")
          ? anchor.getUTCFullYear()
          : anchor.getUTCFullYear() - 1;
      if (match[1]) return [monthWindow(latestYear, index)];
      return [monthWindow(latestYear, index), monthWindow(latestYear - 1, index)];
    },
  },
  // in 2023
  {
    pattern: new RegExp(`\\b${year}\\b`, "g"),
    windows: (match) => [{ fromMs: Date.UTC(Number(match[1]), 0, 1), toMs: Date.UTC(Number(match[1]) + 1, 0, 1) }],
  },
  {
    pattern: /\byesterday\b/gi,
    windows: (_match, anchorMs) => (anchorMs === null ? [] : [dayOf(anchorMs - day)]),
  },
  // last week, last weekend, the past month, last year, this year
  {
    pattern: /\b(last|past|previous|this) (week|weekend|month|year)\b/gi,
    windows: (match, anchorMs) => {
      if (anchorMs === null) return [];
      const which = (match[1] ?? "").toLowerCase();
      const unit = (match[2] ?? "").toLowerCase();
      const anchor = new Date(anchorMs);
      const end = dayOf(anchorMs).toMs;
      if (unit === "week" || unit === "weekend")
        return [{ fromMs: end - (which === "this" ? 7 : 14) * day, toMs: end }];
      const shift = which === "this" ? 0 : 1;
      if (unit === "month") return [monthWindow(anchor.getUTCFullYear(), anchor.getUTCMonth() - shift)];
      const yearNumber = anchor.getUTCFullYear() - shift;
      return [{ fromMs: Date.UTC(yearNumber, 0, 1), toMs: Date.UTC(yearNumber + 1, 0, 1) }];
    },
  },
  // two weeks ago, 3 days ago, a few months ago
  {
    pattern:
      /\b(\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple(?: of)?|few) (day|week|month|year)s? ago\b/gi,
    windows: (match, anchorMs) => {
      if (anchorMs === null) return [];
      const said = match[1] ?? "";
      const count = /^\d/.test(said) ? Number(said) : (numberWords[said.toLowerCase().split(" ")[0] ?? ""] ?? 1);
      const unit = { day, week: 7 * day, month: 30 * day, year: 365 * day }[(match[2] ?? "day").toLowerCase() as "day"];
      const centre = dayOf(anchorMs).fromMs - count * unit;
      const half = Math.max(day, unit / 2);
      return [{ fromMs: centre - half, toMs: centre + half + day }];
    },
  },
];

/**
 * The time windows a question's date phrases name, in the order the phrases appear; empty when it
 * names none. `anchorMs` is "now" for relative phrases (the scope's latest session time); without
 * one they are skipped. A phrase is read once, by the most specific rule that matches it.
 *
 * @example questionTimeWindows("What did Ana do on 7 May, 2023?", null) // [7 May 2023, one day]
 */
export function questionTimeWindows(text: string, anchorMs: number | null): TimeWindow[] {
  const taken: [number, number][] = [];
  const found: { at: number; windows: TimeWindow[] }[] = [];
  for (const rule of rules) {
    for (const match of text.matchAll(rule.pattern)) {
      const start = match.index ?? 0;
      const end = start + match[0].length;
      if (taken.some(([from, to]) => start < to && end > from)) continue;
      const windows = rule.windows(match as RegExpExecArray, anchorMs);
      if (windows.length === 0) continue;
      taken.push([start, end]);
      found.push({ at: start, windows });
    }
  }
  return found.sort((a, b) => a.at - b.at).flatMap((hit) => hit.windows);
}

/**
 * Whether a time falls in any window, the window's end stretched by `slackMs`: people tell of a
 * day in a later session ("last week I went camping"), so the session that holds an event is
 * often dated after it.
 */
export function inTimeWindows(timeMs: number, windows: readonly TimeWindow[], slackMs: number): boolean {
  return windows.some((window) => timeMs >= window.fromMs && timeMs < window.toMs + slackMs);
}

function monthIndex(name: string | undefined): number {
  return monthNames.indexOf(name ?? "");
}

function optionalYear(text: string | undefined): number | null {
  return text ? Number(text) : null;
}

function monthWindow(yearNumber: number, index: number): TimeWindow {
  return { fromMs: Date.UTC(yearNumber, index, 1), toMs: Date.UTC(yearNumber, index + 1, 1) };
}

function dayOf(ms: number): TimeWindow {
  const date = new Date(ms);
  const fromMs = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
  return { fromMs, toMs: fromMs + day };
}

/** A day of a month; without a year, its latest occurrence not after the anchor and the one before. */
function dayWindows(index: number, dayNumberValue: number, yearNumber: number | null, anchorMs: number | null) {
  if (index < 0 || dayNumberValue < 1 || dayNumberValue > 31) return [];
  const at = (y: number) => {
    const fromMs = Date.UTC(y, index, dayNumberValue);
    // Not a real date (31 June): Date.UTC rolls it into the next month.
    return new Date(fromMs).getUTCMonth() === index ? [{ fromMs, toMs: fromMs + day }] : [];
  };
  if (yearNumber !== null) return at(yearNumber);
  if (anchorMs === null) return [];
  const anchorYear = new Date(anchorMs).getUTCFullYear();
  const latest = Date.UTC(anchorYear, index, dayNumberValue) <= anchorMs ? anchorYear : anchorYear - 1;
  return [...at(latest), ...at(latest - 1)];
}
