import assert from "node:assert/strict";
import sharp from "sharp";
import { ConflictError } from "../../src/core/errors.ts";
import { meanVector } from "../../src/core/vectors.ts";
import { defaultMaintenanceConfig } from "../../src/maintain/config.ts";
import { forgetWithRepair } from "../../src/maintain/forget.ts";
import { IndexVersionConflict } from "../../src/store/index-records.ts";
import type { RawNode, RawNodeWrite, ScopeStats, SessionWrite } from "../../src/store/records.ts";
import type { ForgetRequest } from "../../src/store/store.ts";
import {
  asBatch,
  assertClose,
  assertNoRawText,
  auditActions,
  base,
  buildSessionWrite,
  defineGroup,
  embedImage,
  embedText,
  expectConflict,
  expectNotFound,
  hour,
  ids,
  imageSpace,
  images,
  observe,
  scopeA,
  scopeB,
  scopeC,
  sha256,
  spaces,
  textEmbedder,
  textSpace,
} from "./conformance-support.ts";
import { findSessionByKey, forget, getRawNode, getSession, getThumbnail, listEntries } from "./scoped-reads.ts";

/**
 * Conformance of the cold store: raw evidence (sessions, raw nodes, images, audit), written once
 * by `commitSession` and removed only by an audited `forget`, always within one scope.
 */
export const coldStoreConformance = defineGroup("cold store", (test) => {
  test("commit then read back session, raw nodes, images, entry and audit", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({
      key: "trip-1",
      timeMs: base,
      source: "chat-export",
      turns: [
        {
          speaker: "Ana",
          role: "user",
          text: "We rented a red kayak at the lake",
          uri: "msg://1",
          metadata: { mood: "happy", tags: ["lake"] },
          images: [
            { data: red, caption: "a red kayak", derivedText: "RENTAL 42", origin: "img/kayak.png" },
            { data: blue, caption: null, origin: null },
          ],
        },
        { speaker: "Bo", role: "assistant", text: "Sounds lovely, how cold was the water?", timeMs: base + hour },
      ],
    });
    const result = await a.commitSession(write);
    assert.equal(result.duplicate, false);
    assert.equal(result.rawNodeIds.length, 2);
    assert.equal(new Set(result.rawNodeIds).size, 2, "raw node ids are distinct");
    assert.equal(result.session.key, "trip-1");
    assert.equal(result.session.time, new Date(base).toISOString());
    assert.equal(result.session.source, "chat-export");
    assert.equal(result.session.turnCount, 2);
    assert.equal(result.session.imageCount, 2);
    assert.equal(result.session.contentHash, write.contentHash);

    assert.deepEqual(await getSession(a, result.session.id), result.session);
    assert.deepEqual(await findSessionByKey(a, "trip-1"), result.session);
    assert.equal(await findSessionByKey(a, "trip-2"), null);
    assert.deepEqual(await a.readSessions({}), [result.session]);

    const [firstId, secondId] = result.rawNodeIds as [string, string];
    const first = await getRawNode(a, firstId);
    assert.deepEqual(
      { ...first, images: undefined },
      {
        id: firstId,
        sessionId: result.session.id,
        sessionKey: "trip-1",
        turn: 0,
        speaker: "Ana",
        role: "user",
        text: "We rented a red kayak at the lake",
        time: new Date(base).toISOString(),
        source: "chat-export",
        uri: "msg://1",
        images: undefined,
        metadata: { mood: "happy", tags: ["lake"] },
      },
    );
    assert.deepEqual(first.images, [
      {
        ordinal: 0,
        hash: sha256(red),
        mediaType: "image/png",
        bytes: red.length,
        width: 96,
        height: 96,
        caption: "a red kayak",
        derivedText: "RENTAL 42",
        origin: "img/kayak.png",
      },
      {
        ordinal: 1,
        hash: sha256(blue),
        mediaType: "image/png",
        bytes: blue.length,
        width: 96,
        height: 96,
        caption: null,
        derivedText: null,
        origin: null,
      },
    ]);
    const second = await getRawNode(a, secondId);
    assert.equal(second.text, "Sounds lovely, how cold was the water?");
    assert.equal(second.time, new Date(base + hour).toISOString());
    assert.deepEqual(second.images, []);
    assert.deepEqual(second.metadata, {});

    assert.deepEqual(ids(await a.readRawNodes({ ids: [secondId, "rn_unknown", firstId] })), [secondId, firstId]);
    assert.deepEqual(ids(await a.readRawNodes({ sessionId: result.session.id })), [firstId, secondId]);

    const blob = await a.readBlob(sha256(red));
    assert.deepEqual(Buffer.from(blob.data), red);
    assert.deepEqual(blob.record, {
      hash: sha256(red),
      mediaType: "image/png",
      bytes: red.length,
      width: 96,
      height: 96,
    });
    const thumbnail = write.blobs.find((b) => b.hash === sha256(red))?.thumbnail;
    assert.deepEqual(Buffer.from(await getThumbnail(a, sha256(red))), Buffer.from(thumbnail ?? []));

    const entries = await listEntries(a);
    assert.equal(entries.length, 1);
    assert.deepEqual([entries[0]?.id], result.entryIds);
    assert.deepEqual(entries[0]?.sessions, [write.key]);
    assert.equal(entries[0]?.status, "active");
    assert.match(entries[0]?.routingText ?? "", /Ana/);
    assert.equal(entries[0]?.timeStart, new Date(base).toISOString());
    assert.equal(entries[0]?.timeEnd, new Date(base + hour).toISOString());
    assert.deepEqual(entries[0]?.pointers, result.rawNodeIds);

    const audit = await a.readAudit();
    assert.equal(audit.length, 2, "the session and the index action that placed it");
    assert.equal(audit[0]?.action, auditActions.add);
    assert.equal(audit[0]?.subject, result.session.id);
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 2, images: 2, entries: 1, auditEvents: 2 });
  });

  test("a duplicate commit (same key, same content hash) writes nothing and returns the stored session", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({
      key: "s1",
      turns: [{ speaker: "Ana", text: "my bike is red", images: [{ data: red, caption: "bike" }] }],
    });
    const first = await a.commitSession(write);
    const before = await observe(a);
    const again = await a.commitSession(write);
    assert.equal(again.duplicate, true);
    assert.deepEqual(again.session, first.session);
    assert.deepEqual(again.rawNodeIds, first.rawNodeIds);
    assert.deepEqual(again.entryIds, [], "a duplicate changes no entry");
    assert.deepEqual(await observe(a), before, "a duplicate commit adds no rows and no audit event");
  });

  test("concurrent commits of one new key: same content is a duplicate, other content a conflict", async (store) => {
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({ key: "retry", turns: [{ text: "sent twice by a retrying client" }] });
    const results = await Promise.all([a.commitSession(write), a.commitSession(write)]);
    assert.deepEqual(results.map((result) => result.duplicate).sort(), [false, true]);
    assert.equal(results[0]?.session.id, results[1]?.session.id);
    assert.deepEqual(results[0]?.rawNodeIds, results[1]?.rawNodeIds);
    const other = await buildSessionWrite({ key: "race", turns: [{ text: "version one" }] });
    const rival = await buildSessionWrite({ key: "race", turns: [{ text: "version two" }] });
    const settled = await Promise.allSettled([a.commitSession(other), a.commitSession(rival)]);
    assert.equal(settled[0]?.status, "fulfilled");
    assert.ok(
      settled[1]?.status === "rejected" && settled[1].reason instanceof ConflictError,
      `the second writer of a key gets ConflictError, got ${settled[1]?.status === "rejected" ? settled[1].reason : "success"}`,
    );
    assert.equal((await a.stats()).sessions, 2);
  });

  test("a conflicting commit (same key, other content) throws ConflictError and writes nothing", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    await a.commitSession(
      await buildSessionWrite({ key: "s1", turns: [{ text: "the first version", images: [{ data: red }] }] }),
    );
    const before = await observe(a);
    const other = await buildSessionWrite({
      key: "s1",
      turns: [{ text: "a contradicting zeppelin" }, { text: "with a new image", images: [{ data: blue }] }],
    });
    await expectConflict(a.commitSession(other), "same key, different content");
    assert.deepEqual(await observe(a), before);
    await expectNotFound(a.readBlob(sha256(blue)), "the conflicting write's new image was not stored");
    assert.deepEqual(await a.searchLexical("text", "zeppelin", { limit: 10 }), []);
  });

  test("commitSessions writes a batch in order in one transaction; a conflict anywhere leaves nothing of it", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const stored = await buildSessionWrite({ key: "stored", turns: [{ text: "already here" }] });
    const first = await a.commitSession(stored);
    const one = await buildSessionWrite({
      key: "one",
      timeMs: base,
      turns: [{ text: "a walrus at the pier", images: [{ data: red, caption: "walrus" }] }, { text: "it barked" }],
    });
    const two = await buildSessionWrite({ key: "two", timeMs: base + hour, turns: [{ text: "a heron in the reeds" }] });
    const results = await a.commitSessions(asBatch([one, stored, two, one]));
    assert.deepEqual(
      results.map((result) => [result.session.key, result.duplicate, result.rawNodeIds.length]),
      [
        ["one", false, 2],
        ["stored", true, 1],
        ["two", false, 1],
        ["one", true, 2],
      ],
    );
    assert.deepEqual(results[1]?.rawNodeIds, first.rawNodeIds, "a duplicate answers with the stored raw nodes");
    assert.deepEqual(results[3]?.rawNodeIds, results[0]?.rawNodeIds, "a key given twice is one session");
    const nodes = await a.readRawNodes({ sessionId: results[0]?.session.id as string });
    assert.deepEqual(
      nodes.map((node) => node.text),
      ["a walrus at the pier", "it barked"],
    );
    assert.deepEqual(ids(await a.searchLexical("text", "heron", { limit: 5 })), results[2]?.rawNodeIds);
    assert.deepEqual(ids(await a.searchLexical("imageText", "walrus", { limit: 5 })), [nodes[0]?.id]);
    const entries = await listEntries(a);
    const pointed = new Set(entries.flatMap((entry) => entry.pointers));
    for (const id of [...(results[0]?.rawNodeIds ?? []), ...(results[2]?.rawNodeIds ?? [])]) {
      assert.ok(pointed.has(id), `raw node ${id} is reached from the index`);
    }
    assert.deepEqual(
      (await a.readAudit()).filter((event) => event.action === "session.add").length,
      3,
      "one session.add per new session",
    );

    const before = await observe(a);
    const three = await buildSessionWrite({
      key: "three",
      turns: [{ text: "a narwhal surfaced", images: [{ data: blue, caption: "narwhal" }] }],
    });
    const rival = await buildSessionWrite({ key: "two", turns: [{ text: "not the heron at all" }] });
    await expectConflict(a.commitSessions(asBatch([three, rival])), "a later write's conflict refuses the batch");
    assert.deepEqual(await observe(a), before, "nothing of the refused batch is stored");
    await expectNotFound(a.readBlob(sha256(blue)), "the refused batch's new image was not stored");
    assert.deepEqual(await a.searchLexical("text", "narwhal", { limit: 5 }), []);
    assert.deepEqual(await a.commitSessions([]), [], "an empty batch writes nothing");
    assert.deepEqual(await observe(a), before);
  });

  test("a commit that fails inside the backend writes nothing and the key stays free", async (store) => {
    const { red, green } = await images();
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "ok", turns: [{ text: "kept", images: [{ data: red }] }] }));
    const before = await observe(a);
    const good = await buildSessionWrite({
      key: "broken",
      turns: [{ text: "first turn is fine", images: [{ data: green }] }, { text: "second turn is broken" }],
    });
    const [node0, node1] = good.rawNodes as [RawNodeWrite, RawNodeWrite];
    const broken: SessionWrite = {
      ...good,
      // The last raw node's vector has the wrong length for its declared space.
      rawNodes: [node0, { ...node1, textVectors: { [textSpace.name]: new Float32Array(textSpace.dimensions + 3) } }],
    };
    await assert.rejects(a.commitSession(broken));
    assert.deepEqual(await observe(a), before);
    assert.equal(await findSessionByKey(a, "broken"), null);
    await expectNotFound(a.readBlob(sha256(green)), "a blob of a failed commit is not readable");
    assert.deepEqual(await a.searchLexical("text", "first turn fine", { limit: 10 }), []);
    const retried = await a.commitSession(good);
    assert.equal(retried.duplicate, false, "the key is free after the failed commit");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(green))).data), green);
  });

  test("readSessions by ids and by keys keeps the order asked and omits unknown and foreign ones", async (store) => {
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    const one = await a.commitSession(await buildSessionWrite({ key: "one", turns: [{ text: "first" }] }));
    const two = await a.commitSession(await buildSessionWrite({ key: "two", turns: [{ text: "second" }] }));
    const theirs = await b.commitSession(await buildSessionWrite({ key: "one", turns: [{ text: "theirs" }] }));
    const onlyTheirs = await b.commitSession(await buildSessionWrite({ key: "b-only", turns: [{ text: "b" }] }));
    const sessionIds = (records: readonly { id: string }[]) => records.map((record) => record.id);
    assert.deepEqual(
      sessionIds(await a.readSessions({ ids: [two.session.id, "ses_unknown", one.session.id, theirs.session.id] })),
      [two.session.id, one.session.id],
    );
    assert.deepEqual(await a.readSessions({ ids: [two.session.id] }), [two.session]);
    assert.deepEqual(sessionIds(await a.readSessions({ keys: ["two", "nope", "one", "b-only"] })), [
      two.session.id,
      one.session.id,
    ]);
    assert.deepEqual(sessionIds(await b.readSessions({ keys: ["one", "b-only"] })), [
      theirs.session.id,
      onlyTheirs.session.id,
    ]);
    assert.deepEqual(await a.readSessions({ ids: [] }), []);
    assert.deepEqual(await a.readSessions({ keys: [] }), []);
  });

  test("readSessions with neither ids nor keys pages in time order, and an absent limit means all", async (store) => {
    const a = store.forScope(scopeA);
    // Committed out of time order: the listing follows session time, not arrival.
    for (const [key, offset] of [
      ["k1", 3],
      ["k2", 1],
      ["k3", 2],
      ["k4", 0],
    ] as const) {
      await a.commitSession(await buildSessionWrite({ key, timeMs: base + offset * hour, turns: [{ text: key }] }));
    }
    await store.forScope(scopeB).commitSession(await buildSessionWrite({ key: "k0", turns: [{ text: "b" }] }));
    const keys = async (query: { limit?: number; offset?: number }) =>
      (await a.readSessions(query)).map((session) => session.key);
    assert.deepEqual(await keys({}), ["k4", "k2", "k3", "k1"]);
    assert.deepEqual(await keys({ limit: 2 }), ["k4", "k2"]);
    assert.deepEqual(await keys({ limit: 2, offset: 2 }), ["k3", "k1"]);
    assert.deepEqual(await keys({ offset: 1 }), ["k2", "k3", "k1"], "an offset without a limit reads the rest");
    assert.deepEqual(await keys({ limit: 10, offset: 3 }), ["k1"]);
    assert.deepEqual(await keys({ offset: 10 }), []);
    assert.deepEqual(await keys({ limit: 0 }), []);
  });

  test("readRawNodes near some raw nodes reads their neighbours within the window, in the same session only", async (store) => {
    const a = store.forScope(scopeA);
    const long = await a.commitSession(
      await buildSessionWrite({ key: "long", turns: ["t0", "t1", "t2", "t3", "t4", "t5"].map((text) => ({ text })) }),
    );
    const other = await a.commitSession(
      await buildSessionWrite({ key: "other", turns: ["o0", "o1", "o2"].map((text) => ({ text })) }),
    );
    const foreign = await store
      .forScope(scopeB)
      .commitSession(await buildSessionWrite({ key: "long", turns: ["f0", "f1", "f2"].map((text) => ({ text })) }));
    const [t0, t1, t2, t3, t4, t5] = long.rawNodeIds as string[] as [string, string, string, string, string, string];
    const [o0, o1, o2] = other.rawNodeIds as [string, string, string];
    const near = async (given: readonly string[], window: number) => ids(await a.readRawNodes({ near: given, window }));
    assert.deepEqual(await near([t2], 1), [t1, t3]);
    assert.deepEqual(await near([t2], 2), [t0, t1, t3, t4]);
    assert.deepEqual(await near([t0, t5], 1), [t1, t4], "the window stops at the session's ends");
    assert.deepEqual(await near([t1, t2], 1), [t0, t3], "the given raw nodes are excluded");
    assert.deepEqual(new Set(await near([t2, o1], 1)), new Set([t1, t3, o0, o2]), "each in its own session");
    assert.equal((await near([t2, o1], 1)).length, 4, "each neighbour once");
    assert.deepEqual(await near([t5], 10), [t0, t1, t2, t3, t4], "never beyond the session");
    assert.deepEqual(await near([t2], 0), []);
    assert.deepEqual(await near([], 3), []);
    assert.deepEqual(await near(["rn_unknown"], 3), []);
    assert.deepEqual(await near(foreign.rawNodeIds, 3), [], "foreign ids have no neighbours here");
    assert.deepEqual(
      await a.readRawNodes({ near: [t2], window: 1 }),
      await a.readRawNodes({ ids: [t1, t3] }),
      "neighbours are whole raw nodes",
    );
  });

  test("readBlob with thumbnail reads the WebP thumbnail, with the original's record", async (store) => {
    const { red } = await images();
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "pic", images: [{ data: red }] }] }));
    const original = await a.readBlob(sha256(red));
    const thumbnail = await a.readBlob(sha256(red), { thumbnail: true });
    assert.deepEqual(thumbnail.record, original.record, "the record describes the original either way");
    const bytes = Buffer.from(thumbnail.data);
    assert.equal(bytes.subarray(0, 4).toString("latin1"), "RIFF");
    assert.equal(bytes.subarray(8, 12).toString("latin1"), "WEBP");
    assert.equal((await sharp(bytes).metadata()).format, "webp");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(red), { thumbnail: false })).data), red);
  });

  test("readAudit without a limit returns every event, newest first; limit and offset page it", async (store) => {
    const a = store.forScope(scopeA);
    // More events than any page size a caller might default to (the SDK's is 100).
    const sessions = 60;
    for (let i = 0; i < sessions; i++) {
      await a.commitSession(await buildSessionWrite({ key: `s${i}`, turns: [{ text: `entry number ${i}` }] }));
    }
    await store.forScope(scopeB).commitSession(await buildSessionWrite({ key: "b", turns: [{ text: "b" }] }));
    const all = await a.readAudit();
    assert.equal(all.length, (await a.stats()).auditEvents);
    assert.equal(all.length, 2 * sessions, "one session event and one index event per commit");
    assert.equal(new Set(all.map((event) => event.id)).size, all.length);
    assert.ok(
      all.every((event, i) => i === 0 || (all[i - 1]?.time ?? "") >= event.time),
      "newest first",
    );
    assert.equal(
      all.find((event) => event.action === auditActions.add)?.subject,
      (await a.readSessions({ keys: [`s${sessions - 1}`] }))[0]?.id,
    );
    assert.deepEqual(await a.readAudit({}), all);
    assert.deepEqual(await a.readAudit({ limit: 10, offset: 5 }), all.slice(5, 15));
    assert.deepEqual(await a.readAudit({ offset: 100 }), all.slice(100), "an offset without a limit reads the rest");
    assert.deepEqual(await a.readAudit({ limit: 0 }), []);
  });

  test("knownImages returns what is derived from known images' pixels; unknown hashes are omitted", async (store) => {
    const { red, blue, green } = await images();
    const a = store.forScope(scopeA);
    // An earlier use of the same image without derived text (written before a reader of text was on):
    // the use that has it answers, whichever came first.
    await a.commitSession(await buildSessionWrite({ key: "r0", turns: [{ text: "before", images: [{ data: red }] }] }));
    const session = await a.commitSession(
      await buildSessionWrite({
        key: "s",
        turns: [
          { text: "a sign", images: [{ data: red, caption: "a sign", derivedText: "PIER 7" }] },
          { text: "no text", images: [{ data: blue }] },
        ],
      }),
    );
    const known = await a.knownImages([sha256(red), sha256(blue), sha256(green)], imageSpace.name);
    assert.deepEqual([...known.keys()].sort(), [sha256(red), sha256(blue)].sort());
    assert.equal(known.get(sha256(red))?.derivedText, "PIER 7");
    assert.equal(known.get(sha256(blue))?.derivedText, null);
    assertClose(known.get(sha256(red))?.vector ?? null, await embedImage(red), "the stored image vector");
    assertClose(known.get(sha256(blue))?.vector ?? null, await embedImage(blue), "the stored image vector");
    assert.equal((await a.knownImages([sha256(red)], null)).get(sha256(red))?.vector, null, "no space, no vector");
    assert.equal((await a.knownImages([sha256(red)], "image:other-16")).get(sha256(red))?.vector, null);
    assert.deepEqual(await a.knownImages([], imageSpace.name), new Map());
    await forget(a, { session: session.session.id }, spaces);
    assert.equal(
      (await a.knownImages([sha256(red)], null)).get(sha256(red))?.derivedText,
      null,
      "the use left has none",
    );
    await forget(a, { session: (await a.readSessions({ keys: ["r0"] }))[0]?.id ?? "" }, spaces);
    assert.deepEqual(await a.knownImages([sha256(red)], imageSpace.name), new Map(), "a deleted blob is unknown");
  });

  test("no side channel through images: another scope holding the same image changes no answer or count", async (store) => {
    const { red, blue } = await images();
    // The same writes and forgets in scope A, once alone and once with tenant globex (scope C) and
    // a sibling scope B of A's tenant holding the same images: every answer A gets must be equal.
    const run = async (neighboursHoldImages: boolean) => {
      const suffix = neighboursHoldImages ? "-shared" : "-alone";
      const a = store.forScope({ ...scopeA, user: `ana${suffix}` });
      if (neighboursHoldImages) {
        for (const scope of [
          { ...scopeC, user: `ana${suffix}` },
          { ...scopeB, user: `ana${suffix}` },
        ]) {
          await store.forScope(scope).commitSession(
            await buildSessionWrite({
              key: "theirs",
              turns: [{ text: "their copy", images: [{ data: red, derivedText: "THEIR OCR" }, { data: blue }] }],
            }),
          );
        }
      }
      const answers: unknown[] = [];
      answers.push([...(await a.knownImages([sha256(red), sha256(blue)], imageSpace.name)).keys()]);
      const first = await a.commitSession(
        await buildSessionWrite({ key: "mine", turns: [{ text: "my copy", images: [{ data: red }] }] }),
      );
      answers.push([...(await a.knownImages([sha256(red), sha256(blue)], imageSpace.name)).entries()]);
      await expectNotFound(a.readBlob(sha256(blue)), "an image only neighbours hold");
      const result = await forget(a, { session: first.session.id }, spaces);
      answers.push({ blobsDeleted: result.blobsDeleted, rawNodes: result.rawNodes });
      answers.push([...(await a.knownImages([sha256(red)], imageSpace.name)).keys()]);
      return answers;
    };
    const alone = await run(false);
    assert.deepEqual(await run(true), alone);
    assert.deepEqual(alone[0], [], "a scope knows no image before it writes one");
    assert.deepEqual(alone[2], { blobsDeleted: 1, rawNodes: 1 }, "the forget counts the image the scope let go");
    // The neighbours' copies outlive A's forget.
    const c = store.forScope({ ...scopeC, user: "ana-shared" });
    assert.deepEqual(Buffer.from((await c.readBlob(sha256(red))).data), red);
  });

  test("listScopes names every scope holding data, and with a tenant only that tenant's, in order", async (store) => {
    assert.deepEqual(await store.listScopes(), []);
    for (const scope of [scopeC, scopeB, scopeA]) {
      await store.forScope(scope).commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "hello" }] }));
    }
    assert.deepEqual(await store.listScopes(), [scopeA, scopeB, scopeC]);
    assert.deepEqual(await store.listScopes({ tenant: scopeA.tenant }), [scopeA, scopeB]);
    assert.deepEqual(await store.listScopes({ tenant: scopeC.tenant }), [scopeC]);
    assert.deepEqual(
      await store.listScopes({ tenant: `${scopeA.tenant}x` }),
      [],
      "a tenant whose name extends another's",
    );
    await forget(store.forScope(scopeB), { all: true }, spaces);
    assert.deepEqual(await store.listScopes({ tenant: scopeA.tenant }), [scopeA], "a forgotten scope holds no data");
  });

  test("getBlob and getThumbnail return stored bytes; unknown hashes are NotFoundError", async (store) => {
    const { red, green } = await images();
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({ key: "s", turns: [{ text: "pic", images: [{ data: red }] }] });
    await a.commitSession(write);
    const blob = await a.readBlob(sha256(red));
    assert.equal(sha256(blob.data), sha256(red), "bytes hash to their name");
    assert.deepEqual(
      Buffer.from(await getThumbnail(a, sha256(red))),
      Buffer.from(write.blobs[0]?.thumbnail ?? new Uint8Array()),
    );
    await expectNotFound(a.readBlob(sha256(green)), "a hash never stored");
    await expectNotFound(getThumbnail(a, sha256(green)), "a thumbnail never stored");
    await expectNotFound(a.readBlob("../../cairn.db"), "a path is not a hash");
    await expectNotFound(a.readBlob(""), "empty hash");
  });

  test("append adds raw nodes after the last turn, earlier ones untouched, searchable and audited", async (store) => {
    const a = store.forScope(scopeA);
    const first = await a.commitSession(
      await buildSessionWrite({
        key: "chat-7",
        turns: [
          { speaker: "Ana", text: "We bought a canoe" },
          { speaker: "Ben", text: "Which colour?" },
        ],
      }),
    );
    const appendWrite = await buildSessionWrite({
      key: "chat-7",
      timeMs: base + hour,
      turns: [{ speaker: "Ana", text: "A teal one with a zeppelin sticker" }],
    });
    const appended = await a.commitSession({ ...appendWrite, append: { partKey: "part-1" } });
    assert.equal(appended.duplicate, false);
    assert.equal(appended.rawNodeIds.length, 1);
    assert.equal(appended.session.id, first.session.id);
    assert.equal(appended.session.turnCount, 3);
    assert.equal(
      appended.session.contentHash,
      first.session.contentHash,
      "the session keeps the identity it was made with",
    );
    const nodes = await a.readRawNodes({ sessionId: first.session.id });
    assert.deepEqual(
      nodes.map((node) => [node.id, node.turn, node.text]),
      [
        [first.rawNodeIds[0], 0, "We bought a canoe"],
        [first.rawNodeIds[1], 1, "Which colour?"],
        [appended.rawNodeIds[0], 2, "A teal one with a zeppelin sticker"],
      ],
    );
    const hits = await a.searchLexical("text", "zeppelin", { limit: 10 });
    assert.deepEqual(
      hits.map((hit) => hit.id),
      appended.rawNodeIds,
    );
    const audit = await a.readAudit();
    assert.ok(audit.some((event) => event.action === "session.append" && event.subject === first.session.id));
  });

  test("a retried append is a duplicate; an append to a missing session makes it; forget takes the parts too", async (store) => {
    const a = store.forScope(scopeA);
    const write = await buildSessionWrite({ key: "notes", turns: [{ speaker: "Ana", text: "Bike frame is 54 cm" }] });
    const created = await a.commitSession({ ...write, append: { partKey: "p1" } });
    assert.equal(created.duplicate, false);
    assert.equal(created.session.turnCount, 1);
    // Each write plans its own index entries (their ids are unique in the store), as the SDK's do.
    const saddle = () => buildSessionWrite({ key: "notes", turns: [{ speaker: "Ana", text: "Saddle is brown" }] });
    const second = await a.commitSession({ ...(await saddle()), append: { partKey: "p2" } });
    const retried = await a.commitSession({ ...(await saddle()), append: { partKey: "p2" } });
    assert.equal(retried.duplicate, true);
    assert.deepEqual(retried.rawNodeIds, second.rawNodeIds);
    assert.equal((await getSession(a, created.session.id)).turnCount, 2);
    // The same key in another scope is another session.
    const other = await store.forScope(scopeB).commitSession({ ...(await saddle()), append: { partKey: "p2" } });
    assert.equal(other.duplicate, false);
    assert.notEqual(other.session.id, created.session.id);

    await forget(a, { session: "notes" }, spaces);
    const again = await a.commitSession({ ...(await saddle()), append: { partKey: "p2" } });
    assert.equal(again.duplicate, false, "a forgotten session's parts went with it");
    assert.equal(again.session.turnCount, 1);
  });

  test("forget session cascades to raw nodes, search, vectors, entries and unshared blobs, audited without raw text", async (store) => {
    const { red, blue, green } = await images();
    const a = store.forScope(scopeA);
    const c = store.forScope(scopeC);
    const gone = await a.commitSession(
      await buildSessionWrite({
        key: "gone",
        turns: [
          { speaker: "Ana", text: "my secret pangolin diary", images: [{ data: red, caption: "pangolin sketch" }] },
          { speaker: "Ana", text: "the pangolin ate ants", images: [{ data: blue, derivedText: "ANTHILL" }] },
          { speaker: "Ana", text: "green stripes shared", images: [{ data: green }] },
        ],
      }),
    );
    const kept = await a.commitSession(
      await buildSessionWrite({ key: "kept", turns: [{ text: "a pangolin documentary", images: [{ data: blue }] }] }),
    );
    const other = await c.commitSession(
      await buildSessionWrite({ key: "gone", turns: [{ text: "other scope stripes", images: [{ data: green }] }] }),
    );
    const otherBefore = await observe(c);

    const result = await forget(a, { session: gone.session.id }, spaces);
    assert.equal(result.sessions, 1);
    assert.equal(result.rawNodes, 3);
    assert.equal(result.entries, 1);
    // Red and green are no longer used in this scope; blue still is. Green's use in tenant globex is
    // not counted either way: a forget's counts come from the scope's own rows (no side channel).
    assert.equal(result.blobsDeleted, 2, "red and green left this scope");

    await expectNotFound(getSession(a, gone.session.id), "forgotten session");
    assert.equal(await findSessionByKey(a, "gone"), null);
    for (const id of gone.rawNodeIds) await expectNotFound(getRawNode(a, id), "forgotten raw node");
    assert.deepEqual(await a.readRawNodes({ ids: gone.rawNodeIds }), []);
    assert.deepEqual(await a.readRawNodes({ sessionId: gone.session.id }), []);
    assert.deepEqual(ids(await a.searchLexical("text", "pangolin", { limit: 10 })), kept.rawNodeIds);
    assert.deepEqual(await a.searchLexical("text", "secret diary ants", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("imageText", "pangolin sketch anthill", { limit: 10 }), []);
    // Asking for as many hits as remain must return all of them: leftover vectors would take their places.
    const nearest = await a.searchVectors(textSpace.name, await embedText("my secret pangolin diary"), { limit: 1 });
    assert.deepEqual(ids(nearest), kept.rawNodeIds);
    const nearestImage = await a.searchVectors(imageSpace.name, await embedImage(green), { limit: 1 });
    assert.deepEqual(ids(nearestImage), kept.rawNodeIds);
    assert.deepEqual(
      (await listEntries(a)).map((entry) => entry.sessions),
      [[kept.session.key]],
    );

    await expectNotFound(a.readBlob(sha256(red)), "an unshared blob is deleted");
    await expectNotFound(getThumbnail(a, sha256(red)), "its thumbnail too");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(blue))).data), blue, "blue is still used in this scope");
    await expectNotFound(a.readBlob(sha256(green)), "green is no longer referenced in this scope");
    assert.deepEqual(Buffer.from((await c.readBlob(sha256(green))).data), green, "green is still used by scope C");
    assert.ok((await getThumbnail(c, sha256(green))).length > 0);
    assert.deepEqual(await observe(c), otherBefore, "another scope's same-named session is untouched");
    assert.equal((await getRawNode(c, other.rawNodeIds[0] as string)).text, "other scope stripes");

    const audit = await a.readAudit();
    const event = audit.find((e) => e.id === result.auditId);
    assert.ok(event, "forget is audited");
    assert.equal(event.action, auditActions.forget);
    assertNoRawText(audit, ["secret", "pangolin", "diary", "ants", "sketch", "ANTHILL", "stripes"]);

    const again = await a.commitSession(
      await buildSessionWrite({ key: "gone", turns: [{ text: "a fresh start", images: [{ data: red }] }] }),
    );
    assert.equal(again.duplicate, false, "a forgotten key can be used again");
    assert.deepEqual(Buffer.from((await a.readBlob(sha256(red))).data), red, "the same image can be stored again");
  });

  test("forget raw node removes it, rebuilds its entry without it, keeps its siblings", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const session = await a.commitSession(
      await buildSessionWrite({
        key: "s",
        turns: [
          { speaker: "Ana", text: "breakfast was porridge", timeMs: base },
          { speaker: "Ana", text: "lunch was a quokka sandwich", timeMs: base + hour, images: [{ data: red }] },
          { speaker: "Bo", text: "dinner was noodles", timeMs: base + 2 * hour, images: [{ data: blue }] },
        ],
      }),
    );
    const [breakfast, lunch, dinner] = session.rawNodeIds as [string, string, string];
    const result = await forget(a, { rawNode: lunch }, spaces);
    assert.deepEqual(
      { sessions: result.sessions, rawNodes: result.rawNodes, entries: result.entries, blobs: result.blobsDeleted },
      { sessions: 0, rawNodes: 1, entries: 0, blobs: 1 },
    );
    await expectNotFound(getRawNode(a, lunch), "forgotten raw node");
    assert.deepEqual(ids(await a.readRawNodes({ sessionId: session.session.id })), [breakfast, dinner]);
    assert.equal((await getRawNode(a, dinner)).text, "dinner was noodles", "siblings are untouched");
    assert.deepEqual(await a.searchLexical("text", "quokka sandwich", { limit: 10 }), []);
    assert.equal((await a.searchVectors(textSpace.name, await embedText("lunch"), { limit: 2 })).length, 2);
    await expectNotFound(a.readBlob(sha256(red)), "the forgotten turn's image");

    const [entry] = await listEntries(a);
    assert.ok(entry);
    assert.deepEqual(entry.pointers, [breakfast, dinner], "the entry points only at what remains");
    assert.ok(!entry.routingText.includes("quokka"), `entry text still quotes forgotten text: ${entry.routingText}`);
    assertNoRawText(await a.readAudit(), ["quokka", "sandwich"]);

    await forget(a, { rawNode: dinner }, spaces);
    const [afterDinner] = await listEntries(a);
    assert.equal(afterDinner?.timeEnd, new Date(base).toISOString(), "the entry's time span shrinks to what remains");
    const last = await forget(a, { rawNode: breakfast }, spaces);
    assert.equal(last.entries, 1, "an entry without pointers is removed");
    assert.deepEqual(await listEntries(a), []);
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 0, images: 0, entries: 0, auditEvents: 5 });
  });

  test("forget raw node re-derives the index text of the turns that quoted it: lexical rows and text vectors, or nothing on a stale plan", async (store) => {
    const a = store.forScope(scopeA);
    const turns = ["breakfast was porridge", "lunch was a quokka sandwich", "dinner was noodles", "supper was tea"];
    // Each turn's index text quotes its neighbours, as the write path's contextual index text does.
    const quoting = (texts: readonly string[]) =>
      texts.map((text, index) => [text, texts[index - 1], texts[index + 1]].filter(Boolean).join(" | "));
    const indexTexts = quoting(turns);
    const session = await a.commitSession(
      await buildSessionWrite({
        key: "meals",
        turns: turns.map((text, index) => ({
          speaker: "Ana",
          text,
          indexText: indexTexts[index],
          timeMs: base + index * hour,
        })),
      }),
    );
    const [breakfast, lunch, dinner, supper] = session.rawNodeIds as [string, string, string, string];
    assert.deepEqual(
      ids(await a.searchLexical("text", "quokka", { limit: 10 })).sort(),
      [breakfast, lunch, dinner].sort(),
      "before the forget, the turns beside lunch are found by its words",
    );
    const before = await observe(a);
    const vectorsBefore = await a.readVectors(textSpace.name, [supper]);
    const rederive = {
      embedder: textEmbedder,
      indexTexts: (nodes: readonly RawNode[]) => quoting(nodes.map((node) => node.text)),
      neighbours: 1,
    };
    // The first request the store sees names the forgotten turn among the survivors (a plan made against
    // another state): refused as a conflict, with nothing changed; the forget then plans again and applies.
    let refused = 0;
    const stale = new Proxy(a, {
      get(target, property) {
        if (property === "forget") {
          return async (request: ForgetRequest) => {
            if (refused === 0) {
              refused++;
              assert.ok(request.reindex && request.reindex.length > 0, "the forget re-derives survivors");
              const wrong = { rawNodeId: lunch, indexText: "lunch", textVectors: {} };
              await expectConflict(
                target.forget({ ...request, reindex: [...(request.reindex ?? []), wrong] }),
                "stale",
              );
              assert.deepEqual(await observe(target), before, "a refused forget changes nothing");
              throw new IndexVersionConflict(request.plan.baseVersion, request.plan.baseVersion);
            }
            return target.forget(request);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const result = await forgetWithRepair(stale, { rawNode: lunch }, spaces, defaultMaintenanceConfig.bounds, rederive);
    assert.equal(refused, 1);
    assert.equal(result.rawNodes, 1);

    assert.deepEqual(await a.searchLexical("text", "quokka sandwich", { limit: 10 }), [], "no row quotes lunch");
    assert.deepEqual(
      ids(await a.searchLexical("text", "noodles", { limit: 10 })).sort(),
      [breakfast, dinner, supper].sort(),
      "breakfast now quotes dinner, its new neighbour",
    );
    const after = await a.readVectors(textSpace.name, [breakfast, dinner, supper]);
    assertClose(
      after.get(breakfast) ?? null,
      await embedText("breakfast was porridge | dinner was noodles"),
      "breakfast",
    );
    assertClose(
      after.get(dinner) ?? null,
      await embedText("dinner was noodles | breakfast was porridge | supper was tea"),
      "dinner",
    );
    assertClose(
      after.get(supper) ?? null,
      vectorsBefore.get(supper) ?? null,
      "a turn that never quoted lunch keeps its vector",
    );
    const [hit] = await a.searchVectors(
      textSpace.name,
      await embedText("breakfast was porridge | dinner was noodles"),
      {
        limit: 1,
      },
    );
    assert.equal(hit?.id, breakfast, "the vector search reads the new vector");
    assert.equal((await getRawNode(a, breakfast)).text, "breakfast was porridge", "raw text is never changed");
    // The entries' mean text vectors are made from the survivors' new vectors, not the ones that quoted lunch.
    const index = await a.readIndex({ activeOnly: false });
    assert.ok(index.entries.size > 0, "the session has entries");
    for (const entry of index.entries.values()) {
      const stored = await a.readVectors(textSpace.name, entry.pointers);
      const mean = meanVector(entry.pointers.flatMap((id) => stored.get(id) ?? []));
      assertClose(entry.vector, mean, `entry ${entry.id} vector`);
    }
    assertNoRawText(await a.readAudit(), ["quokka", "sandwich"]);

    // A whole session's forget has no survivor to re-derive.
    let reindexed: number | undefined;
    const watching = new Proxy(a, {
      get(target, property) {
        if (property === "forget") {
          return (request: ForgetRequest) => {
            reindexed = request.reindex?.length ?? 0;
            return target.forget(request);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    await forgetWithRepair(watching, { session: "meals" }, spaces, defaultMaintenanceConfig.bounds, rederive);
    assert.equal(reindexed, 0, "forgetting a whole session re-derives nothing");
    assert.deepEqual(await a.searchLexical("text", "noodles", { limit: 10 }), []);
  });

  test("forget all empties the scope and leaves other scopes and shared blobs alone", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    await a.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "alpha wombat", images: [{ data: red }] }] }),
    );
    await a.commitSession(
      await buildSessionWrite({ key: "2", turns: [{ text: "beta wombat", images: [{ data: blue }] }] }),
    );
    const bSession = await b.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "gamma wombat", images: [{ data: blue }] }] }),
    );
    const bBefore = await observe(b);
    const result = await forget(a, { all: true }, spaces);
    assert.deepEqual(
      { sessions: result.sessions, rawNodes: result.rawNodes, entries: result.entries, blobs: result.blobsDeleted },
      { sessions: 2, rawNodes: 2, entries: 2, blobs: 2 },
    );
    // A forgotten scope keeps one audit event, the forget with its counts (issue 18): the earlier
    // ones named its session keys and ids.
    assert.deepEqual(await a.stats(), { sessions: 0, rawNodes: 0, images: 0, entries: 0, auditEvents: 1 });
    assert.deepEqual(await a.readSessions({}), []);
    assert.deepEqual(await listEntries(a), []);
    assert.deepEqual(await a.searchLexical("text", "wombat", { limit: 10 }), []);
    assert.deepEqual(await a.searchVectors(textSpace.name, await embedText("wombat"), { limit: 10 }), []);
    assert.deepEqual(await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 }), []);
    await expectNotFound(a.readBlob(sha256(red)), "red");
    await expectNotFound(a.readBlob(sha256(blue)), "blue, in the forgetting scope");
    assert.deepEqual(await observe(b), bBefore);
    assert.deepEqual(Buffer.from((await b.readBlob(sha256(blue))).data), blue);
    assert.deepEqual(ids(await b.searchLexical("text", "wombat", { limit: 10 })), bSession.rawNodeIds);
    const [event] = await a.readAudit({ limit: 1 });
    assert.equal(event?.id, result.auditId);
    assert.equal(event?.action, auditActions.forget);
    assertNoRawText(await a.readAudit(), ["alpha", "beta", "wombat"]);
    const empty = await forget(a, { all: true }, spaces);
    assert.equal(empty.rawNodes, 0, "forgetting an empty scope is allowed");
  });

  test("forgetting unknown ids throws NotFoundError and removes nothing", async (store) => {
    const a = store.forScope(scopeA);
    await a.commitSession(await buildSessionWrite({ key: "s", turns: [{ text: "stays" }] }));
    const before = await observe(a);
    await expectNotFound(forget(a, { session: "ses_nope" }, spaces), "unknown session");
    await expectNotFound(forget(a, { rawNode: "rn_nope" }, spaces), "unknown raw node");
    assert.deepEqual(await observe(a), before);
  });

  test("a scope sees nothing of another scope, even by guessed ids and hashes", async (store) => {
    const { red, blue, green } = await images();
    const a = store.forScope(scopeA);
    const b = store.forScope(scopeB);
    const mine = await a.commitSession(
      await buildSessionWrite({
        key: "shared-key",
        turns: [{ speaker: "Ana", text: "my own okapi notes", images: [{ data: red }] }],
      }),
    );
    const theirs = await b.commitSession(
      await buildSessionWrite({
        key: "shared-key",
        turns: [
          { speaker: "Ana", text: "their private okapi narwhal plans", images: [{ data: blue, caption: "narwhal" }] },
          { speaker: "Bo", text: "more narwhal", images: [{ data: green }] },
        ],
      }),
    );
    assert.equal(theirs.duplicate, false, "the same key in another scope is not a duplicate");
    const bSessionOnly = await b.commitSession(await buildSessionWrite({ key: "b-only", turns: [{ text: "x" }] }));
    const theirIds = [...theirs.rawNodeIds, ...bSessionOnly.rawNodeIds];
    const before = await observe(a);

    const unknownSession = await expectNotFound(getSession(a, "ses_unknown"), "unknown session");
    const foreignSession = await expectNotFound(getSession(a, theirs.session.id), "foreign session");
    assert.equal(foreignSession.kind, unknownSession.kind, "foreign ids answer exactly like unknown ones");
    assert.equal(await findSessionByKey(a, "b-only"), null);
    assert.equal((await findSessionByKey(a, "shared-key"))?.id, mine.session.id);
    assert.deepEqual(
      (await a.readSessions({})).map((s) => s.id),
      [mine.session.id],
    );
    for (const id of theirIds) {
      const foreign = await expectNotFound(getRawNode(a, id), "foreign raw node");
      const unknown = await expectNotFound(getRawNode(a, `${id}x`), "unknown raw node");
      assert.equal(foreign.kind, unknown.kind);
      assert.equal(foreign.message.replace(id, "?"), unknown.message.replace(`${id}x`, "?"));
    }
    assert.deepEqual(ids(await a.readRawNodes({ ids: [...theirIds, ...mine.rawNodeIds] })), mine.rawNodeIds);
    assert.deepEqual(await a.readRawNodes({ sessionId: theirs.session.id }), []);
    for (const hash of [sha256(blue), sha256(green)]) {
      const foreign = await expectNotFound(a.readBlob(hash), "foreign blob");
      const unknown = await expectNotFound(a.readBlob(sha256(`${hash}x`)), "unknown blob");
      assert.equal(foreign.kind, unknown.kind);
      await expectNotFound(getThumbnail(a, hash), "foreign thumbnail");
    }
    assert.deepEqual(await a.searchLexical("text", "narwhal private plans", { limit: 10 }), []);
    assert.deepEqual(ids(await a.searchLexical("text", "okapi", { limit: 10 })), mine.rawNodeIds);
    assert.deepEqual(await a.searchLexical("imageText", "narwhal", { limit: 10 }), []);
    assert.deepEqual(await a.searchLexical("text", "narwhal", { limit: 10, filters: { speakers: ["Bo"] } }), []);
    const vectorHits = await a.searchVectors(textSpace.name, await embedText("their private okapi narwhal plans"), {
      limit: 10,
      filters: { sessionKeys: ["shared-key", "b-only"] },
    });
    assert.deepEqual(ids(vectorHits), mine.rawNodeIds);
    assert.deepEqual(
      ids(await a.searchVectors(imageSpace.name, await embedImage(blue), { limit: 10 })),
      mine.rawNodeIds,
    );
    assert.deepEqual(
      (await listEntries(a)).map((entry) => entry.sessions),
      [[mine.session.key]],
    );
    assert.ok((await a.readAudit()).every((event) => !theirIds.includes(event.subject)));
    assert.ok(
      (await a.readAudit()).every((event) => event.subject !== theirs.session.id),
      "audit events stay in their scope",
    );
    assert.deepEqual(await a.stats(), { sessions: 1, rawNodes: 1, images: 1, entries: 1, auditEvents: 2 });
    await expectNotFound(forget(a, { session: theirs.session.id }, spaces), "forget a foreign session");
    await expectNotFound(forget(a, { rawNode: theirIds[0] as string }, spaces), "forget a foreign raw node");
    assert.deepEqual(await observe(a), before, "reads and refused forgets changed nothing");

    const bBefore = await observe(b);
    await forget(a, { all: true }, spaces);
    assert.deepEqual(await observe(b), bBefore, "forget all in A leaves B as it was");
    assert.deepEqual(Buffer.from((await b.readBlob(sha256(blue))).data), blue);
  });

  test("stats count sessions, raw nodes, images, entries and audit events of the scope", async (store) => {
    const { red, blue } = await images();
    const a = store.forScope(scopeA);
    const c = store.forScope(scopeC);
    const empty: ScopeStats = { sessions: 0, rawNodes: 0, images: 0, entries: 0, auditEvents: 0 };
    assert.deepEqual(await a.stats(), empty);
    const first = await a.commitSession(
      await buildSessionWrite({
        key: "1",
        turns: [
          { text: "one", images: [{ data: red }, { data: red }] },
          { text: "two", images: [{ data: blue }] },
        ],
      }),
    );
    await a.commitSession(await buildSessionWrite({ key: "2", turns: [{ text: "three" }] }));
    await c.commitSession(
      await buildSessionWrite({ key: "1", turns: [{ text: "elsewhere", images: [{ data: red }] }] }),
    );
    assert.deepEqual(await a.stats(), { sessions: 2, rawNodes: 3, images: 3, entries: 2, auditEvents: 4 });
    assert.deepEqual(await c.stats(), { sessions: 1, rawNodes: 1, images: 1, entries: 1, auditEvents: 2 });
    await forget(a, { rawNode: first.rawNodeIds[0] as string }, spaces);
    assert.deepEqual(await a.stats(), { sessions: 2, rawNodes: 2, images: 1, entries: 2, auditEvents: 5 });
    assert.deepEqual(await store.forScope(scopeB).stats(), empty);
  });
});
