import type { PendingEvidence, TrackedTarget } from "./resolver.ts";
import type { WorkingStateConfig } from "./video-config.ts";

/**
 * The bounded working state of one stream (Appendix C): the open event with a rolling summary of at
 * most ~100 words, the last 3 segment summaries, at most 8 tracked targets, the active entities
 * with an inactivity time-out, pending identity evidence, and the closed events not yet gathered
 * into a chapter. Every field has a fixed bound, so the work per segment does not grow with how long
 * the stream has run. Pure: each function returns the next state.
 */
export interface OpenEvent {
  readonly index: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly segments: number;
  readonly summary: string;
  readonly entities: readonly string[];
  /** Trace ids of the event's analysed segments (bounded by `maxEventSegments`). */
  readonly traces: readonly string[];
}

export interface ClosedEvent {
  readonly index: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly summary: string;
  readonly traces: readonly string[];
  readonly entities: readonly string[];
}

export interface WorkingState {
  readonly event: OpenEvent | null;
  readonly nextEvent: number;
  readonly recent: readonly string[];
  readonly targets: readonly TrackedTarget[];
  /** Entity id → media time last seen. */
  readonly active: Readonly<Record<string, number>>;
  readonly pending: readonly PendingEvidence[];
  readonly closed: readonly ClosedEvent[];
  readonly chapterStartMs: number | null;
}

export const emptyWorkingState: WorkingState = Object.freeze({
  event: null,
  nextEvent: 0,
  recent: [],
  targets: [],
  active: {},
  pending: [],
  closed: [],
  chapterStartMs: null,
});

/** Words kept in a rolling summary: the newest, so the summary stays about the event's present. */
export function capWords(text: string, words: number): string {
  const parts = text.split(/\s+/).filter(Boolean);
  return parts.length <= words ? parts.join(" ") : `… ${parts.slice(parts.length - words).join(" ")}`;
}

export interface SegmentUpdate {
  readonly segment: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly summary: string;
  readonly traceId: string;
  readonly entities: readonly string[];
  readonly targets: readonly TrackedTarget[];
  readonly pending: readonly PendingEvidence[];
}

/** An analysed segment: opens an event if none is open, then updates summaries, targets and activity. */
export function applySegment(state: WorkingState, update: SegmentUpdate, config: WorkingStateConfig): WorkingState {
  let event: OpenEvent = state.event ?? {
    index: state.nextEvent,
    startMs: update.startMs,
    endMs: update.endMs,
    segments: 0,
    summary: "",
    entities: [],
    traces: [],
  };
  event = {
    ...event,
    endMs: update.endMs,
    segments: event.segments + 1,
    summary: capWords(`${event.summary} ${update.summary}`, config.summaryWords),
    entities: [...new Set([...event.entities, ...update.entities])].slice(-config.trackedTargets * 4),
    traces: [...event.traces, update.traceId].slice(-config.maxEventSegments),
  };
  const seen = new Set(update.targets.map((target) => target.entityId));
  const targets = [
    ...update.targets,
    ...state.targets.filter(
      (target) => !seen.has(target.entityId) && update.segment - target.lastSegment <= config.targetMissedSegments,
    ),
  ]
    .sort((a, b) => b.lastSegment - a.lastSegment)
    .slice(0, config.trackedTargets);
  const active: Record<string, number> = {};
  for (const [id, lastMs] of Object.entries(state.active)) {
    if (update.endMs - lastMs <= config.entityTimeoutMs) active[id] = lastMs;
  }
  for (const id of update.entities) active[id] = update.endMs;
  // The active set is bounded too: the least recently seen go first.
  const activeBounded = Object.fromEntries(
    Object.entries(active)
      .sort((a, b) => b[1] - a[1])
      .slice(0, config.trackedTargets * 4),
  );
  let next: WorkingState = {
    ...state,
    event,
    nextEvent: state.event ? state.nextEvent : state.nextEvent + 1,
    recent: [...state.recent, update.summary].slice(-config.recentSegments),
    targets,
    active: activeBounded,
    pending: update.pending,
    chapterStartMs: state.chapterStartMs ?? update.startMs,
  };
  if (event.segments >= config.maxEventSegments) next = closeEvent(next);
  return next;
}

/** A segment skipped by the gate: nothing happens, so an open event closes. Targets age out as segments pass. */
export function closeEvent(state: WorkingState): WorkingState {
  const event = state.event;
  if (!event) return state;
  return {
    ...state,
    event: null,
    closed: [
      ...state.closed,
      {
        index: event.index,
        startMs: event.startMs,
        endMs: event.endMs,
        summary: event.summary,
        traces: event.traces,
        entities: event.entities,
      },
    ],
  };
}

/** Whether the closed events make a chapter now (a budget of events, or the interval since the first). */
export function chapterDue(
  state: WorkingState,
  nowMs: number,
  config: { eventsPerChapter: number; chapterIntervalMs: number },
): boolean {
  if (state.closed.length === 0) return false;
  return (
    state.closed.length >= config.eventsPerChapter ||
    (state.chapterStartMs !== null && nowMs - state.chapterStartMs >= config.chapterIntervalMs)
  );
}

export function takeChapter(state: WorkingState): { events: readonly ClosedEvent[]; state: WorkingState } {
  return { events: state.closed, state: { ...state, closed: [], chapterStartMs: null } };
}

/** Renames an entity everywhere the working state holds it (after a merge). */
export function renameEntity(state: WorkingState, from: string, into: string): WorkingState {
  const swap = (id: string) => (id === from ? into : id);
  const active: Record<string, number> = {};
  for (const [id, lastMs] of Object.entries(state.active)) active[swap(id)] = Math.max(active[swap(id)] ?? 0, lastMs);
  return {
    ...state,
    targets: state.targets.map((target) => ({ ...target, entityId: swap(target.entityId) })),
    active,
    event: state.event ? { ...state.event, entities: [...new Set(state.event.entities.map(swap))] } : null,
  };
}
