/**
 * Postings of Cairn's own lexical index (decision 030) as bytes, and the BM25 arithmetic over them:
 * pure functions, no database.
 *
 * A posting is (document rowid, term frequency, document length in tokens, scope ordinal), four
 * varints, read by `posting-bytes.ts`; the rowid is a delta from the posting before it, and a delta
 * of 0 marks "an absolute rowid follows": a write appends a chunk of new postings to a list's tail
 * with SQL's `||` without reading the tail first (cast back to a BLOB: `||` makes text of its operands).
 */

import { idfFloor } from "../lexical-block-max.ts";
import { decodeVarintPostings } from "../posting-bytes.ts";

/** Postings a sealed block holds at most: big enough to amortise a row, small enough to skip cheaply. */
export const blockSize = 128;

export { b, blockBound, idfFloor, k1, saturation } from "../lexical-block-max.ts";

export interface Posting {
  readonly doc: number;
  readonly tf: number;
  readonly length: number;
  readonly scope: number;
}

/** Decoded postings, struct of arrays, docs ascending. */
export interface PostingArrays {
  readonly docs: number[];
  readonly tfs: number[];
  readonly lengths: number[];
  readonly scopes: number[];
}

function pushVarint(out: number[], value: number): void {
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

/** One chunk: the first rowid absolute (after the 0 marker), the rest as deltas. */
export function encodeChunk(postings: readonly Posting[]): Uint8Array {
  const out: number[] = [];
  let previous = -1;
  for (const posting of postings) {
    if (previous < 0) {
      pushVarint(out, 0);
      pushVarint(out, posting.doc);
    } else {
      if (posting.doc <= previous) throw new RangeError(`postings out of order: ${posting.doc} after ${previous}`);
      pushVarint(out, posting.doc - previous);
    }
    previous = posting.doc;
    pushVarint(out, posting.tf);
    pushVarint(out, posting.length);
    pushVarint(out, posting.scope);
  }
  return Uint8Array.from(out);
}

/** Every posting of a block or tail (one or more appended chunks). */
export function decodePostings(bytes: Uint8Array): PostingArrays {
  return decodeVarintPostings(bytes, 4);
}

export function toPostings(arrays: PostingArrays): Posting[] {
  return arrays.docs.map((doc, index) => ({
    doc,
    tf: arrays.tfs[index] as number,
    length: arrays.lengths[index] as number,
    scope: arrays.scopes[index] as number,
  }));
}

/** FTS5's idf: ln((N − df + 0.5) / (df + 0.5)), 1e-6 where that is not positive. */
export function idf(rows: number, documents: number): number {
  return idfFloor(Math.log((rows - documents + 0.5) / (documents + 0.5)));
}

/** Largest tf and smallest length of a list of postings (what a block row keeps beside its bytes). */
export function extremes(postings: readonly Posting[]): { maxTf: number; minLength: number } {
  let maxTf = 0;
  let minLength = Number.POSITIVE_INFINITY;
  for (const posting of postings) {
    if (posting.tf > maxTf) maxTf = posting.tf;
    if (posting.length < minLength) minLength = posting.length;
  }
  return { maxTf, minLength: Number.isFinite(minLength) ? minLength : 0 };
}
