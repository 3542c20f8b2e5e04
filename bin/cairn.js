#!/usr/bin/env node
// Cairn ships TypeScript sources; tsx compiles them on the fly so there is no build step to forget.
import { register } from "tsx/esm/api";

register();
await import("../src/surfaces/cli/main.ts");
