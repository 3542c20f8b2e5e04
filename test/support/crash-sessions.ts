import { createHash } from "node:crypto";
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Scope } from "../../src/core/scope.ts";
import { drawPng } from "./fixtures.ts";

/**
 * The sessions the crash-safety child ingests, derived from their index alone so that the
 * parent can tell exactly what every stored session must contain.
 */
export const crashScope: Scope = { tenant: "crash", user: "ana" };

export interface CrashSessionPlan {
  readonly index: number;
  readonly key: string;
  readonly time: string;
  readonly turns: readonly {
    readonly speaker: string;
    readonly text: string;
    readonly images: readonly { readonly file: string; readonly caption: string }[];
  }[];
}

/**
 * A word found only in one turn of one session, so a scan of the store's files can tell whether a
 * forgotten turn left anything behind: hex from SHA-256, ending in a digit so the stemmer keeps it.
 */
export function crashMarker(index: number, turn: number): string {
  return `m${createHash("sha256").update(`crash ${index}/${turn}`).digest("hex").slice(0, 20)}7`;
}

export function crashSessionPlan(index: number): CrashSessionPlan {
  const turnCount = 1 + (index % 4);
  return {
    index,
    key: `s${index}`,
    time: new Date(Date.UTC(2024, 0, 1) + index * 60_000).toISOString(),
    turns: Array.from({ length: turnCount }, (_, turn) => ({
      speaker: turn % 2 === 0 ? "Ana" : "Bo",
      text: `session ${index} turn ${turn}: the heron counted ${index * 7 + turn} pebbles ${crashMarker(index, turn)}`,
      images:
        (index + turn) % 2 === 0
          ? [
              {
                // Some images recur across sessions, so blobs are shared and deduplicated.
                file: (index + turn) % 4 === 0 ? `shared-${index % 3}.png` : `s${index}-t${turn}.png`,
                caption: `picture ${index}.${turn}`,
              },
            ]
          : [],
    })),
  };
}

export function crashSessionInput(plan: CrashSessionPlan) {
  return {
    session: plan.key,
    time: plan.time,
    turns: plan.turns.map((turn) => ({
      speaker: turn.speaker,
      text: turn.text,
      ...(turn.images.length > 0
        ? { images: turn.images.map((image) => ({ path: image.file, caption: image.caption })) }
        : {}),
    })),
  };
}

/** Draws the plan's missing image files; each appears whole or not at all (write, then rename). */
export async function ensureCrashImages(plan: CrashSessionPlan, inputDir: string): Promise<void> {
  for (const image of plan.turns.flatMap((turn) => turn.images)) {
    const path = join(inputDir, image.file);
    if (existsSync(path)) continue;
    const seed = [...image.file].reduce((sum, char) => (sum * 31 + char.charCodeAt(0)) % 0xffffff, 7);
    const color = `#${seed.toString(16).padStart(6, "0")}`;
    const shape = (["circle", "square", "stripes"] as const)[seed % 3];
    const data = await drawPng({ color, shape, size: 48 + (seed % 5) * 8 });
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, data);
    renameSync(temporary, path);
  }
}
