import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { gateSegment } from "../../src/video/gate.ts";
import { defaultGatewayOptions, openVideoStream, parseVideoSource } from "../../src/video/gateway.ts";
import { type Segment, Segmenter } from "../../src/video/segmenter.ts";
import { VoiceActivity } from "../../src/video/voice-activity.ts";
import { tempDir } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason } from "../support/video-fixtures.ts";

async function segmentsOf(path: string, fps: number, maxSegmentMs = 10_000): Promise<Segment[]> {
  const stream = await openVideoStream(parseVideoSource(path), { ...defaultGatewayOptions, fps });
  const segmenter = new Segmenter({ fps, config: { sceneCut: 0.18, maxSegmentMs, minSegmentMs: 2000 } });
  const voice = new VoiceActivity();
  const segments: Segment[] = [];
  for await (const frame of stream.frames()) {
    const audio = await stream.audio(frame.timeMs, frame.timeMs + 1000 / fps);
    const segment = segmenter.push(frame, { voicedMs: voice.voicedMs(audio.samples), audio: audio.status });
    if (segment) segments.push(segment);
  }
  const last = segmenter.flush();
  if (last) segments.push(last);
  return segments;
}

describe("segments and the gate", { skip: noFfmpegReason }, () => {
  it("cuts at scene changes and at the maximum length", async (t) => {
    const clip = makeClip(tempDir(t), "scenes.mp4", {
      scenes: ["testsrc", "color=c=navy", "smptebars"],
      sceneSeconds: 4,
    });
    const segments = await segmentsOf(clip, 2, 3000);
    const starts = segments.map((segment) => [segment.startMs, segment.startedBy]);
    assert.deepEqual(starts, [
      [0, "start"],
      [3000, "max-length"],
      [4000, "scene"],
      [7000, "max-length"],
      [8000, "scene"],
      [11000, "max-length"],
    ]);
    const navy = segments[2];
    assert.ok(navy && navy.motion < 0.001, "a solid colour does not move");
    assert.ok((segments[0]?.motion ?? 0) > 0.001, "testsrc's counter and sweep move");
    assert.equal(segments.at(-1)?.endedBy, "end");
    assert.equal(segments.at(-1)?.endMs, 12000);
  });

  it("hears a tone as voice and silence as none", async (t) => {
    const dir = tempDir(t);
    const loud = await segmentsOf(makeClip(dir, "tone.mp4", { sceneSeconds: 3, audio: "tone" }), 2);
    assert.ok((loud[0]?.voicedMs ?? 0) > 2000, `voiced ${loud[0]?.voicedMs} ms`);
    assert.equal(loud[0]?.audio, "ok");
    const quiet = await segmentsOf(makeClip(dir, "quiet.mp4", { sceneSeconds: 3, audio: "silence" }), 2);
    assert.equal(quiet[0]?.voicedMs, 0);
  });

  it("gate: skips only static silent segments that do not open an event", () => {
    const base: Segment = {
      index: 3,
      startMs: 0,
      endMs: 1000,
      frames: [],
      startedBy: "max-length",
      endedBy: "max-length",
      motion: 0,
      voicedMs: 0,
      audio: "ok",
    };
    assert.deepEqual(gateSegment(base, { firstOfEvent: false }), { analyse: false, reason: "static-silent" });
    assert.equal(gateSegment(base, { firstOfEvent: true }).reason, "first-of-event");
    assert.equal(gateSegment({ ...base, voicedMs: 900 }, { firstOfEvent: false }).reason, "speech");
    assert.equal(gateSegment({ ...base, audio: "failed" }, { firstOfEvent: false }).reason, "audio-failed");
    assert.equal(gateSegment({ ...base, motion: 0.05 }, { firstOfEvent: false }).reason, "motion");
    assert.equal(gateSegment({ ...base, audio: "absent" }, { firstOfEvent: false }).analyse, false);
  });
});
