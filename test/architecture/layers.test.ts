import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

/**
 * The layers of docs/architecture.md, bottom first. A file may import its own layer and the layers
 * below it; an import that runs upward fails here unless it is one of the named exceptions.
 */
const layers: readonly (readonly string[])[] = [
  ["core"],
  ["store"],
  ["models"],
  ["channels"],
  ["evidence"],
  ["maintain"],
  ["ingest"],
  ["route"],
  ["compile"],
  ["video"],
  ["context"],
  ["memory.ts", "memory-options.ts"],
  ["surfaces", "auth", "bench"],
  ["index.ts"],
];

/** Upward imports allowed, each with its reason (at most two, and each named in docs/architecture.md). */
const allowedUpward = new Map<string, string>();

const srcRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../src");

function layerOf(path: string): { folder: string; rank: number } {
  const folder = relative(srcRoot, path).split("/")[0] ?? "";
  const rank = layers.findIndex((names) => names.includes(folder));
  if (rank < 0) throw new Error(`${folder} is in no layer: add it to the table and to docs/architecture.md`);
  return { folder, rank };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import of every source file (type-only, re-exports and dynamic imports too). */
function imports(): { from: string; to: string }[] {
  return sourceFiles(srcRoot).flatMap((file) => {
    const source = readFileSync(file, "utf8");
    const specifiers = [
      ...source.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/g),
      ...source.matchAll(/import\(\s*"(\.[^"]+)"\s*\)/g),
    ].map((match) => match[1] ?? "");
    return specifiers.map((specifier) => ({ from: file, to: resolve(dirname(file), specifier) }));
  });
}

describe("layers", () => {
  it("no import runs upward, except the named exceptions", () => {
    const upward: string[] = [];
    for (const { from, to } of imports()) {
      const source = layerOf(from);
      const target = layerOf(to);
      if (target.rank <= source.rank) continue;
      const edge = `${relative(srcRoot, from)} -> ${relative(srcRoot, to)}`;
      if (!allowedUpward.has(edge)) upward.push(edge);
    }
    assert.deepEqual(upward, []);
    assert.ok(allowedUpward.size <= 2, "at most two upward imports, each with its reason");
  });

  // Folders are the concept folders under src/ (a subfolder such as bench/answer belongs to bench).
  it("no folder-level import cycle", () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of imports()) {
      const source = layerOf(from).folder;
      const target = layerOf(to).folder;
      if (source !== target) edges.set(source, (edges.get(source) ?? new Set()).add(target));
    }
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const cycles: string[] = [];
    const visit = (folder: string): void => {
      state.set(folder, "open");
      stack.push(folder);
      for (const next of edges.get(folder) ?? []) {
        if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].join(" -> "));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(folder, "done");
    };
    for (const folder of edges.keys()) if (!state.has(folder)) visit(folder);
    assert.deepEqual(cycles, []);
  });

  it("the core imports nothing else of Cairn's, and the store never imports maintenance or routing", () => {
    for (const { from, to } of imports()) {
      const source = layerOf(from).folder;
      const target = layerOf(to).folder;
      if (source === "core")
        assert.equal(target, "core", `${relative(srcRoot, from)} imports ${relative(srcRoot, to)}`);
      if (source === "store") {
        assert.ok(
          !["maintain", "route"].includes(target),
          `${relative(srcRoot, from)} imports ${relative(srcRoot, to)}`,
        );
      }
    }
  });
});
