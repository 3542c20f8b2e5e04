import { isRecord } from "../core/narrow.ts";
import type { IndexEntry } from "../store/index-records.ts";
import type { IndexBounds } from "./config.ts";
import { measure, overBounds } from "./working-index.ts";

/**
 * Src(e) of C3M Eq. 4: pointers of e, of its predecessors, and of every entry it hosts (merged
 * into it or overflowed under it), transitively.
 */
export function sources(entries: ReadonlyMap<string, IndexEntry>, id: string): Set<string> {
  const hosted = new Map<string, string[]>();
  for (const entry of entries.values()) {
    if (entry.host) hosted.set(entry.host, [...(hosted.get(entry.host) ?? []), entry.id]);
  }
  const out = new Set<string>();
  const seen = new Set<string>();
  const stack = [id];
  for (let current = stack.pop(); current !== undefined; current = stack.pop()) {
    if (seen.has(current)) continue;
    seen.add(current);
    const entry = entries.get(current);
    if (!entry) continue;
    for (const pointer of entry.pointers) out.add(pointer);
    if (entry.predecessor) stack.push(entry.predecessor);
    for (const child of hosted.get(current) ?? []) stack.push(child);
  }
  return out;
}

/**
 * The raw nodes a routed search reaches with unlimited link depth, walking as the router does
 * (src/route/router.ts): from the active entries through the entries they host and their earlier
 * states. A merged entry is never walked: its pointers are its host's, and its own links (an earlier
 * state, guests) lead nowhere a search goes. Eq. 4's `sources` counts through merged entries, so an
 * index can be sound by Eq. 4 and still hold evidence no search can reach.
 */
export function routedReach(entries: ReadonlyMap<string, IndexEntry>): Set<string> {
  const hosted = new Map<string, IndexEntry[]>();
  for (const entry of entries.values()) {
    if (entry.host && entry.status !== "merged") hosted.set(entry.host, [...(hosted.get(entry.host) ?? []), entry]);
  }
  const reached = new Set<string>();
  const seen = new Set<string>();
  const stack = [...entries.values()].filter((entry) => entry.status === "active");
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    if (seen.has(entry.id)) continue;
    seen.add(entry.id);
    for (const pointer of entry.pointers) reached.add(pointer);
    stack.push(...(hosted.get(entry.id) ?? []));
    const earlier = entry.predecessor ? entries.get(entry.predecessor) : undefined;
    if (earlier) stack.push(earlier);
  }
  return reached;
}

export interface AuditLike {
  readonly action: string;
  readonly subject: string;
  readonly details: Readonly<Record<string, unknown>>;
}

export interface IndexViolation {
  readonly invariant: "provenance" | "audit" | "bounds" | "structure";
  readonly message: string;
}

/**
 * Verifies DESIGN invariants 2 and 6 (and the bounds) over an index: every raw node reachable
 * from an active entry or a recorded fallback; no dangling or cyclic links; every entry that
 * changed status explained by an audit event carrying its inputs, relation and confidence.
 */
export function checkIndex(input: {
  readonly entries: ReadonlyMap<string, IndexEntry>;
  readonly rawNodeIds: Iterable<string>;
  readonly audits: readonly AuditLike[];
  readonly bounds: IndexBounds | null;
}): IndexViolation[] {
  const { entries } = input;
  const violations: IndexViolation[] = [];
  const rawNodes = new Set(input.rawNodeIds);
  // Reachable as a search reaches it (which implies Eq. 4's sources of the active entries).
  const reachable = routedReach(entries);
  for (const entry of entries.values()) {
    for (const pointer of entry.pointers) {
      if (!rawNodes.has(pointer)) {
        violations.push({
          invariant: "provenance",
          message: `entry ${entry.id} points at missing raw node ${pointer}`,
        });
      }
    }
    if (entry.status === "active" && entry.page === null) {
      violations.push({ invariant: "structure", message: `active entry ${entry.id} is on no page` });
    }
    if ((entry.status === "merged" || entry.status === "overflow") && !entries.has(entry.host ?? "")) {
      violations.push({ invariant: "structure", message: `${entry.status} entry ${entry.id} has no host` });
    }
    if (entry.predecessor && !entries.has(entry.predecessor)) {
      violations.push({ invariant: "structure", message: `entry ${entry.id} links a missing predecessor` });
    }
    if (linksLoop(entries, entry.id)) {
      violations.push({ invariant: "structure", message: `entry ${entry.id} is on a cycle of host/successor links` });
    }
  }
  for (const id of rawNodes) {
    if (!reachable.has(id)) {
      violations.push({
        invariant: "provenance",
        message: `raw node ${id} is unreachable from the active index (no routed search's link walk reaches it)`,
      });
    }
  }
  violations.push(...checkAudit(entries, input.audits));
  if (input.bounds) {
    const use = measure(entries, input.bounds);
    const over = overBounds(use);
    if (over) violations.push({ invariant: "bounds", message: `the active index is over its ${over} bound` });
  }
  return violations;
}

function checkAudit(entries: ReadonlyMap<string, IndexEntry>, audits: readonly AuditLike[]): IndexViolation[] {
  const violations: IndexViolation[] = [];
  const explained = new Map<string, Set<string>>();
  const note = (id: unknown, action: string) => {
    if (typeof id !== "string") return;
    explained.set(id, (explained.get(id) ?? new Set()).add(action));
  };
  for (const event of audits) {
    if (!event.action.startsWith("index.")) continue;
    const details = event.details;
    const result = isRecord(details.result) ? details.result : {};
    if (!details.result) {
      violations.push({ invariant: "audit", message: `audit ${event.action} on ${event.subject} records no result` });
    }
    if (["index.merge", "index.update", "index.add", "index.keep", "index.consolidate"].includes(event.action)) {
      if (!("relation" in details) || !("confidence" in details)) {
        violations.push({
          invariant: "audit",
          message: `audit ${event.action} on ${event.subject} lacks its relation or confidence`,
        });
      }
    }
    note(event.subject, event.action);
    note(result.entry, event.action);
    if (event.action === "index.update") note(details.target, "index.superseded");
    note(result.merged, "index.merged");
  }
  const needs: Record<string, string> = {
    active: "",
    superseded: "index.superseded",
    merged: "index.merged",
    overflow: "index.overflow",
  };
  for (const entry of entries.values()) {
    const actions = explained.get(entry.id);
    if (!actions) {
      violations.push({ invariant: "audit", message: `entry ${entry.id} has no audit event` });
      continue;
    }
    const required = needs[entry.status];
    if (required && !actions.has(required)) {
      violations.push({
        invariant: "audit",
        message: `entry ${entry.id} is ${entry.status} without a ${required} event`,
      });
    }
  }
  return violations;
}

function linksLoop(entries: ReadonlyMap<string, IndexEntry>, start: string): boolean {
  const seen = new Set<string>();
  let current: string | null = start;
  while (current) {
    if (seen.has(current)) return true;
    seen.add(current);
    current = entries.get(current)?.host ?? null;
  }
  return false;
}
