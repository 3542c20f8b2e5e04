/** `h:mm:ss` (or `m:ss`) of a media time, for summaries people read. */
export function formatMediaTime(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

/**
 * The source a stream watches: its name without the `@start` a watch adds (`table@2026-…Z` →
 * `table`). Restarted watches of one camera are streams of one source; its per-source memory (scene
 * facts, the notifier's record) is keyed by it.
 */
export function sourceOf(stream: string): string {
  return stream.replace(/@[^@]*$/, "") || stream;
}
