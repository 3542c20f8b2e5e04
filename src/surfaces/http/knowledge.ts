import type { Scope } from "../../core/scope.ts";
import type { Memory } from "../../memory.ts";
import type { Entry, RawNode } from "../../store/records.ts";

/** Turns shown per memory, and per earlier version; the rest is counted (the session view has them all). */
const turnsPerMemory = 8;
const turnsPerEarlierVersion = 4;
/** Earlier versions followed back from a memory's latest state. */
const versionDepth = 3;

export interface KnownTurn {
  readonly rawNodeId: string;
  readonly sessionId: string;
  readonly sessionKey: string;
  readonly turn: number;
  readonly time: string;
  readonly speaker: string | null;
  readonly text: string;
  readonly images: readonly {
    readonly hash: string | null;
    readonly mediaType: string | null;
    readonly caption: string | null;
    readonly derivedText: string | null;
  }[];
}

export interface KnownVersion {
  readonly entryId: string;
  readonly timeStart: string;
  readonly timeEnd: string;
  readonly said: readonly KnownTurn[];
  readonly moreTurns: number;
}

export interface KnownMemory extends KnownVersion {
  /** Topic words of the memory (entities and places it mentions). */
  readonly topics: readonly string[];
  readonly sessions: readonly string[];
  /** Earlier states this memory replaced, newest first. */
  readonly replaced: readonly KnownVersion[];
  /** Entries folded into this one when the index was full (merged or overflow), still searchable. */
  readonly alsoHolds: number;
}

export interface Knowledge {
  readonly memories: readonly KnownMemory[];
  /** Active memories in all; `memories` is the page asked for. */
  readonly total: number;
}

/**
 * What the memory holds for one scope, in the words that were said: each active index entry
 * (newest first) with the turns it points at, their images, and the earlier versions it replaced.
 * Built from the SDK's entries and raw nodes only; nothing here decides what is remembered.
 *
 * @example const { memories } = await whatCairnKnows(memory, scope, { limit: 20, offset: 0 });
 */
export async function whatCairnKnows(
  memory: Memory,
  scope: Scope,
  page: { limit: number; offset: number },
): Promise<Knowledge> {
  const entries = await memory.listEntries(scope);
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const active = entries
    .filter((entry) => entry.status === "active")
    .sort((a, b) => b.timeEnd.localeCompare(a.timeEnd) || a.id.localeCompare(b.id));
  const nodes = new Map<string, Promise<RawNode>>();
  const node = (id: string) => {
    let found = nodes.get(id);
    if (!found) {
      found = memory.getRawNode(scope, id);
      nodes.set(id, found);
    }
    return found;
  };
  const version = async (entry: Entry, limit: number): Promise<KnownVersion> => {
    const said = await Promise.all(entry.pointers.slice(0, limit).map(async (id) => knownTurn(await node(id))));
    said.sort((a, b) => a.time.localeCompare(b.time) || a.turn - b.turn);
    return {
      entryId: entry.id,
      timeStart: entry.timeStart,
      timeEnd: entry.timeEnd,
      said,
      moreTurns: Math.max(0, entry.pointers.length - limit),
    };
  };

  const memories = await Promise.all(
    active.slice(page.offset, page.offset + page.limit).map(async (entry): Promise<KnownMemory> => {
      const replaced: KnownVersion[] = [];
      let earlier = entry.predecessor ? byId.get(entry.predecessor) : undefined;
      for (let depth = 0; earlier && depth < versionDepth; depth++) {
        replaced.push(await version(earlier, turnsPerEarlierVersion));
        earlier = earlier.predecessor ? byId.get(earlier.predecessor) : undefined;
      }
      return {
        ...(await version(entry, turnsPerMemory)),
        topics: entry.entities,
        sessions: entry.sessions,
        replaced,
        alsoHolds: entries.filter((other) => other.host === entry.id).length,
      };
    }),
  );
  return { memories, total: active.length };
}

function knownTurn(node: RawNode): KnownTurn {
  return {
    rawNodeId: node.id,
    sessionId: node.sessionId,
    sessionKey: node.sessionKey,
    turn: node.turn,
    time: node.time,
    speaker: node.speaker,
    text: node.text,
    images: node.images.map((image) => ({
      hash: image.hash,
      mediaType: image.mediaType,
      caption: image.caption,
      derivedText: image.derivedText,
    })),
  };
}
