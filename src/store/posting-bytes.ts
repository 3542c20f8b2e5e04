/**
 * Postings as bytes, as both stores' lexical indexes write them: per posting a run of LEB128
 * varints (7-bit groups, lowest first, the high bit set on all but a number's last byte), the
 * first of them the document's rowid as a delta from the posting before it. A delta of 0 cannot
 * occur (a list's rowids strictly increase and the first is counted from 0), so it marks "an
 * absolute rowid follows" (the SQLite index's appended chunks, decision 030). After the rowid: the
 * term frequency, the document's length in tokens and, where lists hold several scopes (SQLite),
 * the scope ordinal. Postgres blocks (decision 039) carry three numbers a posting, SQLite's four.
 */

export interface DecodedPostings {
  readonly docs: number[];
  readonly tfs: number[];
  readonly lengths: number[];
}

export interface ScopedPostings extends DecodedPostings {
  readonly scopes: number[];
}

export function decodeVarintPostings(bytes: Uint8Array, numbers: 3): DecodedPostings;
export function decodeVarintPostings(bytes: Uint8Array, numbers: 4): ScopedPostings;
export function decodeVarintPostings(bytes: Uint8Array, numbers: 3 | 4): DecodedPostings | ScopedPostings {
  const docs: number[] = [];
  const tfs: number[] = [];
  const lengths: number[] = [];
  const scopes: number[] = [];
  let offset = 0;
  const next = (): number => {
    let value = 0;
    let scale = 1;
    for (;;) {
      if (offset >= bytes.length) throw new RangeError("postings end inside a number");
      const byte = bytes[offset++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  };
  let doc = 0;
  while (offset < bytes.length) {
    const delta = next();
    doc = delta === 0 ? next() : doc + delta;
    docs.push(doc);
    tfs.push(next());
    lengths.push(next());
    if (numbers === 4) scopes.push(next());
  }
  return numbers === 4 ? { docs, tfs, lengths, scopes } : { docs, tfs, lengths };
}
