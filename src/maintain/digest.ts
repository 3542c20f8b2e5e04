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

/*
 * Caps on a digest. Digests are merged again and again (every Merge, Update, consolidation), so
 * each part is capped or an entry's bytes would grow with its history; the routing text is cut to
 * `tokens / entries` tokens anyway (170 by default, decision 005). Set with the digest (5e72df4),
 * not fitted to a dataset.
 */
/** Entities kept: twice what the routing text shows, since routing matches query words against all of them. */
const maxEntities = 24;
/** Keywords kept: routing matches query words against every one, so more than any other part. */
const maxKeywords = 32;
/** Numbers kept: the comparator's evidence of a changed state (a conflicting number). */
const maxNumbers = 16;
/** Image-derived texts kept (captions, OCR): the routing text's `images:` part. */
const maxImageText = 6;
/** Representative sentences kept: six of up to 160 characters already run past the routing text's ~170 tokens. */
const maxSnippets = 6;
/** Characters of one snippet or image text: about a sentence. */
const maxSnippetChars = 160;
/** Entities shown in the routing text, the most frequent first. */
const maxRoutingEntities = 12;
/** Shorter "sentences" ("ok.", "thanks!") say nothing a snippet should carry. */
const minSentenceChars = 12;

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
  if (entities.length > 0) parts.push(`about: ${entities.slice(0, maxRoutingEntities).join(", ")}`);
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
    .filter((sentence) => sentence.length >= minSentenceChars);
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

function interleave(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  for (let index = 0; index < Math.max(a.length, b.length); index++) {
    const fromA = a[index];
    const fromB = b[index];
    if (fromA !== undefined) out.push(fromA);
    if (fromB !== undefined) out.push(fromB);
  }
  return [...new Set(out)];
}
