import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inTimeWindows, questionTimeWindows, type TimeWindow } from "../../src/route/question-time.ts";

const day = 86_400_000;
const utc = (year: number, month: number, date: number) => Date.UTC(year, month - 1, date);
/** Windows as ISO dates, [from, to) — easier to read in a failure than milliseconds. */
const iso = (windows: readonly TimeWindow[]) =>
  windows.map(({ fromMs, toMs }) => [
    new Date(fromMs).toISOString().slice(0, 10),
    new Date(toMs).toISOString().slice(0, 10),
  ]);

// The latest session of the history: 20 October 2023, 13:56 UTC.
const anchor = Date.UTC(2023, 9, 20, 13, 56);

describe("time windows from a question's date phrases", () => {
  it("reads absolute days in both orders, with and without ordinal suffix and comma", () => {
    assert.deepEqual(iso(questionTimeWindows("What did Gina find on 1 February, 2023?", null)), [
      ["2023-02-01", "2023-02-02"],
    ]);
    assert.deepEqual(iso(questionTimeWindows("What painting did Melanie show on October 13, 2023?", null)), [
      ["2023-10-13", "2023-10-14"],
    ]);
    assert.deepEqual(iso(questionTimeWindows("Who came on the 3rd of May 2023?", null)), [
      ["2023-05-03", "2023-05-04"],
    ]);
  });

  it("reads a month with its year as the whole month, and a year alone as the whole year", () => {
    assert.deepEqual(iso(questionTimeWindows("What setback did Melanie face in October 2023?", null)), [
      ["2023-10-01", "2023-11-01"],
    ]);
    assert.deepEqual(iso(questionTimeWindows("How many times has Melanie gone to the beach in 2023?", null)), [
      ["2023-01-01", "2024-01-01"],
    ]);
  });

  it("places a month without a year at its latest occurrence not after now, and the year before", () => {
    assert.deepEqual(iso(questionTimeWindows("When did Melanie go camping in June?", anchor)), [
      ["2023-06-01", "2023-07-01"],
      ["2022-06-01", "2022-07-01"],
    ]);
    // December is after October: its latest occurrence is last year's.
    assert.deepEqual(iso(questionTimeWindows("What did they do in December?", anchor)), [
      ["2022-12-01", "2023-01-01"],
      ["2021-12-01", "2022-01-01"],
    ]);
    assert.deepEqual(
      questionTimeWindows("When did Melanie go camping in June?", null),
      [],
      "no now, no year: unplaced",
    );
  });

  it("reads relative phrases against the latest session", () => {
    assert.deepEqual(iso(questionTimeWindows("What did Jon do yesterday?", anchor)), [["2023-10-19", "2023-10-20"]]);
    assert.deepEqual(iso(questionTimeWindows("What did Maria join last week?", anchor)), [
      ["2023-10-07", "2023-10-21"],
    ]);
    assert.deepEqual(iso(questionTimeWindows("Where did they go last month?", anchor)), [["2023-09-01", "2023-10-01"]]);
    assert.deepEqual(iso(questionTimeWindows("What changed last year?", anchor)), [["2022-01-01", "2023-01-01"]]);
    // "last May" is the May before now; "last October" in October is a year back.
    assert.deepEqual(iso(questionTimeWindows("What happened last May?", anchor)), [["2023-05-01", "2023-06-01"]]);
    assert.deepEqual(iso(questionTimeWindows("What happened last October?", anchor)), [["2022-10-01", "2022-11-01"]]);
    const ago = questionTimeWindows("What did Sam adopt two weeks ago?", anchor);
    assert.equal(ago.length, 1);
    assert.ok(inTimeWindows(utc(2023, 10, 6), ago, 0), "14 days before now is inside");
    assert.ok(!inTimeWindows(utc(2023, 10, 19), ago, 0), "the day before now is not");
    assert.deepEqual(questionTimeWindows("What did Jon do yesterday?", null), [], "relative without now: skipped");
  });

  it("does not read verbs and ordinary words as dates", () => {
    assert.deepEqual(questionTimeWindows("What may Caroline march for?", anchor), []);
    assert.deepEqual(questionTimeWindows("How did Melanie feel after the accident?", anchor), []);
    assert.deepEqual(questionTimeWindows("What did Nate win 3 tournaments for?", anchor), []);
  });

  it("reads each phrase once, by its most specific reading", () => {
    // "May 23, 2023" is one day, not also May 2023 and the year 2023.
    assert.deepEqual(iso(questionTimeWindows("What did Gina get accepted for on May 23, 2023?", anchor)), [
      ["2023-05-23", "2023-05-24"],
    ]);
    assert.deepEqual(iso(questionTimeWindows("What happened between 31 June and 2 July 2023?", null)), [
      ["2023-07-02", "2023-07-03"],
    ]);
  });

  it("stretches a window's end by the slack: a later session tells of an earlier day", () => {
    const may = questionTimeWindows("in May 2023", null);
    assert.ok(inTimeWindows(utc(2023, 5, 31), may, 0));
    assert.ok(!inTimeWindows(utc(2023, 6, 10), may, 0));
    assert.ok(inTimeWindows(utc(2023, 6, 10), may, 14 * day));
    assert.ok(!inTimeWindows(utc(2023, 4, 30), may, 14 * day), "the start is not stretched");
  });
});
