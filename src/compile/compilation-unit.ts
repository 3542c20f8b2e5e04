import { NotFoundError } from "../core/errors.ts";
import { contentWords, extractEntities } from "../core/text.ts";
import type { RawNode, SessionRecord } from "../store/records.ts";
import type { ScopedStore } from "../store/store.ts";
import type { CompilationUnit } from "./opportunity.ts";

export interface UnitBudget {
  /** Earlier sessions joined to the anchor. */
  readonly relatedSessions: number;
  /** Earlier sessions considered at all (the most recent ones). */
  readonly lookBack: number;
  /** Raw nodes in the unit. */
  readonly rawNodes: number;
}

export const defaultUnitBudget: UnitBudget = Object.freeze({ relatedSessions: 3, lookBack: 40, rawNodes: 160 });

const dayMs = 86_400_000;

/**
 * The budgeted compilation unit U_t for one session: the anchor plus the earlier sessions most
 * related to it — shared entities, shared images (same pixels), shared words, and time proximity —
 * read only from what was stored at or before the anchor's time.
 */
export async function buildCompilationUnit(
  store: ScopedStore,
  sessionKey: string,
  budget: UnitBudget = defaultUnitBudget,
): Promise<CompilationUnit> {
  const [anchor] = await store.readSessions({ keys: [sessionKey] });
  if (!anchor) throw new NotFoundError("session", sessionKey);
  const anchorNodes = await store.readRawNodes({ sessionId: anchor.id });
  // The history as it stood when the session ended: its turns may carry times after its start.
  const asOfMs = Math.max(Date.parse(anchor.time), ...anchorNodes.map((node) => Date.parse(node.time)));
  const earlier = (await store.readSessions({}))
    .filter((session) => session.id !== anchor.id && Date.parse(session.time) <= asOfMs)
    .slice(-budget.lookBack);
  const anchorEntities = new Set(anchorNodes.flatMap((node) => extractEntities(node.text)));
  const anchorImages = new Set(anchorNodes.flatMap((node) => node.images.flatMap((image) => image.hash ?? [])));
  const anchorWords = new Set(anchorNodes.flatMap((node) => words(node)));
  const scored: { session: SessionRecord; nodes: RawNode[]; score: number }[] = [];
  for (const session of earlier) {
    const nodes = await store.readRawNodes({ sessionId: session.id });
    const entities = new Set(nodes.flatMap((node) => extractEntities(node.text)));
    const shared = {
      entities: [...entities].filter((entity) => anchorEntities.has(entity)).length,
      images: nodes.flatMap((node) => node.images).filter((image) => image.hash && anchorImages.has(image.hash)).length,
      words: new Set(nodes.flatMap((node) => words(node)).filter((word) => anchorWords.has(word))).size,
    };
    const days = (asOfMs - Date.parse(session.time)) / dayMs;
    const score = 2 * shared.entities + 3 * shared.images + 0.25 * shared.words + 1 / (1 + Math.max(0, days));
    scored.push({ session, nodes, score });
  }
  const related = scored
    .sort((a, b) => b.score - a.score)
    .slice(0, budget.relatedSessions)
    .sort((a, b) => Date.parse(a.session.time) - Date.parse(b.session.time));
  const room = Math.max(0, budget.rawNodes - anchorNodes.length);
  const history = related.flatMap((item) => item.nodes).slice(-room);
  const index = await store.readIndex({ activeOnly: false });
  const entities = new Set<string>();
  for (const entry of index.entries.values())
    for (const entity of Object.keys(entry.digest.entities)) entities.add(entity);
  const nodes = [...history, ...anchorNodes];
  // Entities named in the unit's own raw nodes are known too: the digest keeps only the most frequent.
  for (const node of nodes) for (const entity of extractEntities(node.text)) entities.add(entity);
  return {
    anchor,
    sessions: [...related.map((item) => item.session), anchor],
    nodes,
    asOfMs,
    entities,
  };
}

/** Content words of a raw node's text and its images' text. */
export function words(node: RawNode): string[] {
  const imageText = node.images.map((image) => `${image.caption ?? ""} ${image.derivedText ?? ""}`).join(" ");
  return [...contentWords(node.text), ...contentWords(imageText)];
}
