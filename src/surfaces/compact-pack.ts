import type { EvidencePack } from "../evidence/evidence-pack.ts";

/**
 * The structured search result for the host: items with their text, provenance (without the internal
 * session id, and without fields that are null), score (3 decimals)
 * and images by hash (`cairn://blobs/<hash>`, `cairn://thumbnails/<hash>`); budget limits, use and
 * cuts; warnings. The route trace and channel ranks come with `detail: "full"`.
 */
export function compactPack(pack: EvidencePack) {
  return {
    items: pack.items.map((item) => {
      // The session's key names it for cairn_forget and filters; its internal id is in `detail: "full"`.
      const { sessionId: _sessionId, role, source, uri, ...provenance } = item.provenance;
      return {
        rawNodeId: item.rawNodeId,
        text: item.text,
        // Absent rather than null: twelve items of nulls are a tenth of a default answer.
        provenance: { ...provenance, ...definedFields({ role, source, uri }) },
        score: Math.round(item.score * 1000) / 1000,
        ...(item.relevance != null ? { relevance: Math.round(item.relevance * 100) / 100 } : {}),
        images: item.images.map((image) => ({
          hash: image.hash,
          mediaType: image.mediaType,
          width: image.width,
          height: image.height,
          ...definedFields({ caption: image.caption, derivedText: image.derivedText }),
        })),
        ...(item.imagesAsText.length > 0 ? { imagesAsText: item.imagesAsText } : {}),
        ...(item.imagesCut > 0 ? { imagesCut: item.imagesCut } : {}),
      };
    }),
    // Says outright when nothing relevant was found, so the model answers "not in memory" instead of guessing.
    noRelevantEvidence: pack.noRelevantEvidence,
    budget: { limits: pack.budget.limits, used: pack.budget.used, cut: pack.budget.cut },
    mode: pack.mode,
    // Which banked program answered, or why the default search did (compiled mode only).
    ...(pack.compiled
      ? {
          compiled: {
            ran: pack.compiled.ran,
            question: pack.compiled.program?.question ?? null,
            reason: pack.compiled.reason,
          },
        }
      : {}),
    warnings: pack.warnings,
  };
}

function definedFields<T extends Record<string, string | null>>(fields: T): { [K in keyof T]?: string } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null)) as {
    [K in keyof T]?: string;
  };
}
