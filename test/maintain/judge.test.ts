import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildDigest } from "../../src/maintain/digest.ts";
import { ChatJudge, ComparatorJudge, type JudgeView } from "../../src/maintain/judge.ts";
import type { ChatModel } from "../../src/models/provider.ts";

const day = 86_400_000;

function view(text: string, vector: number[], options: { day?: number; image?: number[] } = {}): JudgeView {
  const norm = Math.hypot(...vector);
  const time = Date.UTC(2024, 0, 1) + (options.day ?? 0) * day;
  return {
    id: text.slice(0, 12),
    routingText: text,
    digest: buildDigest([{ speaker: "Ana", text, imageText: [] }]),
    vector: Float32Array.from(vector.map((value) => value / norm)),
    imageVector: options.image ? Float32Array.from(options.image) : null,
    timeStartMs: time,
    timeEndMs: time,
  };
}

describe("the model-free relation judge", () => {
  const judge = new ComparatorJudge();

  it("calls a restatement of the same fact `same`, confidently enough to merge", async () => {
    const old = view("Ana adopted a corgi named Biscuit in Lisbon.", [1, 0.1, 0]);
    const again = view("Ana adopted a corgi named Biscuit in Lisbon.", [1, 0.12, 0], { day: 3 });
    const judgement = await judge.judge(again, old);
    assert.equal(judgement.relation, "same");
    assert.ok(judgement.confidence >= 0.7, `confidence ${judgement.confidence}`);
  });

  it("calls a later state of the same entity `update`", async () => {
    const old = view("Ana lives in Lisbon with her corgi Biscuit.", [1, 0.3, 0]);
    const later = view("Ana moved and now lives in Porto with her corgi Biscuit.", [1, 0.5, 0.1], { day: 30 });
    const judgement = await judge.judge(later, old);
    assert.equal(judgement.relation, "update");
    assert.ok(judgement.confidence >= 0.7, `confidence ${judgement.confidence}`);
    assert.equal(judgement.features.stateChange, true);
  });

  it("keeps similar-looking records about different things `distinct` or `uncertain`, never `same`", async () => {
    const red = view("Ana bought a red bicycle at the market.", [1, 0.2, 0], { image: [1, 0, 0] });
    const blue = view("Ana bought a red bicycle at the market.", [1, 0.21, 0], { day: 2, image: [0, 1, 0] });
    const byImage = await judge.judge(blue, red);
    assert.equal(byImage.relation, "distinct", "identical text, disagreeing images");
    const other = view("Bruno repaired the boat engine in Oslo.", [0.1, 1, 0], { day: 2 });
    assert.equal((await judge.judge(other, red)).relation, "distinct");
    const earlier = view("Ana moved to Porto.", [1, 0.4, 0], { day: -5 });
    const notLater = await judge.judge(earlier, view("Ana lives in Lisbon.", [1, 0.3, 0]));
    assert.notEqual(notLater.relation, "update", "an earlier record cannot update a later one");
    assert.notEqual(notLater.relation, "same");
  });
});

describe("the LLM relation judge", () => {
  const views = [
    view("Ana lives in Lisbon.", [1, 0, 0]),
    view("Ana now lives in Porto.", [1, 0.2, 0], { day: 9 }),
  ] as const;

  function chat(answer: () => Promise<unknown>): ChatModel {
    return {
      id: "fake-chat",
      provider: "test",
      supportsImages: false,
      complete: async () => "",
      completeJson: async (_messages, schema) => schema.parse(await answer()),
    };
  }

  it("uses a valid structured answer", async () => {
    const judge = new ChatJudge(chat(async () => ({ relation: "update", confidence: 0.9 })));
    const judgement = await judge.judge(views[1], views[0]);
    assert.deepEqual([judgement.relation, judgement.confidence, judgement.warning], ["update", 0.9, undefined]);
  });

  it("turns a failed call or an invalid answer into `uncertain` with a warning, never a merge", async () => {
    for (const answer of [
      async () => {
        throw new Error("connection refused");
      },
      async () => ({ relation: "merge-them", confidence: 1 }),
      async () => ({ relation: "same", confidence: 7 }),
    ]) {
      const judgement = await new ChatJudge(chat(answer)).judge(views[1], views[0]);
      assert.equal(judgement.relation, "uncertain");
      assert.equal(judgement.confidence, 0);
      assert.match(judgement.warning ?? "", /relation judge chat:fake-chat failed/);
    }
  });
});
