import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  contextualTexts,
  dateWords,
  defaultIndexTextConfig,
  plainIndexTextConfig,
} from "../../src/store/index-text.ts";

const may8 = Date.UTC(2023, 4, 8, 13, 56);
const turns = [
  { speaker: "Bo", text: "Did you go to the Pride parade on Sunday?", imageText: "", timeMs: may8 },
  { speaker: "Ana", text: "Yes, last week!", imageText: "", timeMs: may8 + 1000 },
  { speaker: "Ana", text: "", imageText: "a crowd with rainbow flags", timeMs: may8 + 2000 },
  { speaker: "Bo", text: "", imageText: "", timeMs: may8 + 3000 },
];

describe("contextual index text", () => {
  it("carries who said a turn, when, and what the turns around it are about", () => {
    const [question, answer, picture, empty] = contextualTexts(turns, defaultIndexTextConfig);
    assert.ok(answer?.startsWith("Ana: Yes, last week!"), answer);
    assert.match(answer ?? "", /Monday 8 May 2023 2023-05-08/);
    // The answer alone never names the parade; its neighbour's gist does.
    assert.match(answer ?? "", /pride parade sunday/);
    assert.match(answer ?? "", /crowd rainbow flags/, "the next turn's image is part of its gist");
    assert.ok(picture?.startsWith("Ana: a crowd with rainbow flags"), "an image-only turn is found by its image");
    assert.doesNotMatch(question ?? "", /Ana:/, "a neighbour contributes its words, not its speaker");
    assert.equal(empty, "", "a turn with nothing of its own is not made searchable by its neighbours");
  });

  it("by default carries the turn's own words twice, its speaker, date and images, and eight words of each neighbour", () => {
    const [, answer] = contextualTexts(turns, defaultIndexTextConfig);
    assert.equal(
      answer,
      "Ana: Yes, last week! | Yes, last week! | Monday 8 May 2023 2023-05-08 | go pride parade sunday crowd rainbow flags",
    );
    const [, alone] = contextualTexts(turns, { ...defaultIndexTextConfig, neighbours: 0 });
    assert.equal(alone, "Ana: Yes, last week! | Yes, last week! | Monday 8 May 2023 2023-05-08");
  });

  it("switched off, a turn is searchable by its own text (or its image's, when it has no text)", () => {
    assert.deepEqual(contextualTexts(turns, plainIndexTextConfig), [
      "Did you go to the Pride parade on Sunday?",
      "Yes, last week!",
      "a crowd with rainbow flags",
      "",
    ]);
  });

  it("writes dates in words and ISO form, in UTC", () => {
    assert.equal(dateWords(Date.UTC(2024, 0, 31, 23, 30)), "Wednesday 31 January 2024 2024-01-31");
    assert.equal(dateWords(Number.NaN), "");
  });
});
