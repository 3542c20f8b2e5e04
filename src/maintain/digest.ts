import { contentWords, extractEntities } from "../core/text.ts";
import { fitTokens } from "../core/tokens.ts";
import type { EntryDigest } from "../store/index-records.ts";

/** What a digest is built from: one raw node's text, speaker and image-derived text. */
export interface DigestSource {
  readonly speaker: string | null;
  readonly text: string;
  readonly imageText: readonly string[];
}

/** Words that announce a change of state: the comparator's evidence for Update rather than Merge. */
const stateCuePattern =
  /\b(now|no longer|anymore|any more|used to|changed|change[ds]? (?:my|her|his|their|our)|moved|switched|replaced|instead|new|became|become|quit|stopped|started|upgraded|sold|bought|updated|promoted|broke up|got married|divorced|renamed|lost|finished)\b/gi;

const numberPattern =
  /\b\d+(?:[.,:/]\d+)*(?:\s?(?:%|kg|km|k|m|years?|months?|weeks?|days?|hours?|dollars?|usd|eur))?\b/gi;

const maxEntities = 24;
const maxKeywords = 32;
const maxNumbers = 16;
const maxImageText = 6;
const maxSnippets = 6;
const maxSnippetChars = 160;

export function emptyDigest(): EntryDigest {
  return { speakers: [], entities: {}, keywords: {}, numbers: [], imageText: [], snippets: [], stateCues: 0 };
}

/** Deterministic, model-free digest of a group of raw nodes. */
export function buildDigest(sources: readonly DigestSource[]): EntryDigest {
  const speakers = new Set<string>();
  const entities: Record<string, number> = {};
  const keywords: Record<string, number> = {};
  const numbers = new Set<string>();
  const imageText: string[] = [];
  const sentences: { text: string; order: number }[] = [];
  let stateCues = 0;
  for (const source of sources) {
    if (source.speaker) speakers.add(source.speaker);
    const all = [source.text, ...source.imageText].join("\n");
    for (const entity of extractEntities(all)) entities[entity] = (entities[entity] ?? 0) + 1;
    for (const word of contentWords(all)) keywords[word] = (keywords[word] ?? 0) + 1;
    for (const match of all.matchAll(numberPattern)) numbers.add(match[0].toLowerCase().replace(/\s+/g, ""));
    stateCues += [...source.text.matchAll(stateCuePattern)].length;
    for (const text of source.imageText) if (text.trim()) imageText.push(squash(text, maxSnippetChars));
    for (const sentence of splitSentences(source.text)) sentences.push({ text: sentence, order: sentences.length });
  }
  const keywordCounts = keywords;
  // A sentence represents the group by how many of its frequent content words it carries.
  const scored = sentences
    .map((sentence) => {
      const words = contentWords(sentence.text);
      const weight = words.reduce((sum, word) => sum + Math.log1p(keywordCounts[word] ?? 0), 0);
      return { ...sentence, score: words.length === 0 ? 0 : weight / Math.sqrt(words.length) };
    })
    .filter((sentence) => sentence.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order);
  return {
    speakers: [...speakers],
    entities: topCounts(entities, maxEntities),
    keywords: topCounts(keywords, maxKeywords),
    numbers: [...numbers].slice(0, maxNumbers),
    imageText: imageText.slice(0, maxImageText),
    snippets: scored.slice(0, maxSnippets).map((sentence) => squash(sentence.text, maxSnippetChars)),
    stateCues,
  };
}

/** Merges two digests: counts add, lists interleave (so both sides stay represented), caps hold. */
export function mergeDigests(a: EntryDigest, b: EntryDigest): EntryDigest {
  return {
    speakers: [...new Set([...a.speakers, ...b.speakers])],
    entities: topCounts(addCounts(a.entities, b.entities), maxEntities),
    keywords: topCounts(addCounts(a.keywords, b.keywords), maxKeywords),
    numbers: [...new Set([...a.numbers, ...b.numbers])].slice(0, maxNumbers),
    imageText: interleave(a.imageText, b.imageText).slice(0, maxImageText),
    snippets: interleave(a.snippets, b.snippets).slice(0, maxSnippets),
    stateCues: a.stateCues + b.stateCues,
  };
}

/**
 * The compact routing text: time span, speakers, entities, image text, snippets, then keywords,
 * cut to `maxTokens`. The order puts the most discriminating parts first, so a cut loses the least.
 */
export function renderRoutingText(
  digest: EntryDigest,
  span: { readonly startMs: number; readonly endMs: number },
  maxTokens: number,
): { text: string; tokens: number } {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const when = day(span.startMs) === day(span.endMs) ? day(span.startMs) : `${day(span.startMs)}..${day(span.endMs)}`;
  const parts = [when];
  if (digest.speakers.length > 0) parts.push(`speakers: ${digest.speakers.join(", ")}`);
  const entities = Object.keys(digest.entities);
  if (entities.length > 0) parts.push(`about: ${entities.slice(0, 12).join(", ")}`);
  if (digest.imageText.length > 0) parts.push(`images: ${digest.imageText.join("; ")}`);
  if (digest.snippets.length > 0) parts.push(digest.snippets.join(" / "));
  const keywords = Object.keys(digest.keywords);
  if (keywords.length > 0) parts.push(`keywords: ${keywords.join(" ")}`);
  return fitTokens(parts.join(" | "), maxTokens);
}

function splitSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length >= 12);
}

function squash(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function addCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): Record<string, number> {
  const sum: Record<string, number> = { ...a };
  for (const [key, count] of Object.entries(b)) sum[key] = (sum[key] ?? 0) + count;
  return sum;
}

function topCounts(counts: Readonly<Record<string, number>>, limit: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts)
      .sort(([wordA, a], [wordB, b]) => b - a || (wordA < wordB ? -1 : 1))
      .slice(0, limit),
  );
}

function interleave<T>(a: readonly T[], b: readonly T[]): T[] {
  const out: T[] = [];
  for (let index = 0; index < Math.max(a.length, b.length); index++) {
    if (index < a.length) out.push(a[index] as T);
    if (index < b.length) out.push(b[index] as T);
  }
  return [...new Set(out)];
}
