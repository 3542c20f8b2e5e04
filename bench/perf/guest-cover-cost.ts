/**
 * CPU cost of a guest-cover update (decision 029) on its own: what maintenance adds to a host when an
 * overflow or an update makes it reach another entry (the entry's own cover merged into the host's).
 *
 *   node --import tsx bench/perf/guest-cover-cost.ts [dimensions] [updates]
 *
 * Prints µs of CPU per update and the size of the resulting cover.
 */
import { coverOfReached, mergeCovers } from "../../src/maintain/guest-cover.ts";
import type { GuestCover, IndexEntry } from "../../src/store/index-records.ts";

const dimensions = Number(process.argv[2] ?? 512);
const updates = Number(process.argv[3] ?? 2_000);

/** An overflowing entry with a full digest (32 keywords, 24 entities), as the caps allow. */
function entry(index: number): IndexEntry {
  const vector = new Float32Array(dimensions);
  let norm = 0;
  for (let d = 0; d < dimensions; d++) {
    vector[d] = Math.sin(index * 31 + d);
    norm += (vector[d] as number) ** 2;
  }
  for (let d = 0; d < dimensions; d++) vector[d] = (vector[d] as number) / Math.sqrt(norm);
  return {
    id: `e${index}`,
    status: "overflow",
    page: null,
    digest: {
      speakers: ["Ana"],
      entities: Object.fromEntries(Array.from({ length: 24 }, (_, k) => [`person ${index}-${k}`, 1])),
      keywords: Object.fromEntries(Array.from({ length: 32 }, (_, k) => [`word${index}x${k}`, 1 + (k % 3)])),
      numbers: [],
      imageText: [],
      snippets: [],
      stateCues: 0,
    },
    routingText: "",
    tokens: 0,
    vector,
    vectorWeight: 8,
    imageVector: null,
    imageWeight: 0,
    pointers: [],
    sessions: [],
    timeStartMs: 0,
    timeEndMs: 0,
    predecessor: null,
    host: null,
    lastAction: "overflow",
    relation: null,
    createdMs: 0,
    updatedMs: 0,
  };
}

const entries = Array.from({ length: updates }, (_, index) => entry(index));
let cover: GuestCover | undefined;
const start = process.cpuUsage();
for (const reached of entries) cover = mergeCovers(cover, coverOfReached(reached));
const used = process.cpuUsage(start);
console.log(
  `${((used.user + used.system) / updates).toFixed(1)} µs of CPU per cover update (${dimensions} dimensions, ${updates} updates); cover ${Buffer.byteLength(JSON.stringify(cover))} bytes`,
);
