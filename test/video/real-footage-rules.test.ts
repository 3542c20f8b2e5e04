import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { tempDir } from "../support/fixtures.ts";
import { noVideoDataReason, videoDataDir } from "../support/video-fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

/**
 * The rule scenario on the real bottle video (issue 14's target), with the real detector
 * (`@vladmandic/human`, through the Memory's default perception). Labels, by looking at the frames
 * (ffmpeg -vf fps=0.5 contact sheet): three bottles 0–6 s, two 7–11 s, three 12–16 s, one 18–21 s
 * (the only moment with fewer than two), two 22–27 s, three 28–31 s, two 32–35 s, three 36–39 s.
 */
describe("rules on the real bottle video", { skip: noVideoDataReason }, () => {
  it("'fewer than 2 bottles' delivers exactly one notification, at the drop to one bottle", async (t) => {
    const memory = await Memory.open({ path: tempDir(t), models: createHashModels() });
    t.after(() => memory.close());
    await memory.addVideoRule(scope, { text: "alert when fewer than 2 bottles remain" });
    const started = Date.parse("2026-01-01T10:00:00Z");
    const result = await (
      await memory.watch(scope, join(videoDataDir, "bottle-detection.mp4"), {
        stream: "bottles",
        startTime: "2026-01-01T10:00:00Z",
      })
    ).done;
    const log = (await memory.listVideoNotifications(scope)).reverse();
    const summary = log.map((item) => `${item.data.outcome}@${(item.startMs - started) / 1000}s`);
    t.diagnostic(
      `decisions: ${summary.join(", ")}; analysed ${result.analysed}/${result.segments} in ${result.wallMs} ms`,
    );
    const sent = log.filter((item) => item.data.outcome === "send");
    assert.equal(sent.length, 1, `decisions: ${summary.join(", ")}; analysed ${result.analysed}/${result.segments}`);
    const at = ((sent[0]?.startMs ?? 0) - started) / 1000;
    assert.ok(at >= 16 && at <= 22, `sent at ${at} s, the drop is at 17–18 s (${summary.join(", ")})`);
    assert.ok((await memory.videoKeyFrames(scope, sent[0]?.id ?? "")).length >= 1, "it resolves to its key frame");
  });
});
