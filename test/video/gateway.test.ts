import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createReadStream, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { defaultGatewayOptions, openVideoStream, parseVideoSource } from "../../src/video/gateway.ts";
import { FfmpegMissingError, VideoSourceError } from "../../src/video/video-errors.ts";
import { tempDir, writeFile } from "../support/fixtures.ts";
import { makeClip, noFfmpegReason, videoDataDir } from "../support/video-fixtures.ts";

const options = { ...defaultGatewayOptions, fps: 2 };

async function collect(stream: Awaited<ReturnType<typeof openVideoStream>>) {
  const frames = [];
  for await (const frame of stream.frames()) frames.push(frame);
  return frames;
}

describe("video gateway", { skip: noFfmpegReason }, () => {
  it("decodes a file into frames at the configured rate, with 16 kHz mono audio", async (t) => {
    const dir = tempDir(t);
    const clip = makeClip(dir, "tone.mp4", { sceneSeconds: 3, audio: "tone" });
    const stream = await openVideoStream(parseVideoSource(clip), options);
    assert.equal(stream.probe.hasAudio, true);
    assert.deepEqual([stream.width, stream.height], [320, 180]);
    const frames = await collect(stream);
    assert.equal(frames.length, 6, "3 s at 2 frames/s");
    assert.deepEqual(
      frames.map((frame) => frame.timeMs),
      [0, 500, 1000, 1500, 2000, 2500],
    );
    assert.equal(frames[0]?.rgb.length, 320 * 180 * 3);
    const audio = await stream.audio(1000, 2000);
    assert.equal(audio.status, "ok");
    assert.equal(audio.samples.length, 16_000, "one second of 16 kHz mono");
    assert.ok(Math.max(...audio.samples) > 1000, "the tone is audible");
  });

  it("scales wide frames down to maxWidth, keeping the aspect ratio", async (t) => {
    const clip = makeClip(tempDir(t), "wide.mp4", { sceneSeconds: 1 });
    const stream = await openVideoStream(parseVideoSource(clip), { ...options, maxWidth: 160 });
    assert.deepEqual([stream.width, stream.height], [160, 90]);
    const frames = await collect(stream);
    assert.equal(frames[0]?.rgb.length, 160 * 90 * 3);
  });

  it("reads a stream from stdin", async (t) => {
    const clip = makeClip(tempDir(t), "clip.ts", { sceneSeconds: 2, format: "mpegts" });
    const stream = await openVideoStream(parseVideoSource("-", createReadStream(clip)), options);
    assert.equal(stream.probe.hasAudio, false);
    const frames = await collect(stream);
    assert.equal(frames.length, 4);
    assert.equal((await stream.audio(0, 1000)).status, "absent");
  });

  it("keeps audio at its media time when the source's audio has gaps (a looped file)", async (t) => {
    // 2 s of picture with 1.5 s of tone, looped three times by copying packets: the audio track
    // has a 0.5 s hole in its timestamps after each tone. Counting samples must still give media time.
    const dir = tempDir(t);
    const one = join(dir, "one.mp4");
    const looped = join(dir, "looped.mkv");
    const ffmpeg = (...args: string[]) => execFileSync("ffmpeg", ["-loglevel", "error", "-y", ...args]);
    ffmpeg(
      ...["-f", "lavfi", "-i", "testsrc=size=160x90:rate=10:duration=2"],
      ...["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=1.5"],
      ...["-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", one],
    );
    ffmpeg("-stream_loop", "2", "-i", one, "-c", "copy", looped);
    const stream = await openVideoStream(parseVideoSource(looped), options);
    const frames = await collect(stream);
    assert.equal(frames.length, 12, "6 s at 2 frames/s");
    const loudest = (samples: Int16Array) => samples.reduce((top, sample) => Math.max(top, Math.abs(sample)), 0);
    const hole = await stream.audio(1600, 1900);
    assert.equal(hole.samples.length, 4800);
    assert.ok(
      loudest(hole.samples) < 200,
      `the first hole is silence, not the next tone (peak ${loudest(hole.samples)})`,
    );
    const lastTone = await stream.audio(4200, 5200);
    assert.equal(lastTone.status, "ok");
    assert.equal(lastTone.samples.length, 16_000, "the third tone is where the picture says it is");
    assert.ok(loudest(lastTone.samples) > 1000, "and it is audible");
  });

  it("stops a stream that has not ended; frames already read stay", async (t) => {
    const clip = makeClip(tempDir(t), "long.mp4", { sceneSeconds: 20 });
    const stream = await openVideoStream(parseVideoSource(clip), { ...options, fps: 10 });
    const frames = [];
    for await (const frame of stream.frames()) {
      frames.push(frame);
      if (frames.length === 5) stream.stop();
    }
    assert.ok(frames.length >= 5 && frames.length < 200, `stopped early (${frames.length} frames)`);
  });

  it("refuses a missing file, a file that is not a video, an unreachable stream, and a missing ffmpeg", async (t) => {
    const dir = tempDir(t);
    await assert.rejects(openVideoStream(parseVideoSource(`${dir}/nope.mp4`), options), (error: unknown) => {
      assert.ok(error instanceof VideoSourceError);
      assert.equal(error.problem, "missing");
      return true;
    });
    const text = writeFile(dir, "notes.mp4", "these are not frames\n");
    await assert.rejects(openVideoStream(parseVideoSource(text), options), (error: unknown) => {
      assert.ok(error instanceof VideoSourceError);
      assert.equal(error.problem, "not-video");
      return true;
    });
    await assert.rejects(
      openVideoStream(parseVideoSource("http://127.0.0.1:9/stream.ts"), { ...options, connectTimeoutMs: 2000 }),
      (error: unknown) => {
        assert.ok(error instanceof VideoSourceError);
        assert.equal(error.problem, "unreachable");
        return true;
      },
    );
    const clip = makeClip(dir, "ok.mp4", { sceneSeconds: 1 });
    await assert.rejects(
      openVideoStream(parseVideoSource(clip), { ...options, ffprobePath: `${dir}/no-ffprobe` }),
      FfmpegMissingError,
    );
  });

  it("never stalls waiting for audio that ffmpeg cannot write while its video output is full (a looped, drifting file)", {
    timeout: 60_000,
  }, async (t) => {
    const dir = tempDir(t);
    // The real stage clip when present (its looped copy stalled the first gateway), else a synthetic one.
    const real = join(videoDataDir, "short_hamilton_clip.mp4");
    const clip = existsSync(real) ? real : makeClip(dir, "tone.mp4", { sceneSeconds: 2, audio: "tone" });
    const looped = `${dir}/looped.mkv`;
    execFileSync("ffmpeg", ["-loglevel", "error", "-y", "-stream_loop", "3", "-i", clip, "-c", "copy", looped]);
    const stream = await openVideoStream(parseVideoSource(looped), { ...options, fps: 1, maxWidth: 768 });
    let frames = 0;
    for await (const frame of stream.frames()) {
      const audio = await stream.audio(frame.timeMs, frame.timeMs + 1000);
      assert.ok(audio.status === "ok" || audio.status === "failed");
      // A slow consumer: ffmpeg fills the video pipe while this one waits.
      await new Promise((resolve) => setTimeout(resolve, 20));
      frames += 1;
    }
    assert.ok(frames >= 8, `read the whole looped file (${frames} frames)`);
  });
});
