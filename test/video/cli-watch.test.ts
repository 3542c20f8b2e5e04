import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cairnProcess } from "../support/cairn-process.ts";
import { tempDir, writeFile } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason } from "../support/video-fixtures.ts";

describe("cairn watch and cairn entities (the CLI as a process)", { skip: noFfmpegReason }, () => {
  it("refuses bad sources with exit 2 and creates nothing", async (t) => {
    const dir = tempDir(t);
    const db = `${dir}/db`;
    const missing = await cairnProcess([
      "watch",
      `${dir}/missing.mp4`,
      "--db",
      db,
      "--tenant",
      "acme",
      "--profile",
      "hash",
      "--json",
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no such file/);
    const text = writeFile(dir, "notes.mkv", "not a video");
    const notVideo = await cairnProcess(["watch", text, "--db", db, "--tenant", "acme", "--profile", "hash"]);
    assert.equal(notVideo.code, 2);
    assert.match(notVideo.stderr, /not a video/);
    const list = await cairnProcess(["entities", "list", "--db", db, "--tenant", "acme", "--profile", "hash"]);
    assert.equal(list.code, 3, "no store was created by the refused watches");
  });

  it("watches a clip with the real detector and lists what it wrote", { timeout: 120_000 }, async (t) => {
    const dir = tempDir(t);
    const db = `${dir}/db`;
    const clip = makeClip(dir, "clip.mp4", { scenes: ["testsrc"], sceneSeconds: 2, audio: "tone" });
    const watched = await cairnProcess(
      ["watch", clip, "--db", db, "--tenant", "acme", "--profile", "hash", "--json", "--stream", "cam"],
      {
        timeoutMs: 110_000,
      },
    );
    assert.equal(watched.code, 0, watched.stderr);
    const result = JSON.parse(watched.stdout) as { stream: string; frames: number; segments: number; analysed: number };
    assert.equal(result.stream, "cam");
    assert.equal(result.frames, 2);
    assert.equal(result.analysed, result.segments);
    const traces = await cairnProcess([
      "video",
      "search",
      "testsrc",
      "--level",
      "trace",
      "--db",
      db,
      "--tenant",
      "acme",
      "--profile",
      "hash",
      "--json",
    ]);
    assert.equal(traces.code, 0, traces.stderr);
    assert.equal((JSON.parse(traces.stdout) as unknown[]).length, result.analysed);
  });

  it("states a rule, lists it, reads the empty log and removes it", async (t) => {
    const db = `${tempDir(t)}/db`;
    const common = ["--db", db, "--tenant", "acme", "--profile", "hash", "--json"];
    const added = await cairnProcess([
      "video",
      "rule",
      "alert",
      "when",
      "fewer",
      "than",
      "2",
      "bottles",
      "remain",
      ...common,
    ]);
    assert.equal(added.code, 0, added.stderr);
    const rule = JSON.parse(added.stdout) as { id: string; data: { condition: unknown } };
    assert.deepEqual(rule.data.condition, { kind: "count", label: "bottle", op: "<", value: 2 });
    const listed = await cairnProcess(["video", "rules", ...common]);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { id: string }[]).map((found) => found.id),
      [rule.id],
    );
    const log = await cairnProcess(["video", "notifications", ...common]);
    assert.deepEqual(JSON.parse(log.stdout), []);
    const empty = await cairnProcess(["video", "rule", ...common]);
    assert.equal(empty.code, 2, "a rule without words is refused");
    const removed = await cairnProcess(["video", "unrule", rule.id, ...common]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(JSON.parse((await cairnProcess(["video", "rules", ...common])).stdout), []);
  });
});
