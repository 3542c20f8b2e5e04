import assert from "node:assert/strict";
import { InputError } from "../../src/core/errors.ts";
import type { SearchFilters, VectorReplacement } from "../../src/store/records.ts";
import {
  assertClose,
  assertDescending,
  base,
  buildSessionWrite,
  defineGroup,
  embedImage,
  embedText,
  filterFixture,
  hour,
  ids,
  imageSpace,
  images,
  scopeA,
  scopeB,
  scopeC,
  sha256,
  spaces,
  textSpace,
} from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/**
 * Conformance of the channel index: what the retrieval channels search (BM25 over text and
 * image-derived text, cosine over text and image vectors) and the stored vectors they read.
 */
export const channelIndexConformance = defineGroup("channel index", (test) => {
  test("lexical search ranks by BM25, best first, within the limit", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "s1",
        turns: [
          { text: "giraffe giraffe giraffe at the zoo with a giraffe keeper" },
          { text: "one giraffe, many zebras, zebras everywhere" },
          { text: "we had soup for lunch" },
          {
            text: "nothing to see",
            images: [{ data: red, caption: "a sunset over the harbour", derivedText: "PIER 7" }],
          },
        ],
      }),
    );
    const [most, fewer, unrelated, pictured] = result.rawNodeIds as [string, string, string, string];
    const hits = await a.searchLexical("text", "Giraffe", { limit: 10 });
    assert.deepEqual(ids(hits), [most, fewer]);
    assertDescending(hits, "lexical");
    assert.equal((await a.searchLexical("text", "giraffe zebras", { limit: 1 })).length, 1, "the limit holds");
    assert.ok(!ids(await a.searchLexical("text", "giraffe zebras", { limit: 10 })).includes(unrelated));
    assert.deepEqual(ids(await a.searchLexical("text", "soup", { limit: 10 })), [unrelated]);
    // Image-derived text is its own field: captions and OCR are found there, not in the turn text.
    assert.deepEqual(ids(await a.searchLexical("imageText", "harbour sunset", { limit: 10 })), [pictured]);
    assert.deepEqual(ids(await a.searchLexical("imageText", "pier", { limit: 10 })), [pictured]);
    assert.deepEqual(await a.searchLexical("text", "harbour", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("imageText", "giraffe", { limit: 10 }), []);
    // User text is never parsed as query syntax.
    assert.deepEqual(ids(await a.searchLexical("text", 'giraffe" OR * NEAR(', { limit: 10 })), [most, fewer]);
    assert.deepEqual(await a.searchLexical("text", "   ", { limit: 10 }), []);
  });

  test("lexical search finds Chinese and Japanese words inside unspaced runs, and mixed CJK and English", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "cjk",
        turns: [
          { text: "我昨天在东京买了一台新相机，花了很多钱。" },
          { text: "今天的天气很好，我们去公园散步吧" },
          { text: "週末は京都で抹茶のケーキを食べました" },
          { text: "明日、東京タワーに行きます" },
          { text: "The meeting about the Kyoto project moved to Friday" },
          { text: "Ana bought a Leica相机 in 东京 last spring" },
          { text: "a photo", images: [{ data: red, caption: "夕焼けの海", derivedText: "出口 EXIT" }] },
        ],
      }),
    );
    const [camera, weather, matcha, tower, english, mixed, pictured] = result.rawNodeIds as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const found = async (query: string, field: "text" | "imageText" = "text") =>
      ids(await a.searchLexical(field, query, { limit: 10 }));
    // A word in the middle of a longer run, in Chinese and in Japanese (kanji, kana, the long-vowel mark).
    assert.deepEqual(new Set(await found("相机")), new Set([camera, mixed]));
    assert.deepEqual(await found("天气"), [weather]);
    assert.deepEqual(await found("抹茶"), [matcha]);
    assert.deepEqual(await found("タワー"), [tower]);
    assert.deepEqual(await found("京都"), [matcha]);
    // A whole question: its pairs meet the sentence that holds most of them first.
    assert.equal((await found("你在东京买了什么相机？"))[0], camera);
    // One character is a query too (it is indexed alone as well as in pairs).
    assert.ok((await found("茶")).includes(matcha));
    // Mixed scripts: the English word and the Chinese word each find their rows.
    assert.deepEqual(new Set(await found("Leica 东京")), new Set([mixed, camera]));
    assert.equal((await found("Leica 东京"))[0], mixed);
    assert.deepEqual(await found("Kyoto project"), [english]);
    // Image-derived text in Japanese is its own field, as in English.
    assert.deepEqual(await found("夕焼け", "imageText"), [pictured]);
    assert.deepEqual(await found("出口", "imageText"), [pictured]);
    assert.deepEqual(await found("夕焼け"), []);
    // A word that is not there finds nothing, even though its characters are common.
    assert.deepEqual(await found("北京"), []);
    // Forget takes the pairs and characters with the rows: nothing of the session is found any more.
    await forget(a, { session: "cjk" }, spaces);
    for (const query of ["相机", "抹茶", "茶", "タワー", "Leica"]) assert.deepEqual(await found(query), [], query);
    assert.deepEqual(await found("夕焼け", "imageText"), []);
  });

  test("lexical search reads a raw node's index text; the raw node keeps its own text", async (store) => {
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "s1",
        turns: [
          { speaker: "Ana", text: "Yes, last week!", indexText: "Ana: Yes, last week! | went parade Sunday" },
          { speaker: "Bo", text: "we had soup for lunch" },
        ],
      }),
    );
    const [answer] = result.rawNodeIds as [string, string];
    assert.deepEqual(ids(await a.searchLexical("text", "Did Ana go to the parade?", { limit: 10 })), [answer]);
    const [node] = await a.readRawNodes({ ids: [answer] });
    assert.equal(node?.text, "Yes, last week!", "the evidence is the turn as said, not its index text");
    assert.deepEqual(ids(await a.searchLexical("text", "soup", { limit: 10 })).length, 1);
  });

  test("lexical scores come from the tenant's own rows: another tenant's words change no score", async (store) => {
    const { red, blue } = await images();
    const turns = [
      { text: "the otter swam past the old mill", images: [{ data: blue, caption: "an otter at the mill" }] },
      { text: "an otter and a heron by the mill pond", images: [{ data: red, caption: "a heron" }] },
      { text: "bread from the mill bakery" },
    ];
    const query = "otter mill heron";
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "s", turns }));
    const alone = await a.searchLexical("text", query, { limit: 10 });
    const aloneImages = await a.searchLexical("imageText", query, { limit: 10 });
    assert.equal(alone.length, 3);
    assert.equal(aloneImages.length, 2);
    // Another tenant writes many rows using the query's words (in different proportions), and
    // image text too: under shared statistics every IDF and the average length would move.
    const c = store.forScope(scopeC);
    for (let session = 0; session < 4; session++) {
      await c.commitSession(
        await buildSessionWrite({
          key: `c${session}`,
          turns: Array.from({ length: 10 }, (_, turn) => ({
            text: turn % 3 === 0 ? "otter otter otter" : `heron number ${turn} on a very long winding river bank`,
            images: turn === 0 ? [{ data: red, caption: "otter otter mill" }] : [],
          })),
        }),
      );
    }
    assert.deepEqual(await a.searchLexical("text", query, { limit: 10 }), alone, "tenant C's rows moved A's scores");
    assert.deepEqual(await a.searchLexical("imageText", query, { limit: 10 }), aloneImages, "and its image text");
    const cHits = await c.searchLexical("text", query, { limit: 10 });
    assert.ok(cHits.length > 0 && !ids(cHits).some((id) => ids(alone).includes(id)), "each tenant finds its own");
  });

  test("lexical search respects session, time and speaker filters", async (store) => {
    const a = store.forScope(scopeA);
    const { ana1, bo1, ana2, ana3 } = await filterFixture(a);
    const search = (filters: SearchFilters) =>
      a.searchLexical("text", "marmalade", { limit: 10, filters }).then((hits) => new Set(ids(hits)));
    assert.deepEqual(await search({}), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["day-1"] }), new Set([ana1, bo1]));
    assert.deepEqual(await search({ sessionKeys: ["day-2", "day-3"] }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["no-such-session"] }), new Set());
    assert.deepEqual(await search({ speakers: ["Bo"] }), new Set([bo1]));
    assert.deepEqual(await search({ timeFromMs: base + 24 * hour }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ timeToMs: base + 24 * hour }), new Set([ana1, bo1, ana2]), "bounds are inclusive");
    assert.deepEqual(
      await search({ timeFromMs: base + 24 * hour, timeToMs: base + 24 * hour, speakers: ["Ana"] }),
      new Set([ana2]),
    );
    assert.deepEqual(await search({ sessionKeys: ["day-1"], speakers: ["Ana"] }), new Set([ana1]));
  });

  test("vectorSpacesInUse names the spaces holding this scope's vectors, and only this scope's", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    assert.deepEqual(await a.vectorSpacesInUse(), [], "an empty scope uses no space");
    await a.commitSession(await buildSessionWrite({ key: "words", turns: [{ text: "only words here" }] }));
    assert.deepEqual(await a.vectorSpacesInUse(), [textSpace], "text only: no image vector yet");
    await a.commitSession(
      await buildSessionWrite({ key: "picture", turns: [{ text: "a picture", images: [{ data: red }] }] }),
    );
    assert.deepEqual(
      (await a.vectorSpacesInUse()).map((space) => space.name).sort(),
      [imageSpace.name, textSpace.name].sort(),
    );
    assert.deepEqual(await store.forScope(scopeC).vectorSpacesInUse(), [], "another tenant's vectors are not seen");
  });

  test("replaceVectors swaps every vector of the scope into new spaces, atomically, and leaves raw evidence alone", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    const written = await a.commitSession(
      await buildSessionWrite({
        key: "s",
        turns: [
          { text: "the heron in the reeds", images: [{ data: red, caption: "a heron" }] },
          { text: "", images: [{ data: blue, caption: "only a picture" }] },
          { text: "soup for lunch" },
        ],
      }),
    );
    const [heron, picture, soup] = written.rawNodeIds as [string, string, string];
    await b.commitSession(await buildSessionWrite({ key: "b", turns: [{ text: "the heron again" }] }));
    const evidence = async () => ({
      nodes: await a.readRawNodes({ sessionId: written.session.id }),
      sessions: await a.readSessions({}),
      blob: Buffer.from((await a.readBlob(sha256(red))).data).toString("base64"),
      lexical: await a.searchLexical("text", "heron soup", { limit: 10 }),
    });
    const before = await evidence();
    const status = await a.indexStatus();
    const newText = { name: "text:reembed-test-8", kind: "text", dimensions: 8 } as const;
    const newImage = { name: "image:reembed-test-4", kind: "image", dimensions: 4 } as const;
    const unit = (index: number, dimensions: number) =>
      Float32Array.from({ length: dimensions }, (_, position) => (position === index ? 1 : 0));
    const replacement: VectorReplacement = {
      spaces: [newText, newImage],
      rawNodes: [
        {
          rawNodeId: heron,
          textVectors: { [newText.name]: unit(0, 8) },
          imageVectors: [{ [newImage.name]: unit(0, 4) }],
        },
        { rawNodeId: picture, textVectors: {}, imageVectors: [{ [newImage.name]: unit(1, 4) }] },
        { rawNodeId: soup, textVectors: { [newText.name]: unit(2, 8) }, imageVectors: [] },
      ],
      audit: { action: "reembed", subject: "vectors", details: { test: true } },
    };

    // A write that misses a raw node, or names another scope's, is refused and changes nothing.
    const foreign = (await b.readRawNodes({ sessionId: (await b.readSessions({}))[0]?.id ?? "" }))[0]?.id ?? "";
    for (const rawNodes of [
      replacement.rawNodes.slice(1),
      [...replacement.rawNodes.slice(1), { rawNodeId: foreign, textVectors: {}, imageVectors: [] }],
    ]) {
      await assert.rejects(
        a.replaceVectors({ ...replacement, rawNodes }),
        (error: unknown) => error instanceof InputError,
      );
      assert.deepEqual(
        (await a.vectorSpacesInUse()).map((space) => space.name),
        [imageSpace.name, textSpace.name],
      );
    }

    assert.deepEqual(await a.replaceVectors(replacement), { vectors: 4 });
    assert.deepEqual(
      (await a.vectorSpacesInUse()).map((space) => space.name),
      [newImage.name, newText.name],
      "only the new spaces hold the scope's vectors",
    );
    assert.deepEqual(await a.searchVectors(textSpace.name, await embedText("heron"), { limit: 10 }), []);
    assert.deepEqual(ids(await a.searchVectors(newText.name, unit(2, 8), { limit: 1 })), [soup]);
    assert.deepEqual(ids(await a.searchVectors(newImage.name, unit(1, 4), { limit: 1 })), [picture]);
    assert.deepEqual(
      [...(await a.readVectors(newText.name, [heron, picture, soup])).keys()].sort(),
      [heron, soup].sort(),
    );
    assert.deepEqual(await evidence(), before, "raw nodes, sessions, blobs and lexical rows are as they were");
    const after = await a.indexStatus();
    assert.ok(after.needsRebuild && after.version > status.version, "the index, built on old vectors, is marked");
    const [audit] = await a.readAudit({ limit: 1 });
    assert.equal(audit?.action, "reembed");
    assert.deepEqual(
      (await b.vectorSpacesInUse()).map((space) => space.name),
      [textSpace.name],
      "another scope keeps its own",
    );
    assert.equal((await b.searchVectors(textSpace.name, await embedText("the heron again"), { limit: 1 })).length, 1);
  });

  test("vector search ranks by cosine similarity, best first, within the limit", async (store) => {
    const a = store.forScope(scopeA);
    const texts = [
      "the lighthouse keeper painted the door blue",
      "a recipe for lemon drizzle cake",
      "lighthouse tours start at noon",
      "quarterly tax forms are due",
    ];
    const result = await a.commitSession(
      await buildSessionWrite({ key: "s1", turns: texts.map((text) => ({ text })) }),
    );
    const [keeper, cake] = result.rawNodeIds as [string, string];
    const exact = await a.searchVectors(textSpace.name, await embedText(texts[0] as string), { limit: 10 });
    assert.equal(exact.length, 4);
    assert.equal(exact[0]?.id, keeper, "the identical text is nearest");
    assert.ok(Math.abs((exact[0]?.score ?? 0) - 1) < 1e-4, `identical vector scores ~1, got ${exact[0]?.score}`);
    assertDescending(exact, "vector");
    assert.deepEqual(new Set(ids(exact)), new Set(result.rawNodeIds));
    const top2 = await a.searchVectors(textSpace.name, await embedText("lemon drizzle cake recipe"), { limit: 2 });
    assert.equal(top2.length, 2);
    assert.equal(top2[0]?.id, cake);
  });

  test("vector search respects session, time and speaker filters", async (store) => {
    const a = store.forScope(scopeA);
    const { ana1, bo1, ana2, ana3 } = await filterFixture(a);
    const query = await embedText("marmalade on toast");
    const search = (filters: SearchFilters) =>
      a.searchVectors(textSpace.name, query, { limit: 10, filters }).then((hits) => new Set(ids(hits)));
    assert.deepEqual(await search({}), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["day-1"] }), new Set([ana1, bo1]));
    assert.deepEqual(await search({ sessionKeys: ["day-2", "day-3"] }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ sessionKeys: ["no-such-session"] }), new Set());
    assert.deepEqual(await search({ speakers: ["Bo"] }), new Set([bo1]));
    assert.deepEqual(await search({ speakers: ["Ana", "Bo"] }), new Set([ana1, bo1, ana2, ana3]));
    assert.deepEqual(await search({ timeFromMs: base + 24 * hour }), new Set([ana2, ana3]));
    assert.deepEqual(await search({ timeToMs: base + 24 * hour }), new Set([ana1, bo1, ana2]), "bounds are inclusive");
    assert.deepEqual(
      await search({ timeFromMs: base + 24 * hour, timeToMs: base + 24 * hour, speakers: ["Ana"] }),
      new Set([ana2]),
    );
    // A filter narrows before ranking: the limit counts matching rows, not rows overall.
    const limited = await a.searchVectors(textSpace.name, query, { limit: 1, filters: { speakers: ["Bo"] } });
    assert.deepEqual(ids(limited), [bo1]);
  });

  test("image vectors map back to raw nodes, each raw node once", async (store) => {
    const { red, blue, green, yellow } = await images();
    const a = store.forScope(scopeA);
    const result = await a.commitSession(
      await buildSessionWrite({
        key: "album",
        turns: [
          { text: "two photos", images: [{ data: red }, { data: blue }] },
          { text: "one photo", images: [{ data: green }] },
          { text: "no photo here" },
          { text: "the blue one again", images: [{ data: blue }] },
        ],
      }),
    );
    const [pair, single, , again] = result.rawNodeIds as [string, string, string, string];
    const byBlue = await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 });
    assert.deepEqual(new Set(ids(byBlue)), new Set([pair, single, again]), "only raw nodes with images, by id");
    assert.equal(new Set(ids(byBlue)).size, byBlue.length, "a raw node with two images appears once");
    assert.ok(
      ids(byBlue).indexOf(single) === 2,
      `both raw nodes holding the blue image rank above the green one: ${ids(byBlue)}`,
    );
    assert.ok(Math.abs((byBlue[0]?.score ?? 0) - 1) < 1e-4);
    const byGreen = await a.searchVectors(imageSpace.name, await embedImage(green), { limit: 1 });
    assert.deepEqual(ids(byGreen), [single]);
    // An image only another scope holds finds nothing here.
    const b = store.forScope(scopeB);
    await b.commitSession(await buildSessionWrite({ key: "b", turns: [{ text: "b", images: [{ data: yellow }] }] }));
    const byYellow = await a.searchVectors(imageSpace.name, await embedImage(yellow), { limit: 10 });
    assert.ok(ids(byYellow).every((id) => result.rawNodeIds.includes(id)));
  });

  test("readVectors returns the scope's stored text vectors; missing, foreign and vectorless raw nodes are omitted", async (store) => {
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({
      key: "s",
      turns: [{ text: "a tern dives" }, { text: "   " }, { text: "gulls" }],
    });
    const mine = await a.commitSession(write);
    const theirs = await store
      .forScope(scopeB)
      .commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "a tern dives" }] }));
    const [tern, blank, gulls] = mine.rawNodeIds as [string, string, string];
    const vectors = await a.readVectors(textSpace.name, [gulls, "rn_unknown", tern, blank, ...theirs.rawNodeIds]);
    assert.deepEqual([...vectors.keys()].sort(), [gulls, tern].sort(), "only this scope's raw nodes with a vector");
    assertClose(vectors.get(tern) ?? null, write.rawNodes[0]?.textVectors[textSpace.name] ?? null, "tern");
    assertClose(vectors.get(gulls) ?? null, await embedText("gulls"), "gulls");
    assert.deepEqual(await a.readVectors("text:no-such-space", [tern]), new Map());
    assert.deepEqual(await a.readVectors(textSpace.name, []), new Map());
  });
});
