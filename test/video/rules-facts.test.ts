import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { InputError } from "../../src/core/errors.ts";
import { Memory, type VideoNotification } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { createOpenAIChat } from "../../src/models/openai-provider.ts";
import { startServer } from "../../src/surfaces/http/server.ts";
import { createMcpServer } from "../../src/surfaces/mcp/server.ts";
import type { Frame } from "../../src/video/gateway.ts";
import type { Detector, FrameDetections } from "../../src/video/perception/detector.ts";
import { verifySignature } from "../../src/video/procedural/deliveries.ts";
import type { VideoConfigInput } from "../../src/video/video-config.ts";
import { startFakeOpenAIServer } from "../models/fake-openai-server.ts";
import { tempDir } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason } from "../support/video-fixtures.ts";

const scope = { tenant: "acme", user: "ana" };
const sceneMs = 3000;

/**
 * A detector behind the real seam: scene `i` (3 s) shows `bottles[i]` bottles and, when
 * `people[i]` is set, that person's face (a one-hot descriptor) with a person box.
 */
function tableDetector(bottles: readonly number[], people: readonly (number | null)[] = []): Detector {
  return {
    id: "fake-table-detector",
    async detect(frames: readonly Frame[]): Promise<FrameDetections[]> {
      return frames.map((frame) => {
        const scene = Math.floor(frame.timeMs / sceneMs);
        const objects = Array.from({ length: bottles[scene] ?? 0 }, (_, index) => ({
          label: "bottle",
          score: 0.5,
          box: [10 + index * 60, 100, 30, 70] as const,
        }));
        const person = people[scene] ?? null;
        if (person === null) return { faces: [], objects };
        const descriptor = new Float32Array(8);
        descriptor[person] = 1;
        return {
          faces: [{ box: [120, 30, 64, 64], score: 0.95, descriptor }],
          objects: [...objects, { label: "person", score: 0.9, box: [100, 10, 110, 160] }],
        };
      });
    },
    async close() {},
  };
}

async function open(t: { after: (fn: () => void) => void }, detector: Detector, config: VideoConfigInput = {}) {
  const memory = await Memory.open({
    path: tempDir(t),
    models: createHashModels(),
    video: {
      detector,
      config: { gateway: { fps: 2 }, segmenter: { maxSegmentMs: sceneMs }, ...config },
    },
  });
  t.after(() => memory.close());
  return memory;
}

describe("procedural memory: rules, signals and the notifier", () => {
  it("parses rules in words, refuses a bad one and writes nothing", async (t) => {
    const memory = await open(t, tableDetector([]));
    const rule = await memory.addVideoRule(scope, { text: "Alert me when fewer than 2 bottles remain" });
    assert.deepEqual(rule.data.condition, { kind: "count", label: "bottle", op: "<", value: 2 });
    const arrival = await memory.addVideoRule(scope, { text: "tell me when Ana arrives" });
    assert.deepEqual(arrival.data.condition, { kind: "arrival", entity: "Ana" });
    const preference = await memory.addVideoRule(scope, { text: "I prefer short summaries" });
    assert.deepEqual(preference.data.condition, { kind: "preference" });
    await assert.rejects(memory.addVideoRule(scope, { text: "   " }), InputError);
    await assert.rejects(
      memory.addVideoRule(scope, { text: "x", condition: { kind: "count", label: "bottle", op: "<", value: -1 } }),
      InputError,
    );
    assert.equal((await memory.listVideoRules(scope)).length, 3);
    assert.deepEqual(await memory.listVideoRules({ tenant: "globex", user: "ana" }), [], "rules are per scope");
    const actions = (await memory.listAudit(scope, { limit: 10 })).map((event) => event.action);
    assert.equal(actions.filter((action) => action === "video.rule.add").length, 3);
    await memory.removeVideoRule(scope, preference.id);
    assert.equal((await memory.listVideoRules(scope)).length, 2);
  });

  it("one delivery per drop below the threshold: none while it stays low, none when it is back, none within the cooldown", {
    skip: noFfmpegReason,
  }, async (t) => {
    // Bottles per 3 s scene: 3, then a drop to 1 for two scenes, back to 3, a second drop 6 s after the first
    // delivery (within the 60 s cooldown), back, and with the cooldown at 5 s the same clip sends both.
    const bottles = [3, 1, 1, 3, 1, 3];
    const scenes = bottles.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2"));
    const clip = makeClip(tempDir(t), "bottles.mp4", { scenes, sceneSeconds: 3 });

    const received: { body: string; signature: string }[] = [];
    let failFirst = true;
    const hook = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        if (failFirst) {
          failFirst = false;
          response.writeHead(503).end();
          return;
        }
        received.push({ body, signature: String(request.headers["x-cairn-signature"]) });
        response.writeHead(204).end();
      });
    });
    hook.listen(0, "127.0.0.1");
    await once(hook, "listening");
    t.after(() => hook.close());
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;

    const memory = await open(t, tableDetector(bottles), {
      notify: { webhooks: [{ url, secret: "s3cret" }], retryBaseMs: 10 },
    });
    const rule = await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
    const live: VideoNotification[] = [];
    const unsubscribe = memory.subscribeVideoNotifications(scope, (notification) => live.push(notification));
    const others: VideoNotification[] = [];
    memory.subscribeVideoNotifications({ tenant: "globex", user: "ana" }, (notification) => others.push(notification));
    const result = await (await memory.watch(scope, clip, { stream: "table", startTime: "2026-01-01T10:00:00Z" })).done;
    unsubscribe();
    assert.equal(result.analysed, 6);

    const log = (await memory.listVideoNotifications(scope)).reverse();
    assert.deepEqual(
      log.map((item) => [item.data.outcome, item.startMs - Date.parse("2026-01-01T10:00:00Z")]),
      [
        ["send", 3000],
        ["suppressed", 8500],
        ["cleared", 9000],
        ["suppressed", 12000],
        ["cleared", 15000],
      ],
      "sent at the first drop, a duplicate while low, re-armed when back, the second drop within the cooldown",
    );
    assert.match(String(log[3]?.data.reason), /^cooldown/);
    assert.equal(live.length, 1, "the SSE listener got the one delivery");
    assert.equal(others.length, 0, "another tenant's listener got nothing");
    assert.equal(live[0]?.ruleId, rule.id);
    assert.equal(received.length, 1, "the webhook got it once, after one retried 503");
    const [delivery] = received;
    assert.ok(delivery && verifySignature(delivery.body, delivery.signature, "s3cret"), "signed");
    assert.deepEqual(
      ((log[0]?.data.deliveries ?? []) as { channel: string; ok: boolean; attempts: number }[]).map((d) => [
        d.channel,
        d.ok,
        d.attempts,
      ]),
      [
        ["sse", true, 1],
        [url, true, 2],
      ],
    );

    // Every notification resolves to the raw key frames behind it.
    for (const item of log) {
      const frames = await memory.videoKeyFrames(scope, item.id);
      assert.ok(frames.length >= 1, `${item.id} has key frames`);
    }
    const audit = (await memory.listAudit(scope, { limit: 100 })).filter((event) => event.action === "video.notify");
    assert.equal(audit.length, 5, "every decision is audited");

    // Forgetting the segment behind the delivery removes it from the log.
    const sessions = await memory.listSessions(scope);
    const second = sessions.find((session) => session.key.endsWith("#1"));
    assert.ok(second);
    await memory.forget(scope, { session: second.id });
    assert.equal(
      (await memory.listVideoNotifications(scope)).some((item) => item.data.outcome === "send"),
      false,
    );
  });

  it("a shorter cooldown in the source's policy sends the second drop too", { skip: noFfmpegReason }, async (t) => {
    const bottles = [3, 1, 1, 3, 1, 3];
    const scenes = bottles.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2"));
    const clip = makeClip(tempDir(t), "bottles.mp4", { scenes, sceneSeconds: 3 });
    const memory = await open(t, tableDetector(bottles), { notify: { sources: { table: { cooldownMs: 5000 } } } });
    await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
    await (await memory.watch(scope, clip, { stream: "table" })).done;
    const sent = await memory.listVideoNotifications(scope, { outcome: "send" });
    assert.equal(sent.length, 2);
  });
});

describe("the notifier's record across a restart", () => {
  it("a restarted watch of the same source inside the cooldown does not resend, and does not repeat a condition still holding", {
    skip: noFfmpegReason,
  }, async (t) => {
    const dir = tempDir(t);
    const path = tempDir(t);
    const started = Date.parse("2026-01-01T10:00:00Z");
    const at = (ms: number) => new Date(started + ms).toISOString();
    const watchOnce = async (bottles: number[], name: string, startMs: number) => {
      const scenes = bottles.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2"));
      const clip = makeClip(dir, name, { scenes, sceneSeconds: 3 });
      const memory = await Memory.open({
        path,
        models: createHashModels(),
        video: {
          detector: tableDetector(bottles),
          config: { gateway: { fps: 2 }, segmenter: { maxSegmentMs: sceneMs } },
        },
      });
      try {
        if ((await memory.listVideoRules(scope)).length === 0)
          await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
        // No stream name: each watch is `cam.mp4@<start>`, two streams of one source (the same camera).
        await (await memory.watch(scope, clip, { startTime: at(startMs) })).done;
        return (await memory.listVideoNotifications(scope, { limit: 100 }))
          .reverse()
          .map((item) => [item.data.outcome, item.startMs - started, String(item.data.reason)] as const);
      } finally {
        await memory.close();
      }
    };
    // First run: a drop at 3 s is delivered; the stream stops while the count is still low.
    const first = await watchOnce([3, 1, 1], "cam.mp4", 0);
    assert.deepEqual(
      first.filter(([outcome]) => outcome === "send").map(([, ms]) => ms),
      [3000],
    );
    // Restarted 9 s later (a new process, the same store): still low, back to three, low again at 18 s.
    const second = (await watchOnce([1, 1, 3, 1, 3], "cam.mp4", 9000)).slice(first.length);
    assert.deepEqual(
      second.map(([outcome, ms]) => [outcome, ms]),
      [
        ["suppressed", 11500],
        ["suppressed", 14500],
        ["cleared", 15000],
        ["suppressed", 18000],
        ["cleared", 21000],
      ],
      "nothing sent after the restart: a duplicate while still low, the next drop inside the cooldown",
    );
    assert.match(second[0]?.[2] ?? "", /^duplicate/);
    assert.match(second[3]?.[2] ?? "", /^cooldown: 15 s since the last delivery/);
  });
});

describe("semantic memory through the pipeline", () => {
  it("consolidates an entity's facts every 5 observations, with provenance, and forget takes them", {
    skip: noFfmpegReason,
  }, async (t) => {
    const people = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
    const bottles = people.map(() => 1);
    const scenes = people.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2"));
    const clip = makeClip(tempDir(t), "visits.mp4", { scenes, sceneSeconds: 3 });
    const memory = await open(t, tableDetector(bottles, people));
    await (await memory.watch(scope, clip, { stream: "visits", startTime: "2026-01-01T10:00:00Z" })).done;
    const [entity] = await memory.listEntities(scope);
    assert.ok(entity);
    assert.equal(entity.observations, 10);
    await memory.nameEntity(scope, entity.id, "Ana");

    const panel = await memory.entityMemory(scope, entity.id);
    const byText = new Map(panel.facts.map((fact) => [fact.text, fact]));
    const identity = byText.get("is named Ana");
    assert.equal(identity?.importance, 1);
    assert.equal(identity?.category, "identity");
    const near = byText.get("often seen near a bottle");
    assert.ok(near, `facts: ${[...byText.keys()].join("; ")}`);
    // Consolidated at the 5th observation (4 earlier ones read) and re-confirmed at the 10th by 5 new ones.
    assert.equal(near.confirmations, 1);
    assert.equal(near.importance, 0.6, "Eq. 1 once: 0.5 + 0.5·0.2");
    assert.deepEqual(
      near.history.map((edit) => edit.op),
      ["add", "confirm"],
    );
    assert.ok(near.sources.length >= 9, "the fact points to the raw key frames and crops behind it");
    assert.equal(panel.nextConsolidationIn, 5);
    const hits = await memory.searchVideo(scope, "bottle", { level: "fact" });
    assert.equal(hits[0]?.item.text, "often seen near a bottle");
    const audit = (await memory.listAudit(scope, { limit: 300 })).map((event) => event.action);
    assert.ok(
      audit.includes("video.fact.add") && audit.includes("video.fact.confirm") && audit.includes("video.consolidation"),
    );

    // The source's own (scene) facts, from its segments: consolidated every 5 segments the same way.
    const scene = await memory.listFacts(scope, { source: "visits" });
    const bottle = scene.find((fact) => fact.text === "a bottle is usually in view");
    assert.ok(bottle, `scene facts: ${scene.map((fact) => fact.text).join("; ")}`);
    assert.equal(bottle.entityId, null);
    assert.equal(bottle.source, "visits");
    assert.equal(bottle.importance, 0.6, "added at the 5th segment from 4 earlier ones, re-confirmed at the 10th");
    assert.ok(bottle.sources.length >= 4, "it points to the key frames of the segments behind it");
    assert.ok(scene.some((fact) => fact.text === "usually one person in view at a time"));
    assert.equal(
      scene.some((fact) => fact.text === "different people come and go"),
      false,
      "one person all along is not a place people come and go",
    );

    // Forget one segment the fact was justified by: the fact goes, the user's identity fact stays.
    const sessions = await memory.listSessions(scope);
    await memory.forget(scope, { session: sessions[0]?.id ?? "" });
    const after = await memory.listFacts(scope, { entityId: entity.id });
    assert.equal(
      after.some((fact) => fact.text === "often seen near a bottle"),
      false,
    );
    assert.ok(after.some((fact) => fact.text === "is named Ana"));
  });
});

describe("rules, facts and the notification log on HTTP and MCP", { skip: noFfmpegReason }, () => {
  it("HTTP: a rule posted, its delivery on the SSE stream, the log, the facts and an entity's panel", async (t) => {
    const people = [1, 1, 1, 1, 1, 1];
    const bottles = [3, 3, 1, 1, 3, 3];
    const clip = makeClip(tempDir(t), "visits.mp4", {
      scenes: people.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2")),
      sceneSeconds: 3,
    });
    const memory = await open(t, tableDetector(bottles, people));
    const server = await startServer({ memory, keys: null, port: 0 });
    t.after(() => server.close());
    const headers = { "x-cairn-tenant": "acme", "x-cairn-user": "ana" };
    const call = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${server.url}${path}`, { ...init, headers: { ...headers, ...init.headers } });
      assert.ok(response.ok, `${path}: ${response.status} ${await response.clone().text()}`);
      return response.json() as Promise<Record<string, unknown>>;
    };
    const { rule } = (await call("/v1/video/rules", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "alert when fewer than 2 bottles remain" }),
    })) as { rule: { id: string } };
    const bad = await fetch(`${server.url}/v1/video/rules`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ text: "" }),
    });
    assert.equal(bad.status, 400);

    const events = await fetch(`${server.url}/v1/video/notifications/stream`, { headers });
    assert.equal(events.headers.get("content-type"), "text/event-stream");
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    let seen = "";
    const delivered = (async () => {
      while (!seen.includes("event: notification")) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      await reader.cancel();
    })();
    await (await memory.watch(scope, clip, { stream: "visits" })).done;
    await delivered;
    assert.match(seen, new RegExp(`"ruleId":"${rule.id}"`));

    const { notifications } = (await call("/v1/video/notifications?outcome=send")) as {
      notifications: { id: string }[];
    };
    assert.equal(notifications.length, 1);
    const { frames } = (await call(`/v1/video/items/${notifications[0]?.id}/frames`)) as { frames: unknown[] };
    assert.ok(frames.length >= 1, "the notification's key frames");
    const { facts } = (await call("/v1/video/facts")) as { facts: { text: string; sources: string[] }[] };
    assert.ok(facts.some((fact) => fact.text === "often seen near a bottle" && fact.sources.length > 0));
    const [entity] = await memory.listEntities(scope);
    const panel = (await call(`/v1/video/entities/${entity?.id}/memory`)) as { facts: unknown[]; recent: unknown[] };
    assert.ok(panel.facts.length >= 1 && panel.recent.length >= 1);
    const { hits } = (await call("/v1/video/search?q=bottle&level=fact")) as { hits: unknown[] };
    assert.ok(hits.length >= 1);
    await call(`/v1/video/rules/${rule.id}`, { method: "DELETE" });
    assert.deepEqual(((await call("/v1/video/rules")) as { rules: unknown[] }).rules, []);
  });

  it("MCP: set a rule, search facts, open an entity's memory", async (t) => {
    const people = [2, 2, 2, 2, 2, 2];
    const clip = makeClip(tempDir(t), "visits.mp4", {
      scenes: people.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2")),
      sceneSeconds: 3,
    });
    const memory = await open(t, tableDetector([1, 1, 1, 1, 1, 1], people));
    const server = createMcpServer(memory, scope);
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "video2-test", version: "1.0.0" });
    await client.connect(clientSide);
    t.after(() => client.close());
    const set = (await client.callTool({
      name: "cairn_video_rule",
      arguments: { text: "tell me when Ana arrives" },
    })) as { structuredContent?: { rule: { data: { condition: unknown } } } };
    assert.deepEqual(set.structuredContent?.rule.data.condition, { kind: "arrival", entity: "Ana" });
    await (await memory.watch(scope, clip, { stream: "visits" })).done;
    const search = (await client.callTool({
      name: "cairn_video_search",
      arguments: { query: "bottle", level: "fact" },
    })) as { structuredContent?: { hits: { item: { entityId: string } }[] } };
    const entityId = search.structuredContent?.hits[0]?.item.entityId;
    assert.ok(entityId);
    const panel = (await client.callTool({ name: "cairn_video_entity", arguments: { id: entityId } })) as {
      structuredContent?: { facts: { text: string; importance: number }[] };
    };
    assert.ok(panel.structuredContent?.facts.some((fact) => fact.text === "often seen near a bottle"));
  });
});

describe("the answer flow through the openai provider", { skip: noFfmpegReason }, () => {
  it("answers from the memory it was shown and keeps only the citations it was shown", async (t) => {
    const server = await startFakeOpenAIServer();
    const { chat, close } = createOpenAIChat({ baseUrl: server.url, apiKey: "sk-test", model: "gpt-4o-mini" });
    t.after(async () => {
      await close();
      await server.close();
    });
    const people = [3, 3, 3, 3, 3, 3];
    const clip = makeClip(tempDir(t), "visits.mp4", {
      scenes: people.map((_, index) => (index % 2 === 0 ? "testsrc" : "testsrc2")),
      sceneSeconds: 3,
    });
    const memory = await Memory.open({
      path: tempDir(t),
      models: { ...createHashModels(), chat },
      video: {
        detector: tableDetector([1, 1, 1, 1, 1, 1], people),
        config: { gateway: { fps: 2 }, segmenter: { maxSegmentMs: sceneMs } },
      },
    });
    t.after(() => memory.close());
    await (await memory.watch(scope, clip, { stream: "visits" })).done;
    const question = "Was there a bottle near the person?";
    // A fact the flow shows the model: its best fact hit for the question (the scope also holds scene
    // facts, and the most important fact overall need not be among the shown ones).
    const fact = (await memory.searchVideo(scope, question, { level: "fact" }))[0]?.item;
    assert.ok(fact);
    const recorded = server.fixture("chat-completion-video-answer") as { choices: { message: { content: string } }[] };
    const [choice] = recorded.choices;
    assert.ok(choice);
    choice.message.content = choice.message.content.replace("ITEM_ID", fact.id);
    server.replyNext("/chat/completions", { body: JSON.stringify(recorded) });
    const answer = await memory.answerFromVideo(scope, question, {
      levels: ["fact", "trace"],
    });
    assert.match(answer.answer, /near a bottle/);
    assert.deepEqual(
      answer.cited.map((item) => item.id),
      [fact.id],
    );
    assert.equal(answer.warnings.length, 1, "the id it was not shown is dropped, with a warning");
    const body = server.requestsTo("/chat/completions")[0]?.body as { messages: { content: string }[] };
    const shown = JSON.parse(body.messages[1]?.content ?? "{}") as { items: { id: string }[] };
    assert.ok(shown.items.some((item) => item.id === fact.id));
    const plain = await Memory.open({ path: tempDir(t), models: createHashModels() });
    t.after(() => plain.close());
    await assert.rejects(plain.answerFromVideo(scope, "anything"), /chat model/);
  });
});
