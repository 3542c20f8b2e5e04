import { ConfigError, InputError } from "../core/errors.ts";

/** Why a video source was refused before anything was written. */
export type VideoSourceProblem = "missing" | "not-video" | "unreachable";

/**
 * A source `cairn watch` / `Memory.watch` cannot read: no such file, a file or stream without a
 * decodable video track, or a network stream that cannot be reached. Nothing was written.
 */
export class VideoSourceError extends InputError {
  readonly problem: VideoSourceProblem;
  readonly source: string;
  constructor(problem: VideoSourceProblem, source: string, detail: string) {
    super("source", `${problemText[problem]}: ${source}${detail ? ` (${detail})` : ""}`);
    this.problem = problem;
    this.source = source;
  }
}

const problemText: Record<VideoSourceProblem, string> = {
  missing: "no such file",
  "not-video": "not a video",
  unreachable: "stream unreachable",
};

/** ffmpeg/ffprobe are not installed (Debian: `apt-get install ffmpeg`) or not at the configured path. */
export class FfmpegMissingError extends ConfigError {
  readonly binary: string;
  constructor(binary: string) {
    super(`${binary} not found: install ffmpeg (Debian: apt-get install ffmpeg) or set its path`);
    this.binary = binary;
  }
}
