#!/usr/bin/env node
// The installed package runs its compiled JavaScript (dist/); the package ships no TypeScript sources
// and needs no TypeScript tooling at run time. In a checkout of the repository, where src/ sits beside
// this file, the CLI runs from the sources through tsx (a dev dependency) so that what runs is always
// what was just edited, never a stale build.
import { existsSync } from "node:fs";

const source = new URL("../src/surfaces/cli/main.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import("../dist/surfaces/cli/main.js");
}
