import { InputError } from "../../../core/errors.ts";
import type { SegmentReport } from "../../../memory.ts";
import { checkVideoSource, defaultGatewayOptions, parseVideoSource } from "../../../video/gateway.ts";
import { formatMediaTime } from "../../../video/video-text.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";

export const watchHelp = `cairn watch SOURCE [--fps N] [--stream NAME] [--start TIME] [--max-seconds S]
  Watches a video file, an rtsp:// or http(s):// stream, or - (stdin) through ffmpeg and writes what it
  sees into memory: key frames and crops, entities, observations, traces, chapters. Ctrl-C (or
  --max-seconds) stops a live stream and commits what was seen.`;

export async function watch(
  options: CommonOptions,
  source: string | undefined,
  flags: { fps?: string; stream?: string; start?: string; maxSeconds?: string },
): Promise<number> {
  if (!source) throw new InputError("source", "give a video file, an rtsp:// or http(s):// URL, or - for stdin");
  const fps = flags.fps === undefined ? undefined : Number(flags.fps);
  if (fps !== undefined && !(fps > 0 && fps <= 30)) throw new InputError("--fps", "must be a number in (0, 30]");
  const maxSeconds = flags.maxSeconds === undefined ? undefined : Number(flags.maxSeconds);
  if (maxSeconds !== undefined && !(maxSeconds > 0)) throw new InputError("--max-seconds", "must be a positive number");
  if (flags.start !== undefined && Number.isNaN(Date.parse(flags.start))) {
    throw new InputError("--start", "must be an RFC 3339 time");
  }
  // A bad file or URL is refused before the store is opened (or created): a refused watch changes nothing.
  const parsed = parseVideoSource(source);
  if (parsed.kind !== "stdin") await checkVideoSource(parsed, defaultGatewayOptions);
  const memory = await openMemory(options, { video: fps ? { config: { gateway: { fps } } } : undefined });
  try {
    const running = await memory.watch(scopeOf(options), source, {
      stream: flags.stream,
      startTime: flags.start,
      onSegment: options.json ? undefined : (report) => process.stderr.write(`${describe(report)}\n`),
    });
    const stop = () => void running.stop();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    const timer = maxSeconds ? setTimeout(stop, maxSeconds * 1000) : undefined;
    try {
      const result = await running.done;
      output(
        options,
        result,
        () =>
          `watched ${result.stream}: ${formatMediaTime(result.mediaMs)} of video (${result.frames} frames) in ${(result.wallMs / 1000).toFixed(1)} s; ` +
          `${result.segments} segments, ${result.analysed} analysed, ${result.skipped.length} skipped as static and silent; ` +
          `${result.entities.length} entities (${Object.entries(result.outcomes)
            .map(([outcome, count]) => `${count} ${outcome}`)
            .join(", ")}); ${result.chapters} chapter(s)${result.stopped ? "; stopped" : ""}` +
          (result.warnings.length ? `\nwarnings:\n  ${result.warnings.join("\n  ")}` : ""),
      );
    } finally {
      if (timer) clearTimeout(timer);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    }
    return 0;
  } finally {
    await memory.close();
  }
}

function describe(report: SegmentReport): string {
  const span = `${formatMediaTime(report.startMs)}–${formatMediaTime(report.endMs)}`;
  if (!report.analysed) return `  ${span} skipped (${report.gate})`;
  const people = report.decisions.map(
    (decision) => `${decision.outcome}${decision.entityId ? ` ${decision.entityId}` : ""}`,
  );
  return `  ${span} ${report.gate}: ${people.length ? people.join(", ") : "no people"}${report.objects.length ? `; ${report.objects.join(", ")}` : ""} (${Math.round(report.latencyMs)} ms)`;
}
