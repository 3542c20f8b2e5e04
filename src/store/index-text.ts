import { monthNames } from "../core/time.ts";
import { queryTerms } from "./query-terms.ts";
import type { RawNode } from "./records.ts";

/**
 * What a raw node is searchable by besides its own words ("contextual" indexing, issue 19 part 2). A
 * turn alone often lacks what a question names: who said it ("what did Caroline paint?"), when
 * ("in May 2023"), what it answers ("Yes, last week!" to "did you go to the parade?") and what its
 * image shows. The index text carries those; the raw evidence (`text`) is never changed, and only
 * the lexical and dense text channels read the index text.
 */
export interface IndexTextConfig {
  /** Prefix the speaker's name. */
  readonly speaker: boolean;
  /** Add the session's date in words and in ISO form ("Monday 8 May 2023 2023-05-08"). */
  readonly date: boolean;
  /** Add the captions and read text of the turn's images. */
  readonly images: boolean;
  /** Turns either side (same session) whose gist is added. */
  readonly neighbours: number;
  /** Content words a neighbour contributes (its first ones, stop words left out). */
  readonly gistWords: number;
  /**
   * How many times the turn's own words stand in its index text (a field weight, as in BM25F). With
   * 1, a turn and its neighbour hold a word the turn said once each and score alike, so a search for
   * what a turn says could put the neighbour first; 2 keeps the turn ahead of every turn that only
   * has it as context, while context still finds turns that do not say the words at all.
   */
  readonly ownWeight: number;
}

/**
 * Defaults: speaker, date, image text and one neighbour either side (eight words each) on. Chosen on
 * LoCoMo and the Mem-Gallery histories at hand with the hash profile (BENCHMARKS.md, "Evidence
 * quality"); not tuned per dataset.
 *
 * A neighbour's gist is derived from that neighbour, so a forget of single raw nodes re-derives the
 * index text (lexical row and text vectors) of the surviving turns beside them in its own
 * transaction (`maintain/forget.ts`, decision 018); a whole session's forget has nothing to
 * re-derive, since neighbours never cross sessions.
 */
export const defaultIndexTextConfig: IndexTextConfig = Object.freeze({
  speaker: true,
  date: true,
  images: true,
  neighbours: 1,
  gistWords: 8,
  ownWeight: 2,
});

/** Index text switched off: each raw node is searchable by its own text only (what Cairn did before). */
export const plainIndexTextConfig: IndexTextConfig = Object.freeze({
  speaker: false,
  date: false,
  images: false,
  neighbours: 0,
  gistWords: 0,
  ownWeight: 1,
});

export interface IndexTextTurn {
  readonly speaker: string | null;
  readonly text: string;
  /** The turn's images' captions and read text, already joined. */
  readonly imageText: string;
  readonly timeMs: number;
}

const weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** A UTC date in words and ISO form: "Monday 8 May 2023 2023-05-08". */
export function dateWords(timeMs: number): string {
  const date = new Date(timeMs);
  if (Number.isNaN(date.getTime())) return "";
  const iso = date.toISOString().slice(0, 10);
  return `${weekdays[date.getUTCDay()]} ${date.getUTCDate()} ${monthNames[date.getUTCMonth()]} ${date.getUTCFullYear()} ${iso}`;
}

/**
 * Each turn's index text, in order: its own text (or, for an image-only turn, what the image says),
 * then the context the configuration asks for. Pure.
 *
 * @example
 * contextualTexts([{ speaker: "Ana", text: "Yes!", imageText: "", timeMs: Date.UTC(2023, 4, 8) }], defaultIndexTextConfig)
 * // ["Ana: Yes! | Monday 8 May 2023 2023-05-08"]
 */
export function contextualTexts(turns: readonly IndexTextTurn[], config: IndexTextConfig): string[] {
  const gists = turns.map((turn) =>
    config.neighbours > 0 && config.gistWords > 0
      ? queryTerms(`${turn.text} ${turn.imageText}`, config.gistWords).join(" ")
      : "",
  );
  return turns.map((turn, index) => {
    const own = turn.text.trim() || turn.imageText.trim();
    // A turn with nothing of its own stays unsearchable: context alone would make it match its neighbours' words.
    if (!own) return "";
    const parts = [config.speaker && turn.speaker ? `${turn.speaker}: ${own}` : own];
    for (let copy = 1; copy < config.ownWeight; copy++) parts.push(own);
    if (config.images && turn.text.trim() && turn.imageText.trim()) parts.push(turn.imageText.trim());
    if (config.date) parts.push(dateWords(turn.timeMs));
    const around: string[] = [];
    for (let offset = -config.neighbours; offset <= config.neighbours; offset++) {
      const gist = offset === 0 ? "" : gists[index + offset];
      if (gist) around.push(gist);
    }
    if (around.length > 0) parts.push(around.join(" "));
    return parts.filter(Boolean).join(" | ");
  });
}

/** A stored turn's image text as a write joins it: each image's caption and read text, one per line. */
export function storedImageText(node: Pick<RawNode, "images">): string {
  return imagesText(node.images);
}

/** Images' text as a write joins it for a turn's index text: each one's caption and read text, one per line. */
export function imagesText(
  images: readonly { readonly caption: string | null; readonly derivedText: string | null }[],
): string {
  return images
    .flatMap((image) => [image.caption, image.derivedText])
    .filter(Boolean)
    .join("\n");
}

/**
 * The index texts of one stored session's raw nodes (in turn order), as the write path made them:
 * what a re-embedding or a copy into another store derives again, since stores keep no copy.
 */
export function storedIndexTexts(nodes: readonly RawNode[], config: IndexTextConfig): string[] {
  return contextualTexts(
    nodes.map((node) => ({
      speaker: node.speaker,
      text: node.text,
      imageText: storedImageText(node),
      timeMs: Date.parse(node.time),
    })),
    config,
  );
}
