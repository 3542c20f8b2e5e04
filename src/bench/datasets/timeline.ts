/** Turns of a session are spaced this far apart so that their order survives any sort by time. */
export const turnSpacingMs = 1_000;

export function isoAt(milliseconds: number): string {
  return new Date(milliseconds).toISOString();
}

/**
 * Start times for sessions in replay order: each session's own start, pushed later when it would begin before the
 * previous session's last turn (sessions sharing one calendar date). Returns the starts and how many were pushed.
 */
export function sessionStarts(sessions: readonly { readonly start: number; readonly turnCount: number }[]): {
  starts: number[];
  shifted: number;
} {
  const starts: number[] = [];
  let shifted = 0;
  let earliest = Number.NEGATIVE_INFINITY;
  for (const session of sessions) {
    const start = Math.max(session.start, earliest);
    if (start !== session.start) shifted += 1;
    starts.push(start);
    earliest = start + Math.max(session.turnCount, 1) * turnSpacingMs;
  }
  return { starts, shifted };
}
