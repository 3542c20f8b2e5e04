/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): the functions by self time and by inclusive
 * time (time with everything they called, each sample counted once per function however deep the
 * recursion), as shares of all samples. Paths are shown relative to the repository.
 *
 * With `--window NAME`, only the samples between the first and the last whose stack holds a
 * function called NAME count (e.g. `addSession`: the ingest loop, without start-up and clean-up).
 *
 *   npx tsx bench/perf/profile-summary.ts /tmp/prof/CPU.*.cpuprofile [--top 40] [--window addSession]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly children?: number[];
}

interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const top = Number(option("--top") ?? 40);
const window = option("--window");
const file = args.find((arg, index) => !arg.startsWith("--") && !args[index - 1]?.startsWith("--"));
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [--top N] [--window NAME]");
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;

const root = process.cwd();
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.replace(/^file:\/\//, "").replace(`${root}/`, "");
  const name = functionName || "(anonymous)";
  return where ? `${name} ${where}:${lineNumber + 1}` : name;
}

function stackHolds(id: number, name: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    if (byId.get(at)?.callFrame.functionName === name) return true;
  }
  return false;
}

let first = 0;
let last = profile.samples.length - 1;
if (window) {
  first = profile.samples.findIndex((id) => stackHolds(id, window));
  while (last > first && !stackHolds(profile.samples[last] ?? -1, window)) last--;
  if (first < 0) throw new Error(`no sample holds ${window}`);
}

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, index) => {
  if (index < first || index > last) return;
  const micros = profile.timeDeltas[index] ?? 0;
  total += micros;
  const node = byId.get(id);
  if (!node) return;
  self.set(label(node), (self.get(label(node)) ?? 0) + micros);
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at);
    if (!frame) break;
    const name = label(frame);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + micros);
  }
});

function table(title: string, values: Map<string, number>): void {
  console.log(`\n### ${title}\n\n| share | ms | function |\n|---:|---:|---|`);
  const rows = [...values].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, micros] of rows) {
    console.log(`| ${((100 * micros) / total).toFixed(1)}% | ${(micros / 1000).toFixed(0)} | \`${name}\` |`);
  }
}

console.log(
  `Profile ${file}: ${(total / 1000).toFixed(0)} ms sampled${window ? ` from the first to the last sample in ${window}` : ""}.`,
);
table("Self time", self);
table("Inclusive time", inclusive);
