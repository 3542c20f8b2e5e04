/**
 * What FTS5's cut (`tokenizeWhole`, decision 030) costs per text by round size: 640 texts of ~70
 * tokens (a group commit's batch) cut in rounds of 32 (the default) and in one round of 640 (how it
 * ran before stop 31), alternating, 12 times each; prints the median CPU µs a text of each (the
 * first two of each dropped as warm-up) and whether both give the same tokens.
 *
 *   npx tsx bench/perf/tokenize-rounds.ts
 */
import { tokenizeWhole } from "../../src/store/sqlite/lexical-tokens.ts";

const words =
  "the quick brown fox jumps over lazy dog while Ana talks about her trip to Paris last May with friends photos".split(
    " ",
  );
const texts = Array.from({ length: 640 }, (_, i) =>
  Array.from({ length: 70 }, (_, j) => `${words[(i * 7 + j * 13) % words.length]}${j % 5 === 0 ? i % 97 : ""}`).join(
    " ",
  ),
);
const sizes = [32, 640];
const perText: Record<number, number[]> = { 32: [], 640: [] };
for (let round = 0; round < 12; round++) {
  for (const size of round % 2 === 0 ? sizes : [...sizes].reverse()) {
    const before = process.cpuUsage();
    tokenizeWhole(texts, size);
    const used = process.cpuUsage(before);
    perText[size]?.push((used.user + used.system) / texts.length);
  }
}
const median = (list: number[]) => {
  const sorted = list.slice(2).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const same =
  JSON.stringify(tokenizeWhole(texts, 32).map((d) => [[...d.frequencies].sort(), d.length])) ===
  JSON.stringify(tokenizeWhole(texts, 640).map((d) => [[...d.frequencies].sort(), d.length]));
for (const size of sizes) console.log(`rounds of ${size}: ${median(perText[size] ?? []).toFixed(1)} µs of CPU a text`);
console.log(`same tokens: ${same}`);
