import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { quotedShare, replayRetention } from "../../src/bench/context/context-replay.ts";
import { datasetTrajectory, type ReplayTrajectory } from "../../src/bench/context/dataset-trajectory.ts";
import type { BenchQuestion } from "../../src/bench/dataset.ts";
import { defaultDataDir, loadLcmp } from "../../src/bench/datasets/index.ts";
import { defaultImageTokenRule } from "../../src/context/image-tokens.ts";
import { managerNamed } from "../../src/context/managers/index.ts";
import { defaultRenderSettings } from "../../src/context/render/page-layout.ts";
import type { TrajectoryMessage } from "../../src/context/trajectory.ts";
import { image, sentence } from "../context/support.ts";

/** Two histories back to back; each asks about its first turn (old by then) and its last (recent). */
async function replay(): Promise<ReplayTrajectory> {
  const messages: TrajectoryMessage[] = [];
  const turnMessages = new Map<string, string[]>();
  const imageIds = new Map<string, string[]>();
  const checkpoints: { after: number; history: string; questions: BenchQuestion[] }[] = [];
  for (const history of ["h1", "h2"]) {
    for (let turn = 0; turn < 60; turn++) {
      const id = `${history}/${turn}`;
      const images = turn === 0 ? [await image(`${id}#img0`, "the red kayak")] : [];
      messages.push({
        id,
        role: turn % 2 ? "assistant" : "user",
        text: sentence(`${history}t${turn}marker`, 120, turn),
        images,
        artifacts: [],
        toolCalls: [],
      });
      turnMessages.set(`${history}|D1:${turn}`, [id]);
      if (images.length > 0) imageIds.set(`${history}|IMG0`, [`${id}#img0`]);
    }
    const question = (id: string, turn: number, images: string[]): BenchQuestion => ({
      id,
      text: "?",
      category: "c",
      gold: { turns: [`D1:${turn}`], sessions: [], images },
    });
    checkpoints.push({
      after: messages.length - 1,
      history,
      questions: [question(`${history}-old`, 0, ["IMG0"]), question(`${history}-new`, 59, [])],
    });
  }
  return { trajectory: { id: "synthetic", messages }, checkpoints, turnMessages, imageIds };
}

const options = {
  budget: { window: 16_000, trigger: 8_000, keepRecent: 4, managedShare: 0.5 },
  imageRule: defaultImageTokenRule,
  render: defaultRenderSettings,
};

describe("context retention replay", () => {
  it("counts one call per assistant message and scores gold present at each question's time", async () => {
    const data = await replay();
    const none = await replayRetention(data, managerNamed("none"), options);
    assert.equal(none.tokens.calls, 60);
    assert.equal(none.triggers, 0);
    assert.equal(none.turnRetention, 1);
    assert.equal(none.imageNative, 1);
    assert.ok(none.callsOverWindow > 0, "No Compression outgrows the window and the replay says so");
    const reset = await replayRetention(data, managerNamed("discard-all"), options);
    assert.ok(reset.triggers > 0);
    assert.equal(reset.turnRetention, 0.5, "the recent turn stays, the first turn is gone");
    assert.equal(reset.imageNative, 0);
    assert.equal(reset.callsOverWindow, 0);
    assert.ok(reset.tokens.nonCache < none.tokens.nonCache / 2);
    assert.equal(none.nonCacheBeforeFirstTrigger, none.tokens.nonCache, "never triggered: all of it is before");
    assert.ok(reset.nonCacheBeforeFirstTrigger > 0 && reset.nonCacheBeforeFirstTrigger < reset.tokens.nonCache);
    const vera = await replayRetention(data, managerNamed("vera"), options);
    assert.equal(vera.imageNative, 1, "VERA keeps the old image native");
    const rendering = await replayRetention(data, managerNamed("visual-rendering"), options);
    assert.equal(rendering.imageNative, 0, "Visual Rendering keeps only its caption");
  });
});

describe("quoted presence", () => {
  it("finds a turn's words only when they stand together, not scattered over the whole text", () => {
    const turn = ["kayak", "lake", "bled", "rented"];
    const together = ["we", "rented", "kayak", "lake", "bled", "today"];
    assert.equal(quotedShare(turn, together, 8), 1);
    const scattered = [
      "kayak",
      ...Array.from({ length: 20 }, (_, i) => `w${i}`),
      "lake",
      ...Array.from({ length: 20 }, (_, i) => `v${i}`),
      "bled",
      "rented",
    ];
    assert.equal(quotedShare(turn, scattered, 8), 0.5, "only 'bled rented' stand within 8 words of each other");
    assert.equal(quotedShare(turn, [], 8), 0);
  });
});

const realDataDir = process.env.CAIRN_DATA?.trim() ? path.resolve(process.env.CAIRN_DATA) : defaultDataDir;

describe("datasets as trajectories", () => {
  it("LCMP: real images become native images, each concept's questions come right after its concept", async (t) => {
    if (!existsSync(path.join(realDataDir, "lcmp"))) {
      t.skip(`real data not found at ${realDataDir} (set CAIRN_DATA to the folder holding lcmp/)`);
      return;
    }
    const dataset = await loadLcmp(realDataDir, { limit: 2 });
    const replayed = await datasetTrajectory(dataset);
    const { messages } = replayed.trajectory;
    assert.ok(messages.some((message) => message.images.length > 0 && message.images[0]?.mediaType === "image/png"));
    assert.equal(replayed.checkpoints.length, 2);
    const [first, second] = replayed.checkpoints;
    assert.ok(first && second && first.after < second.after && second.after === messages.length - 1);
    const question = first.questions.find((entry) => entry.gold.images.length > 0);
    assert.ok(question, "a question with image gold");
    const history = first.history;
    const ids = question.gold.images.flatMap((id) => replayed.imageIds.get(`${history}|${id}`) ?? []);
    assert.ok(ids.length > 0, "gold images map to trajectory images");
    assert.ok(
      ids.every(
        (id) => messages.findIndex((message) => message.images.some((image) => image.id === id)) <= first.after,
      ),
    );
  });
});
