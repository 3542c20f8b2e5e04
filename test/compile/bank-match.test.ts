import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { matchBank, prepareBank } from "../../src/compile/bank-match.ts";
import { PreparedBanks } from "../../src/compile/compiled-search.ts";
import { normalise } from "../../src/core/vectors.ts";
import type { BankProgram } from "../../src/store/bank-records.ts";

const vector = (...values: number[]) => normalise(Float32Array.from(values));
const bank = [
  { id: "bike", question: "What colour is the bike Rocket?", vector: vector(1, 0, 0), imageVector: vector(1, 0) },
  { id: "dog", question: "What does Biscuit the corgi eat?", vector: vector(0, 1, 0), imageVector: null },
  { id: "trip", question: "Where did Ana go hiking in May?", vector: vector(0, 0, 1), imageVector: null },
];

describe("bank matching (similarity-weighted, normalised RRF)", () => {
  it("scores a question asked exactly as banked 1, ranked first by every channel", () => {
    const [best, next] = matchBank(
      { text: bank[0]?.question ?? "", vector: vector(1, 0, 0), imageVector: undefined },
      bank,
      60,
    );
    assert.equal(best?.id, "bike");
    assert.ok(Math.abs((best?.score ?? 0) - 1) < 1e-6, `score ${best?.score}`);
    assert.ok((next?.score ?? 0) < 0.5, "the others stay far below");
    assert.deepEqual(Object.keys(best?.channels ?? {}), ["bm25", "dense"]);
  });

  it("keeps an unrelated best match low instead of scoring rank 1 as a match", () => {
    const matches = matchBank(
      { text: "quarterly tax forms", vector: vector(0.1, 0.1, -1), imageVector: undefined },
      bank,
      60,
    );
    assert.ok(
      matches.every((match) => match.score < 0.2),
      JSON.stringify(matches),
    );
  });

  it("averages over the channels the query uses: a query image adds the image channel", () => {
    const text = { text: "What colour is the bike?", vector: vector(1, 0.2, 0) };
    const withoutImage = matchBank({ ...text, imageVector: undefined }, bank, 60)[0];
    const withImage = matchBank({ ...text, imageVector: vector(1, 0) }, bank, 60)[0];
    assert.equal(withImage?.id, "bike");
    assert.ok(withImage?.channels.image, "the image channel took part");
    assert.ok((withImage?.score ?? 0) > (withoutImage?.score ?? 0), "a matching image raises the score");
    assert.ok((withImage?.score ?? 0) <= 1);
  });

  it("returns nothing for a query with no words and no vectors", () => {
    assert.deepEqual(matchBank({ text: "the and of", vector: undefined, imageVector: undefined }, bank, 60), []);
  });

  it("matches a prepared bank exactly as the bank itself, and prepares a scope's bank again only when its programs change", () => {
    const queries = [
      { text: "what colour was Rocket the bike", vector: vector(0.9, 0.1, 0), imageVector: vector(1, 0) },
      { text: "corgi food", vector: undefined, imageVector: undefined },
      { text: "hiking trip in May with Ana", vector: vector(0, 0.2, 1), imageVector: undefined },
    ];
    for (const query of queries) assert.deepEqual(matchBank(query, prepareBank(bank), 60), matchBank(query, bank, 60));

    const banks = new PreparedBanks(2);
    const programs = (ids: string[]) => ids.map((id) => ({ id }) as BankProgram);
    let prepared = 0;
    const candidates = (ids: string[]) => () => {
      prepared++;
      return bank.filter((entry) => ids.includes(entry.id));
    };
    const first = banks.get("acme/ana", programs(["bike", "dog"]), candidates(["bike", "dog"]), "text");
    assert.equal(banks.get("acme/ana", programs(["bike", "dog"]), candidates(["bike", "dog"]), "text"), first);
    assert.equal(prepared, 1, "the same programs: prepared once");
    const retired = banks.get("acme/ana", programs(["bike"]), candidates(["bike"]), "text");
    assert.notEqual(retired, first);
    assert.deepEqual(
      retired.entries.map((entry) => entry.id),
      ["bike"],
      "a retired program leaves the match",
    );
    banks.get("acme/ana", programs(["bike"]), candidates(["bike"]), "other-space");
    assert.equal(prepared, 3, "another vector space prepares again");
  });
});
