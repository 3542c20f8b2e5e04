import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Fused } from "../../src/channels/rrf.ts";
import { focusRerank, fuseFeedback, sessionScores } from "../../src/route/focus-rerank.ts";
import { asksForSeveral, feedbackTerms, namedSpeakers } from "../../src/route/question-focus.ts";
import { questionTimeWindows } from "../../src/route/question-time.ts";
import type { RawNode } from "../../src/store/records.ts";

function node(id: string, session: string, time: string, speaker: string, text = ""): RawNode {
  return {
    id,
    sessionId: session,
    sessionKey: session,
    turn: 0,
    speaker,
    role: null,
    text,
    time,
    source: null,
    uri: null,
    images: [],
    metadata: {},
  };
}
const hit = (id: string, score: number): Fused => ({ id, score, channels: {} });
const ids = (list: readonly { id: string }[]) => list.map((item) => item.id);
const off = { session: 0, time: 0, speaker: 0, slackMs: 0 };
const none = { windows: [], speakers: new Set<string>() };

// A stray turn (a) scores a little above turns of a session that holds several good hits (b, c, d).
const nodes = new Map(
  [
    node("a", "s1", "2023-01-10T10:00:00Z", "Ana"),
    node("b", "s2", "2023-05-08T10:00:00Z", "Ben"),
    node("c", "s2", "2023-05-08T10:00:01Z", "Ana"),
    node("d", "s2", "2023-05-08T10:00:02Z", "Ben"),
    node("e", "s3", "2023-08-01T10:00:00Z", "Ben"),
  ].map((raw) => [raw.id, raw]),
);
const ranked = [hit("a", 1), hit("e", 0.95), hit("b", 0.9), hit("c", 0.8), hit("d", 0.7)];

describe("focus re-rank", () => {
  it("changes nothing with every weight at 0", () => {
    assert.deepEqual(focusRerank(ranked, nodes, none, off, 48), ranked);
  });

  it("session score lifts a turn whose session holds other good hits above an equally good stray", () => {
    const out = focusRerank(ranked, nodes, none, { ...off, session: 0.3 }, 48);
    assert.equal(out[0]?.id, "b", "s2's best turn now leads");
    assert.ok(ids(out).indexOf("b") < ids(out).indexOf("a"));
    assert.deepEqual(
      sessionScores([
        { id: "s1", score: 1 },
        { id: "s2", score: 0.9 },
        { id: "s2", score: 0.8 },
      ]).get("s2"),
      1,
    );
  });

  it("a time window the question names lifts the turns dated in it, and only those", () => {
    const windows = questionTimeWindows("What did they do in May 2023?", null);
    const out = focusRerank(ranked, nodes, { windows, speakers: new Set() }, { ...off, time: 0.4 }, 48);
    assert.deepEqual(ids(out), ["b", "c", "d", "a", "e"]);
    const outside = questionTimeWindows("What did they do in March 2023?", null);
    assert.deepEqual(
      ids(focusRerank(ranked, nodes, { windows: outside, speakers: new Set() }, { ...off, time: 0.3 }, 48)),
      ids(ranked),
    );
  });

  it("a named speaker lifts that speaker's turns, unless every speaker present is named", () => {
    const out = focusRerank(ranked, nodes, { windows: [], speakers: new Set(["Ana"]) }, { ...off, speaker: 0.2 }, 48);
    assert.deepEqual(ids(out), ["a", "c", "e", "b", "d"]);
    const both = focusRerank(
      ranked,
      nodes,
      { windows: [], speakers: new Set(["Ana", "Ben"]) },
      { ...off, speaker: 0.2 },
      48,
    );
    assert.deepEqual(ids(both), ids(ranked));
  });

  it("moves only the first `depth` candidates; the rest keep their place after them", () => {
    const out = focusRerank(ranked, nodes, none, { ...off, session: 5 }, 2);
    assert.deepEqual(ids(out).slice(2), ["b", "c", "d"]);
  });

  it("fuses a feedback pass with the first pass: agreement rises, new candidates come in below", () => {
    const out = fuseFeedback(
      [hit("a", 1), hit("b", 0.9), hit("c", 0.8)],
      [
        { id: "c", score: 9 },
        { id: "x", score: 8 },
      ],
      1,
      60,
    );
    assert.deepEqual(ids(out), ["c", "a", "b", "x"], "a tie keeps the first pass's order");
    assert.deepEqual(ids(fuseFeedback([hit("a", 1), hit("b", 0.9)], [], 1, 60)), ["a", "b"]);
  });
});

describe("question focus", () => {
  it("finds the speakers a question names, by full name or first name, possessive included", () => {
    const speakers = ["Caroline", "Melanie", "Jon Snow", "user", "Al"];
    assert.deepEqual([...namedSpeakers("What is Caroline's identity?", speakers)], ["Caroline"]);
    assert.deepEqual([...namedSpeakers("Where did jon go?", speakers)], ["Jon Snow"]);
    assert.deepEqual([...namedSpeakers("What does the user want to buy?", speakers)], [], "role words name no one");
    assert.deepEqual([...namedSpeakers("What did Al say?", speakers)], [], "too short to be read as a name");
    assert.deepEqual([...namedSpeakers("What did Caroline and Melanie both like?", speakers)].sort(), [
      "Caroline",
      "Melanie",
    ]);
  });

  it("tells questions that gather several pieces of evidence from those that ask for one", () => {
    assert.ok(asksForSeveral("How many tournaments has Nate won?"));
    assert.ok(asksForSeveral("What activities has Melanie done with her family?"));
    assert.ok(asksForSeveral("What do Jon and Gina both have in common?"));
    assert.ok(!asksForSeveral("What is Caroline's identity?"));
    assert.ok(!asksForSeveral("When did Melanie go camping in June?"));
  });

  it("seeds feedback with names and shared words the question lacks, never its own words or stop words", () => {
    const terms = feedbackTerms(
      "What sports does John like?",
      [
        "John: I played basketball with the Lakers fans yesterday, it was really great.",
        "John: Basketball and surfing are what I love most.",
        "Ben: John, you should try surfing in Hawaii.",
      ],
      { max: 4, exclude: ["John", "Ben"] },
    );
    assert.deepEqual(terms.slice(0, 2).sort(), ["hawaii", "lakers"], "names first");
    assert.ok(terms.includes("basketball") || terms.includes("surfing"), "then words several items share");
    for (const word of ["john", "sports", "like", "really", "with", "what", "ben"])
      assert.ok(!terms.includes(word), word);
  });
});
