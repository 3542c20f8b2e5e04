import { countTokens } from "../evidence/tokens.ts";
import type { EntryDigest } from "./types.ts";

/** What a digest is built from: one raw node's text, speaker and image-derived text. */
export interface DigestSource {
  readonly speaker: string | null;
  readonly text: string;
  readonly imageText: readonly string[];
}

const stopwords = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between both " +
    "but by can could did do does doing down during each few for from further had has have having he her here hers " +
    "herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once " +
    "only or other our ours ourselves out over own same she should so some such than that the their theirs them " +
    "themselves then there these they this those through to too under until up very was we were what when where which " +
    "while who whom why will with would you your yours yourself yourselves also really yeah yes oh hey hi thanks thank " +
    "gonna got get like just well know think going one lot much things thing good great awesome cool nice sure wow " +
    "it's i'm that's don't can't you're i've i'll let's what's didn't"
  ).split(" "),
);

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

/** Cuts text to at most `maxTokens` tokens, on a word boundary where possible. */
export function fitTokens(text: string, maxTokens: number): { text: string; tokens: number } {
  let tokens = countTokens(text);
  if (tokens <= maxTokens) return { text, tokens };
  // Tokens are roughly proportional to characters: shrink proportionally, then step down.
  let cut = Math.max(0, Math.floor((text.length * maxTokens) / tokens));
  let candidate = text.slice(0, cut);
  tokens = countTokens(candidate);
  while (tokens > maxTokens && cut > 0) {
    cut = Math.max(0, cut - Math.max(4, Math.floor(cut * 0.05)));
    candidate = text.slice(0, cut);
    tokens = countTokens(candidate);
  }
  const space = candidate.lastIndexOf(" ");
  if (space > candidate.length * 0.8) candidate = candidate.slice(0, space);
  return { text: candidate, tokens: countTokens(candidate) };
}

/** Capitalised words and phrases not at a sentence start, and any capitalised word not a stopword. */
export function extractEntities(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/\b[A-Z][\p{L}'’-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\p{L}'’-]*)*/gu)) {
    const phrase = match[0].replace(/['’]s$/, "").trim();
    const lower = phrase.toLowerCase();
    if (phrase.length < 2 || stopwords.has(lower)) continue;
    found.push(lower);
  }
  return found;
}

export function contentWords(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu) ?? []).filter(
    (word) => word.length > 2 && !stopwords.has(word) && !/^\d+$/.test(word),
  );
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
