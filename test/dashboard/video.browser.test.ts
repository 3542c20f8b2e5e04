import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import type { Frame } from "../../src/video/gateway.ts";
import type { Detector, FrameDetections } from "../../src/video/perception/detector.ts";
import { chromiumSkip, dashboardPage, launchChromium } from "../support/chromium.ts";
import { tempDir } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason } from "../support/video-fixtures.ts";

const skip = chromiumSkip || noFfmpegReason;
const scope = { tenant: "acme", user: "ana" };

/** While set, detection waits for it: a watch stays running (live) until the test lets it go. */
let hold: Promise<void> | null = null;

/** One person (a one-hot face) at a table; scene 2 and 3 of 6 show one bottle, the others three. */
const detector: Detector = {
  id: "fake-table-detector",
  async detect(frames: readonly Frame[]): Promise<FrameDetections[]> {
    if (hold) await hold;
    return frames.map((frame) => {
      const scene = Math.floor(frame.timeMs / 3000);
      const bottles = scene === 2 || scene === 3 ? 1 : 3;
      const descriptor = new Float32Array(8);
      descriptor[1] = 1;
      return {
        faces: [{ box: [120, 30, 64, 64], score: 0.95, descriptor }],
        objects: [
          ...Array.from({ length: bottles }, (_, index) => ({
            label: "bottle",
            score: 0.5,
            box: [10 + index * 60, 100, 30, 70] as const,
          })),
          { label: "person", score: 0.9, box: [100, 10, 110, 160] as const },
        ],
      };
    });
  },
  async close() {},
};

describe("dashboard video panel in Chromium", { skip }, () => {
  let server: RunningServer;
  let browser: Browser;
  let memory: Memory;
  let clip: string;
  const cleanups: (() => void)[] = [];

  before(async () => {
    const dir = tempDir({ after: (fn) => cleanups.push(fn) }, "cairn-video-dashboard-");
    memory = await Memory.open({
      path: join(dir, "store"),
      models: createHashModels(),
      video: { detector, config: { gateway: { fps: 2 }, segmenter: { maxSegmentMs: 3000 } } },
    });
    await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
    clip = makeClip(dir, "table.mp4", {
      scenes: ["testsrc", "testsrc2", "testsrc", "testsrc2", "testsrc", "testsrc2"],
      sceneSeconds: 3,
    });
    await (await memory.watch(scope, clip, { stream: "table", startTime: "2026-01-01T10:00:00Z" })).done;
    const [entity] = await memory.listEntities(scope);
    await memory.nameEntity(scope, entity?.id ?? "", "Ana");
    server = await startServer({ memory, keys: null, host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    for (const cleanup of cleanups) cleanup();
  });

  it("shows moments with key frames, an entity's facts with importance and edits, the rules and the log", async () => {
    const { page, problems } = await dashboardPage(browser, { tenant: "acme", user: "ana" });
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    await page.waitForSelector("#video:not([hidden]) #video-moments .moment");
    assert.equal(await page.locator("#video-moments .moment").count(), 6, "one moment per analysed segment");
    // Thumbnails load as they come near the viewport.
    await page.locator("#video-moments").scrollIntoViewIfNeeded();
    await page.waitForSelector("#video-moments .moment img[src^='blob:']", { state: "attached" });
    assert.match((await page.textContent("#video-rules")) ?? "", /bottle < 2/);
    const outcomes = await page
      .locator("#video-notifications tr")
      .evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.outcome));
    assert.deepEqual(outcomes, ["cleared", "suppressed", "send"], "newest first");
    await page.click("#video-entities button");
    await page.waitForSelector("#video-entity:not([hidden]) .fact");
    const facts = await page.locator("#video-entity .fact").allTextContents();
    assert.ok(
      facts.some((text) => /1\.00 identity is named Ana/.test(text)),
      facts.join(" | "),
    );
    assert.ok(
      facts.some((text) => /often seen near a bottle/.test(text) && /add/.test(text)),
      facts.join(" | "),
    );
    assert.match((await page.textContent("#video-entity")) ?? "", /Sightings[\s\S]*table/);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("source view: a recorded stream's segments on a timeline with key frames and media times, its scene facts, and a running watch shown live", async () => {
    const { page, problems } = await dashboardPage(browser, { tenant: "acme", user: "ana" });
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    // A second camera whose watch is still running when the page opens (its detector is held).
    let release = () => {};
    hold = new Promise((resolve) => {
      release = resolve;
    });
    const door = await memory.watch(scope, clip, { stream: "door", startTime: "2026-01-01T11:00:00Z" });
    try {
      await page.goto(server.url);
      await page.waitForSelector("body[data-ready=true]");
      await page.waitForSelector("#video:not([hidden]) #video-sources button[data-source=table]");
      assert.equal(await page.getAttribute("#video-sources button[data-source=door]", "data-live"), "true");
      assert.equal(await page.getAttribute("#video-sources button[data-source=table]", "data-live"), "false");

      await page.click("#video-sources button[data-source=table]");
      await page.waitForSelector("#video-source:not([hidden]) .timeline .segment");
      assert.match((await page.textContent("#video-source h3")) ?? "", /table\s*recorded/);
      assert.equal(await page.locator("#video-source .timeline .segment").count(), 6, "one per analysed segment");
      assert.equal(await page.locator("#video-source .timeline-track span").count(), 6);
      const times = await page.locator("#video-source .segment-time").allTextContents();
      assert.match(times[0] ?? "", /^0:00–0:03/, times.join(" | "));
      assert.match(times[5] ?? "", /^0:15–0:18/, times.join(" | "));
      await page.locator("#video-source .timeline").scrollIntoViewIfNeeded();
      await page.waitForSelector("#video-source .segment img[src^='blob:']", { state: "attached" });
      const scene = await page.locator("#video-source .fact").allTextContents();
      assert.ok(
        scene.some((text) => /0\.50 a bottle is usually in view/.test(text) && /add/.test(text)),
        scene.join(" | "),
      );

      // The running watch: shown live, then refreshed to recorded once it ends, with its segments.
      await page.click("#video-sources button[data-source=door]");
      await page.waitForSelector("#video-source h3 .badge.live");
      assert.match((await page.textContent("#video-source .source-status")) ?? "", /Watching since/);
      release();
      hold = null;
      await door.done;
      await page.waitForFunction(() => document.querySelector("#video-source h3 .badge")?.textContent === "recorded");
      assert.equal(await page.locator("#video-source .timeline .segment").count(), 6);
    } finally {
      release();
      hold = null;
      await door.done;
    }
    assert.deepEqual(problems, []);
    await page.close();
  });
});
