import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { relevanceTerms, termCoverage } from "../../src/channels/relevance.ts";
import { InputError } from "../../src/core/errors.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

/** The cut these tests use: the suggested 0.2, set as the memory's default (the shipped default, 0, cuts nothing). */
const minScore = 0.2;

async function openWithHistory(
  t: { after: (fn: () => void | Promise<void>) => void },
  search: { minScore?: number } = { minScore },
) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), search });
  t.after(() => memory.close());
  await memory.addSession(scope, {
    session: "trip",
    time: "2024-05-01T10:00:00Z",
    turns: [
      { speaker: "Ana", text: "My sister and I went hiking in the Julian Alps last weekend." },
      { speaker: "Ben", text: "Did you take the cable car up to Vogel?" },
      { speaker: "Ana", text: "No, we hiked the whole way and had soup at the hut." },
      { speaker: "Ben", text: "I baked sourdough bread on Sunday." },
      { speaker: "Ana", text: "我们在东京买了一台新相机" },
    ],
  });
  return memory;
}

describe("relevance: a score comparable across queries, and a pack that says when nothing is relevant", () => {
  it("scores the share of the query's content words a piece of evidence holds, whatever the query", () => {
    const terms = relevanceTerms("When did Ana go hiking with her sister?");
    assert.deepEqual(terms, ["ana", "go", "hik", "sister"]);
    assert.equal(termCoverage(terms, "Ana: my sister and I hiked all day"), 0.75);
    assert.equal(termCoverage(terms, "bread"), 0);
    assert.equal(termCoverage(relevanceTerms("hikes"), "we were hiking"), 1, "word forms meet");
    assert.equal(termCoverage(relevanceTerms("东京相机"), "在东京买了相机"), 2 / 3, "CJK pairs count as words");
    assert.equal(termCoverage([], "anything"), null);
  });

  it("every item carries its relevance; weak hits under the default cut are left out and counted", async (t) => {
    const memory = await openWithHistory(t);
    const pack = await memory.search(scope, "hiking with my sister in the Alps");
    assert.equal(pack.noRelevantEvidence, false);
    assert.ok(pack.items.length > 0);
    assert.match(pack.items[0]?.text ?? "", /sister/);
    for (const item of pack.items) {
      assert.ok(typeof item.relevance === "number" && item.relevance >= minScore, "nothing below the cut");
    }
    assert.equal(pack.relevance?.minScore, minScore);
    assert.equal(pack.relevance?.best, 1);
    // The dense channel brings every turn of this small scope; those sharing no word are cut.
    const all = await memory.search(scope, "hiking with my sister in the Alps", { minScore: 0 });
    assert.ok(
      all.items.some((item) => item.relevance === 0),
      "minScore 0 keeps everything retrieved",
    );
    assert.equal(pack.relevance?.cut, all.items.length - pack.items.length);
    assert.ok(!pack.items.some((item) => /sourdough/.test(item.text)));
  });

  it("a query about something the memory does not hold comes back empty and says so", async (t) => {
    const memory = await openWithHistory(t);
    const pack = await memory.search(scope, "What is the capital of Australia?");
    assert.equal(pack.noRelevantEvidence, true);
    assert.deepEqual(pack.items, []);
    assert.ok((pack.relevance?.cut ?? 0) > 0, "candidates were retrieved, and cut");
    assert.ok(pack.warnings.some((warning) => /no relevant evidence/.test(warning) && /minScore/.test(warning)));
    // The same query with the cut off returns the weak hits, each scored 0.
    const uncut = await memory.search(scope, "What is the capital of Australia?", { minScore: 0 });
    assert.equal(uncut.noRelevantEvidence, false);
    assert.ok(uncut.items.length > 0 && uncut.items.every((item) => item.relevance === 0));
    // A strict cut keeps only evidence holding every word.
    const strict = await memory.search(scope, "sister hiking", { minScore: 1 });
    assert.deepEqual(
      strict.items.map((item) => item.text),
      ["My sister and I went hiking in the Julian Alps last weekend."],
    );
    const chinese = await memory.search(scope, "东京的相机");
    assert.equal(chinese.items[0]?.text, "我们在东京买了一台新相机");
  });

  it("by default cuts nothing: every retrieved item comes back with its relevance", async (t) => {
    const memory = await openWithHistory(t, {});
    const pack = await memory.search(scope, "What is the capital of Australia?");
    assert.equal(pack.relevance?.minScore, 0);
    assert.equal(pack.noRelevantEvidence, false);
    assert.ok(pack.items.length > 0 && pack.items.every((item) => item.relevance === 0));
    assert.equal(pack.relevance?.best, 0, "the pack still says that nothing retrieved shares a word with the query");
  });

  it("rejects a minScore outside 0..1 with an InputError, and does not cut image-only queries", async (t) => {
    const memory = await openWithHistory(t);
    for (const minScore of [-0.1, 1.5, Number.NaN]) {
      await assert.rejects(memory.search(scope, "hiking", { minScore }), (error) => {
        assert.ok(error instanceof InputError);
        assert.equal(error.field, "minScore");
        return true;
      });
    }
    const pack = await memory.search(scope, { image: { data: await drawPng({ color: "#123" }) } }, { minScore: 1 });
    assert.equal(pack.relevance, undefined, "a query without words has no relevance to cut by");
  });
});
