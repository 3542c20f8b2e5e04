import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type DocumentTokens, tokenizeTexts, tokenizeWhole } from "../../src/store/sqlite/lexical-tokens.ts";
import { seededRandom } from "../support/random.ts";

function plain(tokens: readonly DocumentTokens[]) {
  return tokens.map(({ frequencies, length }) => ({ frequencies: [...frequencies].sort(), length }));
}

/** Characters chosen to sit on every side of the cut: ASCII separators, letters FTS5 folds, marks, scripts, symbols. */
const alphabet = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  ..." \t\n\r.,;:!?'\"-_()[]{}<>/\\@#$%^&*+=|~`",
  ..."éÉèçñÑöÖßøÅæŒ",
  "\u0301", // combining acute accent
  "\u0308", // combining diaeresis
  "\u00a0", // no-break space
  "\u200d", // zero-width joiner
  "\u2014", // em dash
  "\u00ab",
  "\u00bb",
  ..."东京塔猫相机タワーПриветмир",
  "😀",
  "ﬁ", // a ligature NFKC would split
  "\u00b2", // superscript two
];

function randomText(random: () => number, length: number): string {
  let text = "";
  for (let index = 0; index < length; index++) text += alphabet[Math.floor(random() * alphabet.length)];
  return text;
}

describe("the lexical cut by pieces", () => {
  it("gives exactly FTS5's whole-text cut on real sentences, stems and folded letters", () => {
    const texts = [
      "I locked the red bike outside the library.",
      "Running, runs, ran: the runner's running shoes!",
      "Ana's zebras, at 5pm — café crème, naïve résumé 42",
      "cafe\u0301 and cafe\u0301s; ÉCOLE école ecole",
      "2024-05-08T13:56:00Z was the day (see https://example.com/a_b?c=d&e=f)",
      "Leica相机 东京塔 タワー! Привет, мир.",
      "ﬁsh ﬁshing x² H₂O 😀😀 don't can't won't",
      "",
      "   ",
      "a".repeat(200),
      `${"longword".repeat(20)} ${"Ünïcödé".repeat(15)}`,
    ];
    // Twice: the second time every piece comes from the kept pieces.
    assert.deepEqual(plain(tokenizeTexts(texts)), plain(tokenizeWhole(texts)));
    assert.deepEqual(plain(tokenizeTexts(texts)), plain(tokenizeWhole(texts)));
  });

  it("gives exactly FTS5's whole-text cut on random text over separators, marks and scripts", () => {
    const random = seededRandom(20261203);
    const texts = Array.from({ length: 400 }, () => randomText(random, 1 + Math.floor(random() * 120)));
    assert.deepEqual(plain(tokenizeTexts(texts)), plain(tokenizeWhole(texts)));
    assert.deepEqual(plain(tokenizeTexts(texts.slice(0, 50))), plain(tokenizeWhole(texts.slice(0, 50))));
  });
});
