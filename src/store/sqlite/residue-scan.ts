import { closeSync, openSync, readSync } from "node:fs";

/**
 * Finds bytes of forgotten values that SQLite left in a database file after their rows were deleted
 * (issue 18's promise, decision 038). `secure_delete` zeroes a deleted cell and a freed page, but a
 * b-tree page that SQLite rebuilds (when a balance cannot edit it in place) keeps the old copies of
 * its cells in the gap between the cell pointers and the new content area; a later delete of such a
 * row zeroes the live copy only. An interior page of an index keeps a deleted key as a divider
 * until it is rebalanced. This reads the file itself, page by page from each b-tree's root, and
 * looks for the forgotten values in the bytes no live cell owns: the gap, freeblocks, free pages,
 * and the dividers of interior index pages. The caller holds the write lock with the WAL empty, so
 * the file is the database.
 */

/** Length of the windows a long value is cut into: any fragment at least this long is found. */
export const residueWindow = 12;

/** Values shorter than the window but at least this long are looked for whole; shorter ones would match by chance. */
const shortestExact = 8;

/** What a scan looks for: every window of the long values, and the short values whole. */
export interface ResidueNeedles {
  readonly windows: ReadonlySet<string>;
  /** Rolling hashes of the windows (`windowHash`): a region's windows are hashed, and only a match is compared. */
  readonly hashes: ReadonlySet<number>;
  readonly exact: readonly Buffer[];
  /** Bytes of the values the needles come from (what a scan costs to prepare). */
  readonly bytes: number;
}

export function residueNeedles(values: Iterable<string | Uint8Array | null | undefined>): ResidueNeedles {
  const windows = new Set<string>();
  const hashes = new Set<number>();
  const exact = new Map<string, Buffer>();
  let bytes = 0;
  for (const value of values) {
    if (value === null || value === undefined) continue;
    const data = typeof value === "string" ? Buffer.from(value, "utf8") : Buffer.from(value);
    bytes += data.length;
    if (data.length >= residueWindow) {
      for (let start = 0; start + residueWindow <= data.length; start++) {
        if (!informative(data, start)) continue;
        windows.add(data.toString("latin1", start, start + residueWindow));
        hashes.add(windowHash(data, start));
      }
    } else if (data.length >= shortestExact) {
      exact.set(data.toString("latin1", 0, data.length), data);
    }
  }
  return { windows, hashes, exact: [...exact.values()], bytes };
}

/**
 * Whether a window says something: at least half its bytes are not zero. A sparse vector's runs of
 * zeros are in every page's free space and tell nothing of what was forgotten.
 */
function informative(data: Buffer, start: number): boolean {
  let nonzero = 0;
  for (let index = start; index < start + residueWindow; index++) if (data[index] !== 0) nonzero++;
  return nonzero * 2 >= residueWindow;
}

export interface ResidueScan {
  /** Pages read: b-tree pages reached from the roots, and free pages. */
  readonly pages: number;
  /** Places where a needle was found, as "page N (what)"; empty when the file is clean. */
  readonly hits: readonly string[];
}

/** Page types of the b-tree page header (SQLite file format, section 1.6). */
const interiorIndex = 2;
const interiorTable = 5;
const leafIndex = 10;
const leafTable = 13;

/** Pages read at once when the pages wanted lie close together (1 MiB of 4 KiB pages). */
const runPages = 256;

/**
 * Scans `path` for the needles in every b-tree reached from `rootPages` and in the free pages.
 * Overflow pages are not read: a freed chain is zeroed whole and a live chain holds only live payload.
 * The trees are walked a level at a time, each level's pages in file order, so the leaves (most of
 * the file) are read in runs rather than a page per call (the erasure step of `bench/forget-erasure.ts`: ~0.25 s at 100k raw nodes).
 */
export function scanForResidue(path: string, rootPages: readonly number[], needles: ResidueNeedles): ResidueScan {
  const fd = openSync(path, "r");
  try {
    const header = Buffer.alloc(100);
    if (readSync(fd, header, 0, 100, 0) < 100) return { pages: 0, hits: [] };
    const rawSize = header.readUInt16BE(16);
    const pageSize = rawSize === 1 ? 65536 : rawSize;
    const usable = pageSize - header.readUInt8(20);
    const pageCount = header.readUInt32BE(28);
    const chunk = Buffer.alloc(pageSize * runPages);
    const zeros = Buffer.alloc(pageSize);
    const hits: string[] = [];
    const seen = new Set<number>();

    /** Visits each page not yet seen, in file order, reading nearby pages in one call. */
    const visit = (pageNumbers: readonly number[], inspect: (pageNumber: number, page: Buffer) => void) => {
      const wanted = [...new Set(pageNumbers)]
        .filter((pageNumber) => pageNumber >= 1 && pageNumber <= pageCount && !seen.has(pageNumber))
        .sort((a, b) => a - b);
      for (let index = 0; index < wanted.length; ) {
        const first = wanted[index] as number;
        let end = index;
        while (end + 1 < wanted.length && (wanted[end + 1] as number) - first < runPages) end++;
        const span = ((wanted[end] as number) - first + 1) * pageSize;
        const got = readSync(fd, chunk, 0, span, (first - 1) * pageSize);
        for (let at = index; at <= end; at++) {
          const pageNumber = wanted[at] as number;
          const offset = (pageNumber - first) * pageSize;
          if (offset + pageSize > got) break;
          seen.add(pageNumber);
          inspect(pageNumber, chunk.subarray(offset, offset + pageSize));
        }
        index = end + 1;
      }
    };
    const look = (pageNumber: number, page: Buffer, from: number, to: number, what: string) => {
      if (to <= from) return;
      if (zeros.compare(page, from, to, 0, to - from) === 0) return;
      if (holdsNeedle(page.subarray(from, to), needles)) hits.push(`page ${pageNumber} (${what})`);
    };

    const inspectTreePage = (children: number[]) => (pageNumber: number, page: Buffer) => {
      const at = pageNumber === 1 ? 100 : 0;
      const type = page.readUInt8(at);
      if (type !== interiorIndex && type !== interiorTable && type !== leafIndex && type !== leafTable) return;
      const interior = type === interiorIndex || type === interiorTable;
      const cells = page.readUInt16BE(at + 3);
      const contentStart = page.readUInt16BE(at + 5) || 65536;
      const pointers = at + (interior ? 12 : 8);
      const gapStart = pointers + 2 * cells;
      look(pageNumber, page, gapStart, Math.min(contentStart, usable), "unallocated");
      // Freeblocks: 2 bytes to the next, 2 bytes of size, then what was freed.
      let block = page.readUInt16BE(at + 1);
      for (let hops = 0; block !== 0 && block + 4 <= usable && hops < usable / 4; hops++) {
        const size = page.readUInt16BE(block + 2);
        look(pageNumber, page, block + 4, Math.min(block + size, usable), "freeblock");
        block = page.readUInt16BE(block);
      }
      // An interior index page's cells are copies of keys, and stay after the row they came from is gone.
      if (type === interiorIndex) look(pageNumber, page, Math.max(contentStart, gapStart), usable, "divider");
      if (interior) {
        children.push(page.readUInt32BE(at + 8));
        for (let cell = 0; cell < cells; cell++) {
          const offset = page.readUInt16BE(pointers + 2 * cell);
          if (offset + 4 <= usable) children.push(page.readUInt32BE(offset));
        }
      }
    };
    for (let level: number[] = rootPages.filter((root) => root > 0); level.length > 0; ) {
      const children: number[] = [];
      visit(level, inspectTreePage(children));
      level = children;
    }

    // Free pages: a trunk lists leaves after its next-trunk pointer and count; both should be zeroed.
    for (let trunk = header.readUInt32BE(32); trunk !== 0; ) {
      let next = 0;
      const leaves: number[] = [];
      visit([trunk], (pageNumber, page) => {
        next = page.readUInt32BE(0);
        const count = Math.min(page.readUInt32BE(4), (usable - 8) / 4);
        for (let index = 0; index < count; index++) leaves.push(page.readUInt32BE(8 + 4 * index));
        look(pageNumber, page, 8 + 4 * count, usable, "free trunk");
      });
      visit(leaves, (pageNumber, page) => look(pageNumber, page, 0, usable, "free page"));
      trunk = next;
    }
    return { pages: seen.size, hits };
  } finally {
    closeSync(fd);
  }
}

/** Base of the polynomial window hash, and its power that leaves the window (32-bit arithmetic). */
const hashBase = 257;
const leavingPower = Array.from({ length: residueWindow - 1 }).reduce<number>((power) => Math.imul(power, hashBase), 1);

function windowHash(data: Buffer, start: number): number {
  let hash = 0;
  for (let index = start; index < start + residueWindow; index++)
    hash = (Math.imul(hash, hashBase) + (data[index] as number)) | 0;
  return hash;
}

function holdsNeedle(region: Buffer, needles: ResidueNeedles): boolean {
  for (const needle of needles.exact) if (region.includes(needle)) return true;
  if (needles.windows.size === 0 || region.length < residueWindow) return false;
  // Only a window with as many non-zero bytes as a needle's can be one; its hash rolls as it slides,
  // and only a hash that matches costs a comparison.
  let nonzero = 0;
  for (let index = 0; index < residueWindow; index++) if (region[index] !== 0) nonzero++;
  let hash = windowHash(region, 0);
  for (let start = 0; ; start++) {
    if (
      nonzero * 2 >= residueWindow &&
      needles.hashes.has(hash) &&
      needles.windows.has(region.toString("latin1", start, start + residueWindow))
    ) {
      return true;
    }
    const next = start + residueWindow;
    if (next >= region.length) return false;
    const leaving = region[start] as number;
    const entering = region[next] as number;
    if (leaving !== 0) nonzero--;
    if (entering !== 0) nonzero++;
    hash = (Math.imul(hash - Math.imul(leaving, leavingPower), hashBase) + entering) | 0;
  }
}
