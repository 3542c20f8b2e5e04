import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

/** Whether Debian's ffmpeg is installed; video tests say so when it is not. */
export const ffmpegAvailable = spawnSync("ffmpeg", ["-version"], { stdio: "ignore" }).status === 0;
export const noFfmpegReason = ffmpegAvailable ? false : "ffmpeg is not installed (apt-get install ffmpeg)";

/** The real clips of ../shared/data/video (or CAIRN_DATA/video), when present. */
export const videoDataDir = resolve(
  process.env.CAIRN_DATA ?? join(import.meta.dirname, "../../../shared/data"),
  "video",
);
export const noVideoDataReason = existsSync(join(videoDataDir, "SOURCE.md"))
  ? noFfmpegReason
  : `real clips absent: ${videoDataDir} (set CAIRN_DATA to the shared data folder)`;

/**
 * A short synthetic clip made with ffmpeg's lavfi sources: `scenes` test patterns of `sceneSeconds`
 * each (a hard cut between them), optionally with a tone as audio.
 */
export function makeClip(
  dir: string,
  name: string,
  options: {
    scenes?: readonly string[];
    sceneSeconds?: number;
    audio?: "tone" | "silence" | "none";
    format?: string;
  } = {},
): string {
  const scenes = options.scenes ?? ["testsrc"];
  const seconds = options.sceneSeconds ?? 3;
  const path = join(dir, name);
  const inputs = scenes.flatMap((scene) => [
    "-f",
    "lavfi",
    "-i",
    `${scene}${scene.includes("=") ? ":" : "="}size=320x180:rate=10:duration=${seconds}`,
  ]);
  const concat = `${scenes.map((_, i) => `[${i}:v]`).join("")}concat=n=${scenes.length}:v=1:a=0[v]`;
  const total = seconds * scenes.length;
  const audio =
    options.audio === "tone"
      ? ["-f", "lavfi", "-i", `sine=frequency=440:sample_rate=16000:duration=${total}`]
      : options.audio === "silence"
        ? ["-f", "lavfi", "-i", `anullsrc=r=16000:cl=mono:d=${total}`]
        : [];
  const audioMap = audio.length ? ["-map", `${scenes.length}:a`, "-c:a", "aac", "-t", String(total)] : [];
  execFileSync(
    "ffmpeg",
    [
      "-loglevel",
      "error",
      "-y",
      ...inputs,
      ...audio,
      "-filter_complex",
      concat,
      "-map",
      "[v]",
      ...audioMap,
      "-pix_fmt",
      "yuv420p",
      ...(options.format ? ["-f", options.format] : []),
      path,
    ],
    { stdio: "ignore" },
  );
  return path;
}
