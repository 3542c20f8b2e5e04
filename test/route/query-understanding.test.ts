import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";

// Query understanding through the whole read path (decision 024): each lever changes what a search
// returns first, and with its weight at 0 the same search does not.

const scope = { tenant: "acme", user: "ana" };

async function open(t: { after: (fn: () => void) => void }) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels() });
  t.after(() => memory.close());
  return memory;
}

function session(key: string, isoDay: string, turns: [speaker: string, text: string][]) {
  return { session: key, time: `${isoDay}T10:00:00Z`, turns: turns.map(([speaker, text]) => ({ speaker, text })) };
}

const off = { sessionWeight: 0, timeWeight: 0, speakerWeight: 0, feedbackWeight: 0 };

describe("query understanding on the read path", () => {
  it("a relative time in the question lifts evidence dated in it, read against the latest session", async (t) => {
    const memory = await open(t);
    // The March turn says more of the question's words; the June one is the one "last month" means.
    await memory.addSession(
      scope,
      session("march", "2024-03-10", [["Ana", "Hiking hiking in the Alps, long hiking day."]]),
    );
    await memory.addSession(scope, session("june", "2024-06-12", [["Ana", "We went hiking near Bled."]]));
    await memory.addSession(scope, session("july", "2024-07-20", [["Ana", "The quarterly report is due on Friday."]]));
    const question = "Where did Ana go hiking last month?";
    const plain = await memory.search(scope, question, { routing: off });
    const timed = await memory.search(scope, question, { routing: { ...off, timeWeight: 0.5 } });
    assert.match(plain.items[0]?.text ?? "", /Alps/, "without the window the lexically stronger turn leads");
    assert.match(timed.items[0]?.text ?? "", /Bled/, "the window (June 2024) lifts the June turn");
  });

  it("a session with several good hits outranks an equally good stray turn", async (t) => {
    const memory = await open(t);
    await memory.addSession(
      scope,
      session("stray", "2024-01-01", [
        ["Ana", "Pottery class pottery wheel."],
        ["Ben", "The bus was late again today."],
      ]),
    );
    await memory.addSession(
      scope,
      session("class", "2024-02-01", [
        ["Ana", "I signed up for a pottery class."],
        ["Ben", "What will you make in the class?"],
        ["Ana", "A bowl on the wheel, then a vase for the pottery show."],
      ]),
    );
    const question = "What did Ana make in her pottery class on the wheel?";
    const plain = await memory.search(scope, question, { routing: off, budget: { rawNodes: 3 } });
    const grouped = await memory.search(scope, question, {
      routing: { ...off, sessionWeight: 1 },
      budget: { rawNodes: 3 },
    });
    const sessions = (pack: typeof plain) => pack.items.map((item) => item.provenance.sessionKey);
    assert.ok(sessions(plain).includes("stray"), "without session scores the stray turn takes a place");
    assert.deepEqual(
      sessions(grouped),
      ["class", "class", "class"],
      "the session that holds the exchange fills the pack",
    );
  });

  it("a speaker the question names comes first; a question naming everyone present changes nothing", async (t) => {
    const memory = await open(t);
    await memory.addSession(
      scope,
      session("s1", "2024-01-01", [
        ["Ben", "My favourite painting? My favourite painting is a lighthouse painting, my favourite forever."],
        ["Cleo", "I like one painting: a sunflower field."],
      ]),
    );
    const question = "What is Cleo's favourite painting?";
    const plain = await memory.search(scope, question, { routing: off });
    const focused = await memory.search(scope, question, { routing: { ...off, speakerWeight: 0.5 } });
    assert.equal(plain.items[0]?.provenance.speaker, "Ben");
    assert.equal(focused.items[0]?.provenance.speaker, "Cleo");
    const both = await memory.search(scope, "What are Ben's and Cleo's favourite paintings?", {
      routing: { ...off, speakerWeight: 0.5 },
    });
    const bothPlain = await memory.search(scope, "What are Ben's and Cleo's favourite paintings?", { routing: off });
    assert.deepEqual(
      both.items.map((item) => item.rawNodeId),
      bothPlain.items.map((item) => item.rawNodeId),
    );
  });

  it("a feedback pass seeded by the first pass's best item finds evidence that shares none of the question's words", async (t) => {
    const memory = await open(t);
    // One turn a session: no turn's index text carries another's words through the neighbour gist.
    const turns = [
      "I play tennis with Marco every week.",
      "The quarterly report is due on Friday.",
      "Finance wants the tables in euros.",
      "The basil died in the heat.",
      "Marco taught me squash on Sunday.",
      "Our corgi hates the vacuum cleaner.",
    ];
    for (const [index, text] of turns.entries())
      await memory.addSession(scope, session(`s${index}`, `2024-01-0${index + 1}`, [["Ana", text]]));
    const question = "What sports do I play?";
    const budget = { rawNodes: 2 };
    const plain = await memory.search(scope, question, { routing: off, budget });
    const fed = await memory.search(scope, question, { routing: { ...off, feedbackWeight: 1 }, budget });
    const texts = (pack: typeof plain) => pack.items.map((item) => item.text);
    assert.ok(!texts(plain).some((text) => /squash/.test(text)), "the first pass alone misses it");
    assert.match(texts(fed)[0] ?? "", /tennis/, "the first pass's best item stays first");
    assert.ok(
      texts(fed).some((text) => /squash/.test(text)),
      "the pass seeded by 'Marco' finds it",
    );
  });
});
