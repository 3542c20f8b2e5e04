#!/usr/bin/env node
// Builds the published package into dist/: tsc compiles src/ (ESM and declarations), then
//  - declarations get `.js` specifiers: tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits
//    (rewriteRelativeImportExtensions) but leaves the `.ts` in .d.ts files, which a consumer's
//    TypeScript would then look for and not find;
//  - every file under src/ that is not TypeScript (the dashboard's html, js, css and svg) is copied beside the
//    compiled code that reads it at run time.
// Plain JavaScript so that it runs with nothing but Node and the TypeScript compiler.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const dist = join(root, "dist");

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });

// `from "./x.ts"`, `import("./x.ts")` and `import "./x.ts"` with a relative specifier.
const relativeTs = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g;
let declarations = 0;
for (const file of files(dist)) {
  if (!file.endsWith(".d.ts")) continue;
  const text = readFileSync(file, "utf8");
  const rewritten = text.replace(relativeTs, "$1$2.js$3");
  if (rewritten !== text) {
    writeFileSync(file, rewritten);
    declarations++;
  }
}

let assets = 0;
for (const file of files(src)) {
  if (file.endsWith(".ts")) continue;
  const target = join(dist, relative(src, file));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(file, target);
  assets++;
}
console.log(`dist/ built: ${declarations} declaration files re-pointed at .js, ${assets} assets copied`);
