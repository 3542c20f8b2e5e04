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
  readonly exact: readonly Buffer[];
  /** Bytes of the values the needles come from (what a scan costs to prepare). */
  readonly bytes: number;
  /** Whether some window starts and ends with a zero byte (a vector's may): then no window may be skipped. */
  readonly zeroEdged: boolean;
}

export function residueNeedles(values: Iterable<string | Uint8Array | null | undefined>): ResidueNeedles {
  const windows = new Set<string>();
  const exact = new Map<string, Buffer>();
  let bytes = 0;
  let zeroEdged = false;
  for (const value of values) {
    if (value === null || value === undefined) continue;
    const data = typeof value === "string" ? Buffer.from(value, "utf8") : Buffer.from(value);
    bytes += data.length;
    if (data.length >= residueWindow) {
      for (let start = 0; start + residueWindow <= data.length; start++) {
        if (!informative(data, start)) continue;
        windows.add(data.toString("latin1", start, start + residueWindow));
        if (data[start] === 0 && data[start + residueWindow - 1] === 0) zeroEdged = true;
      }
    } else if (data.length >= shortestExact) {
      exact.set(data.toString("latin1", 0, data.length), data);
    }
  }
  return { windows, exact: [...exact.values()], bytes, zeroEdged };
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

/**
 * Scans `path` for the needles in every b-tree reached from `rootPages` and in the free pages.
 * Overflow pages are not read: a freed chain is zeroed whole and a live chain holds only live payload.
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
    const page = Buffer.alloc(pageSize);
    const zeros = Buffer.alloc(pageSize);
    const hits: string[] = [];
    const seen = new Set<number>();
    let pages = 0;

    const read = (pageNumber: number): boolean => {
      if (pageNumber < 1 || pageNumber > pageCount || seen.has(pageNumber)) return false;
      seen.add(pageNumber);
      pages++;
      return readSync(fd, page, 0, pageSize, (pageNumber - 1) * pageSize) === pageSize;
    };
    const look = (pageNumber: number, from: number, to: number, what: string) => {
      if (to <= from) return;
      const region = page.subarray(from, to);
      if (region.equals(zeros.subarray(0, region.length))) return;
      if (holdsNeedle(region, needles)) hits.push(`page ${pageNumber} (${what})`);
    };

    const stack = rootPages.filter((root) => root > 0);
    for (let pageNumber = stack.pop(); pageNumber !== undefined; pageNumber = stack.pop()) {
      if (!read(pageNumber)) continue;
      const at = pageNumber === 1 ? 100 : 0;
      const type = page.readUInt8(at);
      if (type !== interiorIndex && type !== interiorTable && type !== leafIndex && type !== leafTable) continue;
      const interior = type === interiorIndex || type === interiorTable;
      const cells = page.readUInt16BE(at + 3);
      const contentStart = page.readUInt16BE(at + 5) || 65536;
      const pointers = at + (interior ? 12 : 8);
      const gapStart = pointers + 2 * cells;
      look(pageNumber, gapStart, Math.min(contentStart, usable), "unallocated");
      // Freeblocks: 2 bytes to the next, 2 bytes of size, then what was freed.
      let block = page.readUInt16BE(at + 1);
      for (let hops = 0; block !== 0 && block + 4 <= usable && hops < usable / 4; hops++) {
        const size = page.readUInt16BE(block + 2);
        look(pageNumber, block + 4, Math.min(block + size, usable), "freeblock");
        block = page.readUInt16BE(block);
      }
      // An interior index page's cells are copies of keys, and stay after the row they came from is gone.
      if (type === interiorIndex) look(pageNumber, Math.max(contentStart, gapStart), usable, "divider");
      if (interior) {
        stack.push(page.readUInt32BE(at + 8));
        for (let cell = 0; cell < cells; cell++) {
          const offset = page.readUInt16BE(pointers + 2 * cell);
          if (offset + 4 <= usable) stack.push(page.readUInt32BE(offset));
        }
      }
    }

    // Free pages: a trunk lists leaves after its next-trunk pointer and count; both should be zeroed.
    let trunk = header.readUInt32BE(32);
    while (trunk !== 0 && read(trunk)) {
      const next = page.readUInt32BE(0);
      const leaves = Math.min(page.readUInt32BE(4), (usable - 8) / 4);
      const leafPages = Array.from({ length: leaves }, (_, index) => page.readUInt32BE(8 + 4 * index));
      look(trunk, 8 + 4 * leaves, usable, "free trunk");
      for (const leaf of leafPages) if (read(leaf)) look(leaf, 0, usable, "free page");
      trunk = next;
    }
    return { pages, hits };
  } finally {
    closeSync(fd);
  }
}

function holdsNeedle(region: Buffer, needles: ResidueNeedles): boolean {
  for (const needle of needles.exact) if (region.includes(needle)) return true;
  if (needles.windows.size === 0) return false;
  for (let start = 0; start + residueWindow <= region.length; start++) {
    // Most of a gap is zeros: a window that starts and ends with one is no text's.
    if (!needles.zeroEdged && region[start] === 0 && region[start + residueWindow - 1] === 0) continue;
    if (needles.windows.has(region.toString("latin1", start, start + residueWindow))) return true;
  }
  return false;
}
