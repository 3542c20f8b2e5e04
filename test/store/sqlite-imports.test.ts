import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const folder = resolve(dirname(fileURLToPath(import.meta.url)), "../../src/store/sqlite");
const srcRoot = resolve(folder, "../..");

/** Files allowed to reach above the store layer, each with the reason it still does (none since forget became a plan). */
const upwardImportAllowed = new Map<string, string>();

/** Every relative import (type imports too) of each .ts file in the folder, as absolute paths. */
function importsByFile(): Map<string, string[]> {
  const files = readdirSync(folder).filter((name) => name.endsWith(".ts"));
  return new Map(
    files.map((name) => {
      const source = readFileSync(join(folder, name), "utf8");
      const targets = [...source.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/g)].map((match) =>
        resolve(folder, match[1] ?? ""),
      );
      return [join(folder, name), targets];
    }),
  );
}

test("src/store/sqlite has no import cycle", () => {
  const imports = importsByFile();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const next of imports.get(file) ?? []) {
      if (!imports.has(next)) continue;
      if (state.get(next) === "open") {
        cycles.push([...stack.slice(stack.indexOf(next)), next].map((path) => relative(folder, path)).join(" -> "));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of imports.keys()) if (!state.has(file)) visit(file);
  assert.deepEqual(cycles, []);
});

test("src/store/sqlite imports nothing above the store layer, except where a reason is given", () => {
  const upward: string[] = [];
  for (const [file, targets] of importsByFile()) {
    if (upwardImportAllowed.has(relative(folder, file))) continue;
    for (const target of targets) {
      const layer = relative(srcRoot, target).split("/")[0] ?? "";
      if (layer !== "core" && layer !== "store")
        upward.push(`${relative(folder, file)} -> ${relative(srcRoot, target)}`);
    }
  }
  assert.deepEqual(upward, []);
});
