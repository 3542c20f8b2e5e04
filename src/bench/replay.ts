import type { Scope } from "../core/scope.ts";
import { Memory, type MemoryOptions } from "../memory.ts";
import type { Models } from "../models/provider.ts";
import type { RawNode } from "../store/records.ts";
import { type BenchStore, sqliteBenchStore } from "./bench-store.ts";
import type { BenchHistory } from "./dataset.ts";
import type { DatasetIds } from "./metrics.ts";

export interface ReplayedHistory {
  readonly memory: Memory;
  readonly scope: Scope;
  readonly timeline: readonly RawNode[];
  readonly nodes: ReadonlyMap<string, RawNode>;
  readonly idsOf: (rawNodeId: string) => DatasetIds | undefined;
  readonly ingestMs: number;
  readonly warnings: readonly string[];
}

/**
 * Replays a history into a fresh memory, session by session in time order, through the normal
 * write path. It takes only what a live agent would have seen: the type leaves the questions
 * out, so nothing about them can reach the write path.
 */
export async function replayHistory(
  history: Pick<BenchHistory, "id" | "sessions" | "baseDir">,
  options: {
    readonly models: Models;
    readonly dir: string;
    /** The backend the history is written to (default: a SQLite folder under `dir`). */
    readonly store?: BenchStore;
    /** Compilation settings (the compiled methods' gate); never compiles on commit in a replay. */
    readonly compile?: MemoryOptions["compile"];
    /** Settings an ablation changes (index text, search); the engine's defaults otherwise. */
    readonly memory?: Pick<MemoryOptions, "indexText" | "search">;
    readonly onSession?: () => void;
  },
): Promise<ReplayedHistory> {
  const store = await (options.store ?? sqliteBenchStore).open({ name: safeName(history.id), dir: options.dir });
  const memory = await Memory.open({
    store,
    models: options.models,
    ...options.memory,
    compile: { ...options.compile, onCommit: false },
  });
  const scope: Scope = { tenant: "bench", user: safeName(history.id) };
  const started = performance.now();
  const warnings: string[] = [];
  try {
    const ordered = [...history.sessions].sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
    for (const session of ordered) {
      const result = await memory.addSession(scope, session, { baseDir: history.baseDir });
      warnings.push(...result.warnings.map((warning) => `${session.session}: ${warning}`));
      options.onSession?.();
    }
  } catch (error) {
    await memory.close();
    throw error;
  }
  const ingestMs = performance.now() - started;
  const timeline: RawNode[] = [];
  for (const session of await memory.listSessions(scope))
    timeline.push(...(await memory.listRawNodes(scope, session.id)));
  const nodes = new Map(timeline.map((node) => [node.id, node]));
  const ids = new Map(timeline.map((node) => [node.id, datasetIds(node)]));
  return { memory, scope, timeline, nodes, idsOf: (id) => ids.get(id), ingestMs, warnings };
}

function datasetIds(node: RawNode): DatasetIds {
  const turn = node.metadata.datasetTurnId;
  const images = node.metadata.datasetImageIds;
  return {
    turn: typeof turn === "string" ? turn : null,
    session: node.sessionKey,
    images: Array.isArray(images) ? images.filter((id): id is string => typeof id === "string") : [],
  };
}

/** History ids become folder names and scope users: keep them to safe characters. */
function safeName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100) || "history";
}
