import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildEvidencePrompt, imagesToShow, promptText } from "../../src/bench/answer/evidence-prompt.ts";
import type { ImageRef, RawNode } from "../../src/store/records.ts";

function image(hash: string | null, caption: string | null, derivedText: string | null = null): ImageRef {
  return {
    ordinal: 0,
    hash,
    mediaType: "image/png",
    bytes: 1,
    width: 1,
    height: 1,
    caption,
    derivedText,
    origin: null,
  };
}

function node(id: string, text: string, images: ImageRef[] = []): RawNode {
  return {
    id,
    sessionId: "s1",
    sessionKey: "may",
    turn: 0,
    speaker: "Ana",
    role: null,
    text,
    time: "2024-05-03T18:30:00Z",
    source: null,
    uri: null,
    images,
    metadata: {},
  };
}

const pixels = { data: Uint8Array.of(1, 2, 3), mediaType: "image/png" };

describe("imagesToShow", () => {
  it("takes distinct images with pixels in pack order, up to the limit", () => {
    const nodes = [
      node("a", "one", [image("h1", null), image(null, "gone")]),
      node("b", "two", [image("h1", null), image("h2", null), image("h3", null)]),
    ];
    assert.deepEqual(imagesToShow(nodes, 2), ["h1", "h2"]);
    assert.deepEqual(imagesToShow(nodes, 0), []);
  });
});

describe("buildEvidencePrompt", () => {
  it("places each shown image after its turn, once, and describes the rest", () => {
    const messages = buildEvidencePrompt({
      question: "What did the menu say?",
      nodes: [
        node("a", "Dinner!", [image("h1", "a menu", "SOUP 4€")]),
        node("b", "", [image("h1", "a menu"), image(null, "a sunset"), image("h2", null)]),
      ],
      images: new Map([["h1", pixels]]),
      queryImage: null,
      vision: true,
    });
    const user = messages[1]?.content;
    assert.ok(Array.isArray(user));
    assert.deepEqual(
      user.map((part) => part.type),
      ["text", "image", "text"],
    );
    const text = promptText(messages);
    assert.match(
      text,
      /\[1\] Fri 2024-05-03 18:30 UTC · Ana: Dinner!\n {4}image 1, shown next; caption: "a menu"; text in the image: "SOUP 4€"/,
    );
    assert.match(text, /\[2\] Fri 2024-05-03 18:30 UTC · Ana: \(shares an image\)\n {4}image 1 again/);
    assert.match(text, /image \(not shown\); caption: "a sunset"/);
    assert.match(text, /image \(not shown\): no description/);
    assert.match(text, /Question: What did the menu say\?\nShort answer:$/);
  });

  it("says so when nothing was retrieved, and keeps a text-only reader to one string", () => {
    const messages = buildEvidencePrompt({
      question: "Q?",
      nodes: [],
      images: new Map(),
      queryImage: pixels,
      vision: false,
    });
    const user = messages[1]?.content;
    assert.equal(typeof user, "string");
    assert.match(String(user), /Evidence: none was found\./);
    assert.match(String(user), /refers to an image that cannot be shown/);
  });
});
