import type { VideoItem } from "../../store/video-records.ts";
import type { Pattern } from "./consolidator.ts";
import type { SemanticConfig } from "./facts.ts";

/**
 * Per-source semantic memory (ReflectWorld-MM keeps a per-camera memory beside the entity-centric
 * one): what holds about the place a source watches, found in its segment summaries (traces) — the
 * objects usually in view, how many people are usually there, whether different people come and go,
 * whether speech is heard, and text read there. A trace is the source's observation: one per
 * analysed segment, as an entity gets one observation per segment it is in.
 */
export function scenePatterns(traces: readonly VideoItem[], config: SemanticConfig): Pattern[] {
  const total = traces.length;
  if (total === 0) return [];
  const holds = (support: readonly string[]) =>
    support.length >= config.minSupport && support.length / total >= config.supportShare;
  const where = (test: (item: VideoItem) => boolean) => traces.filter(test).map((item) => item.id);
  const patterns: Pattern[] = [];

  const labels = new Set(traces.flatMap((item) => Object.keys(objectsOf(item))));
  for (const label of [...labels].sort()) {
    const support = where((item) => (objectsOf(item)[label] ?? 0) > 0);
    if (holds(support))
      patterns.push({ key: `object:${label}`, category: "attribute", text: `a ${label} is usually in view`, support });
  }

  // How many people a segment shows at once: the most common of none, one, several.
  const people = (item: VideoItem) => peopleAtOnce(item);
  const crowd = [
    { key: "people:none", text: "usually nobody in view", support: where((item) => people(item) === 0) },
    { key: "people:one", text: "usually one person in view at a time", support: where((item) => people(item) === 1) },
    {
      key: "people:several",
      text: "usually several people in view at once",
      support: where((item) => people(item) > 1),
    },
  ].sort((a, b) => b.support.length - a.support.length)[0];
  if (crowd && holds(crowd.support)) patterns.push({ ...crowd, category: "habit" });

  // Different identified people over the segments read: the place is visited, not occupied by one.
  const entities = (item: VideoItem) => (Array.isArray(item.data.entities) ? (item.data.entities as string[]) : []);
  const visited = where((item) => entities(item).length > 0);
  if (new Set(traces.flatMap(entities)).size >= 2 && holds(visited))
    patterns.push({
      key: "visitors:several",
      category: "habit",
      text: "different people come and go",
      support: visited,
    });

  // Speech, only where there was audio to listen to.
  const heard = traces.filter((item) => item.data.audio === "ok");
  const speech = heard.filter((item) => Number(item.data.voicedMs ?? 0) > 0).map((item) => item.id);
  const silent = heard.filter((item) => Number(item.data.voicedMs ?? 0) === 0).map((item) => item.id);
  if (holds(speech) && speech.length >= silent.length)
    patterns.push({ key: "voice:speech", category: "habit", text: "speech is usually heard", support: speech });
  else if (holds(silent))
    patterns.push({ key: "voice:silent", category: "habit", text: "usually silent", support: silent });

  const words = new Map<string, string[]>();
  for (const item of traces) {
    const read = item.text.match(/; text read: (.*)\.$/)?.[1] ?? "";
    for (const word of new Set(read.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []))
      words.set(word, [...(words.get(word) ?? []), item.id]);
  }
  for (const [word, support] of [...words].sort(([a], [b]) => a.localeCompare(b))) {
    if (holds(support))
      patterns.push({
        key: `text:${word}`,
        category: "attribute",
        text: `the text "${word}" is usually in view`,
        support,
      });
  }
  return patterns;
}

/**
 * People in view at once in a segment: the largest person count that at least two of its read frames
 * agree on (one frame's extra box is not a second person), from the detector's per-frame counts.
 */
function peopleAtOnce(item: VideoItem): number {
  const counts = Array.isArray(item.data.counts) ? (item.data.counts as { person?: unknown }[]) : [];
  const sorted = counts.map((frame) => Number(frame.person ?? 0)).sort((a, b) => b - a);
  return sorted[1] ?? sorted[0] ?? 0;
}

function objectsOf(item: VideoItem): Record<string, number> {
  const objects = item.data.objects;
  return objects && typeof objects === "object" && !Array.isArray(objects) ? (objects as Record<string, number>) : {};
}
