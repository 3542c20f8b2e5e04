import cliProgress from "cli-progress";

export interface Progress {
  tick(detail?: string): void;
  stop(): void;
}

/**
 * A progress bar on stderr when it is a terminal; otherwise a line every 10% so logs of
 * long runs still show movement. Silent when `quiet` (e.g. `--json` piped into a tool).
 */
export function startProgress(label: string, total: number, options: { quiet?: boolean } = {}): Progress {
  if (options.quiet || total === 0) return { tick() {}, stop() {} };
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {value}/{total} {percentage}% eta {eta_formatted} {detail}`,
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { detail: "" });
    return { tick: (detail = "") => bar.increment(1, { detail }), stop: () => bar.stop() };
  }
  let done = 0;
  let reported = 0;
  return {
    tick() {
      done++;
      const percent = Math.floor((done / total) * 10) * 10;
      if (percent > reported || done === total) {
        reported = percent;
        process.stderr.write(`${label}: ${done}/${total} (${Math.round((done / total) * 100)}%)\n`);
      }
    },
    stop() {},
  };
}
