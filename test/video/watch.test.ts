import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { createMcpServer } from "../../src/surfaces/mcp/server.ts";
import type { Frame } from "../../src/video/gateway.ts";
import type { Detector, FrameDetections } from "../../src/video/perception/detector.ts";
import { VideoSourceError } from "../../src/video/video-errors.ts";
import { tempDir } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason } from "../support/video-fixtures.ts";

const scope = { tenant: "acme", user: "ana" };
const sceneMs = 3000;

/**
 * A detector behind the real seam: it sees a person wherever the frame is not one flat colour, and
 * who it is comes from the scene the frame belongs to (`people[scene]`), as a one-hot face descriptor.
 */
function sceneDetector(people: readonly (number | null)[]): Detector & { frames: number } {
  const detector = {
    id: "fake-scene-detector",
    frames: 0,
    async detect(frames: readonly Frame[]): Promise<FrameDetections[]> {
      detector.frames += frames.length;
      return frames.map((frame) => {
        const person = people[Math.floor(frame.timeMs / sceneMs)] ?? null;
        if (person === null || flat(frame)) return { faces: [], objects: [] };
        const descriptor = new Float32Array(8);
        descriptor[person] = 1;
        return {
          faces: [{ box: [120, 30, 64, 64], score: 0.95, descriptor }],
          objects: [
            { label: "person", score: 0.9, box: [100, 10, 110, 160] },
            { label: "chair", score: 0.8, box: [10, 100, 40, 60] },
          ],
        };
      });
    },
    async close() {},
  };
  return detector;
}

function flat(frame: Frame): boolean {
  const [r, g, b] = [frame.rgb[0], frame.rgb[1], frame.rgb[2]];
  for (let i = 0; i < frame.rgb.length; i += 3 * 97) {
    if (frame.rgb[i] !== r || frame.rgb[i + 1] !== g || frame.rgb[i + 2] !== b) return false;
  }
  return true;
}

async function openMemory(t: { after: (fn: () => void) => void }, detector: Detector) {
  const models = createHashModels();
  const memory = await Memory.open({
    path: tempDir(t),
    models,
    video: { detector, config: { gateway: { fps: 2 }, segmenter: { maxSegmentMs: sceneMs } } },
  });
  return memory;
}

describe("Memory.watch", { skip: noFfmpegReason }, () => {
  it("writes raw key frames and crops, one identity per person, and the three episodic levels", async (t) => {
    const dir = tempDir(t);
    // A, an empty room for two segments, B, then A again.
    const clip = makeClip(dir, "room.mp4", {
      scenes: ["testsrc", "color=c=navy", "color=c=navy", "testsrc2", "testsrc"],
      sceneSeconds: 3,
    });
    const detector = sceneDetector([1, null, null, 2, 1]);
    const memory = await openMemory(t, detector);
    t.after(() => memory.close());
    const watch = await memory.watch(scope, clip, { stream: "room", startTime: "2026-01-01T10:00:00Z" });
    const result = await watch.done;

    assert.equal(result.segments, 5);
    assert.deepEqual(
      result.skipped.map((skip) => [skip.startMs, skip.reason]),
      [[6000, "static-silent"]],
      "the second still segment of the empty room is skipped, and reported",
    );
    assert.equal(result.analysed, 4);

    const entities = await memory.listEntities(scope);
    assert.equal(entities.length, 2, "A and B");
    const a = entities.find((entity) => entity.observations === 2);
    assert.ok(a, "A is one entity seen twice, before and after B");
    assert.deepEqual(
      a.sightings.map((sighting) => [sighting.from, sighting.to]),
      [["2026-01-01T10:00:00.000Z", "2026-01-01T10:00:15.000Z"]],
    );

    const traces = await memory.searchVideo(scope, "chair", { level: "trace", stream: "room", limit: 10 });
    assert.equal(traces.length, 4, "one trace per analysed segment");
    const observations = await memory.searchVideo(scope, "person", { level: "observation", limit: 10 });
    assert.equal(observations.length, 3, "one observation per entity per segment");
    const chapters = await memory.searchVideo(scope, "events", { level: "chapter" });
    assert.ok(chapters.length >= 1, "closed events gathered into a chapter");
    assert.ok(result.chapters >= 1);

    // The trace links its observations; its neighbours are the stream's other traces in time order.
    const [first] = await memory.searchVideo(scope, "chair", { level: "trace", limit: 1 });
    assert.ok(first);
    const { item, before, after } = await memory.getVideoItem(scope, first.item.id);
    assert.equal(before.length + after.length >= 1, true);
    assert.ok(
      [...before, item, ...after].every(
        (found, index, all) => index === 0 || (all[index - 1]?.startMs ?? 0) <= found.startMs,
      ),
    );

    // Key frames are raw nodes with their original pixels, searchable by every channel.
    const frames = await memory.videoKeyFrames(scope, first.item.id);
    assert.ok(frames.length >= 2, "a key frame and a crop");
    const blob = await memory.getBlob(scope, frames[0]?.hash ?? "");
    assert.equal(blob.mediaType, "image/jpeg");
    assert.ok(blob.data.length > 1000);
    const pack = await memory.search(scope, "key frame chair");
    assert.ok(
      pack.items.some((hit) => hit.images.length > 0),
      "the ordinary search finds key frames",
    );

    const audit = await memory.listAudit(scope, { limit: 200 });
    const identity = audit.filter((event) => event.action === "video.identity");
    assert.equal(identity.length, 3);
    assert.deepEqual(
      identity.map((event) => event.details.outcome).reverse(),
      ["new", "new", "match"],
      "every identity decision is audited with its outcome",
    );
    assert.ok(identity.every((event) => typeof event.details.reason === "string"));
  });

  it("forgetting a segment's raw nodes removes the observations, trace and slots derived from them", async (t) => {
    const clip = makeClip(tempDir(t), "one.mp4", { scenes: ["testsrc"], sceneSeconds: 3 });
    const memory = await openMemory(t, sceneDetector([3]));
    t.after(() => memory.close());
    await (await memory.watch(scope, clip, { stream: "one" })).done;
    const [entity] = await memory.listEntities(scope);
    assert.ok(entity && entity.slots.face === 1 && entity.observations === 1);
    const sessions = await memory.listSessions(scope);
    assert.equal(sessions.length, 1);
    await memory.forget(scope, { session: sessions[0]?.id ?? "" });
    assert.deepEqual(await memory.listEntities(scope), [], "the entity had nothing left and no name");
    assert.deepEqual(await memory.searchVideo(scope, "person", { level: "trace" }), []);
  });

  it("a bad source is a typed error and changes nothing", async (t) => {
    const memory = await openMemory(t, sceneDetector([]));
    t.after(() => memory.close());
    const before = await memory.stats(scope);
    await assert.rejects(memory.watch(scope, `${tempDir(t)}/missing.mp4`), VideoSourceError);
    assert.deepEqual(await memory.stats(scope), before);
    assert.deepEqual(await memory.listEntities(scope), []);
  });

  it("stop() ends a stream that has not ended and commits what was seen", async (t) => {
    const clip = makeClip(tempDir(t), "long.mp4", { scenes: ["testsrc"], sceneSeconds: 60 });
    const memory = await openMemory(t, sceneDetector(Array.from({ length: 20 }, () => 4)));
    t.after(() => memory.close());
    let watch: Awaited<ReturnType<typeof memory.watch>> | undefined;
    let stopping: Promise<unknown> | undefined;
    watch = await memory.watch(scope, clip, {
      stream: "live",
      onSegment: () => {
        stopping ??= watch?.stop();
      },
    });
    const result = await watch.done;
    await stopping;
    assert.equal(result.stopped, true);
    assert.ok(result.mediaMs < 60_000, `stopped early at ${result.mediaMs} ms`);
    const traces = await memory.searchVideo(scope, "person", { level: "trace" });
    assert.equal(traces.length, result.analysed, "every analysed segment, the last one included, was committed");
    assert.ok(traces.length >= 2);
  });

  it("entities: name, merge and split are audited user decisions", async (t) => {
    const clip = makeClip(tempDir(t), "two.mp4", { scenes: ["testsrc", "testsrc2"], sceneSeconds: 3 });
    const memory = await openMemory(t, sceneDetector([5, 6]));
    t.after(() => memory.close());
    await (await memory.watch(scope, clip, { stream: "two" })).done;
    const [first, second] = await memory.listEntities(scope);
    assert.ok(first && second);
    await memory.nameEntity(scope, first.id, "Ana");
    await memory.mergeEntities(scope, second.id, first.id);
    let entities = await memory.listEntities(scope);
    assert.deepEqual(
      entities.map((entity) => [entity.name, entity.observations]),
      [["Ana", 2]],
    );
    const observation = (await memory.searchVideo(scope, "person", { level: "observation", entityId: first.id })).find(
      (hit) => hit.item.startMs >= Date.parse(first.sightings[0]?.to ?? ""),
    );
    assert.ok(observation);
    const split = await memory.splitEntity(scope, first.id, [observation.item.id]);
    entities = await memory.listEntities(scope);
    assert.equal(entities.length, 2);
    assert.equal(entities.find((entity) => entity.id === split)?.observations, 1);
    const actions = (await memory.listAudit(scope, { limit: 50 })).map((event) => event.action);
    for (const action of ["video.entity.name", "video.entity.merge", "video.entity.split"]) {
      assert.ok(actions.includes(action), `${action} is audited`);
    }
  });

  it("HTTP: entities, a level search, an item with neighbours and its key frames' pixels", async (t) => {
    const clip = makeClip(tempDir(t), "two.mp4", { scenes: ["testsrc", "testsrc2"], sceneSeconds: 3 });
    const memory = await openMemory(t, sceneDetector([5, 6]));
    await (await memory.watch(scope, clip, { stream: "two" })).done;
    const server = await startServer({ memory, keys: null, port: 0 });
    t.after(() => server.close());
    const get = async (path: string) => {
      const response = await fetch(`${server.url}${path}`, {
        headers: { "x-cairn-tenant": "acme", "x-cairn-user": "ana" },
      });
      assert.equal(response.status, 200, `${path}: ${response.status}`);
      return response;
    };
    const { entities } = (await (await get("/v1/video/entities")).json()) as { entities: { id: string }[] };
    assert.equal(entities.length, 2);
    const { hits } = (await (await get("/v1/video/search?q=person&level=trace")).json()) as {
      hits: { item: { id: string } }[];
    };
    assert.equal(hits.length, 2);
    const item = (await (await get(`/v1/video/items/${hits[0]?.item.id}`)).json()) as {
      before: unknown[];
      after: unknown[];
    };
    assert.equal(item.before.length + item.after.length, 1);
    const { frames } = (await (await get(`/v1/video/items/${hits[0]?.item.id}/frames`)).json()) as {
      frames: { hash: string }[];
    };
    const pixels = await get(`/v1/blobs/${frames[0]?.hash}`);
    assert.equal(pixels.headers.get("content-type"), "image/jpeg");
    const other = await fetch(`${server.url}/v1/video/entities`, {
      headers: { "x-cairn-tenant": "globex", "x-cairn-user": "ana" },
    });
    assert.deepEqual(((await other.json()) as { entities: unknown[] }).entities, [], "another tenant sees none");
  });

  it("MCP: the agent's three tools — entities, a level search, an item with its frames", async (t) => {
    const clip = makeClip(tempDir(t), "two.mp4", { scenes: ["testsrc", "testsrc2"], sceneSeconds: 3 });
    const memory = await openMemory(t, sceneDetector([5, 6]));
    t.after(() => memory.close());
    await (await memory.watch(scope, clip, { stream: "two" })).done;
    const server = createMcpServer(memory, scope);
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "video-test", version: "1.0.0" });
    await client.connect(clientSide);
    t.after(() => client.close());
    const entities = (await client.callTool({ name: "cairn_video_entities", arguments: {} })) as {
      structuredContent?: { entities: unknown[] };
    };
    assert.equal(entities.structuredContent?.entities.length, 2);
    const search = (await client.callTool({
      name: "cairn_video_search",
      arguments: { query: "person", level: "trace" },
    })) as {
      structuredContent?: { hits: { item: { id: string } }[] };
    };
    const id = search.structuredContent?.hits[0]?.item.id;
    assert.ok(id);
    const opened = (await client.callTool({ name: "cairn_video_item", arguments: { id } })) as {
      content: { type: string; mimeType?: string }[];
    };
    assert.ok(
      opened.content.some((block) => block.type === "image" && block.mimeType === "image/webp"),
      "thumbnails attached",
    );
  });
});
