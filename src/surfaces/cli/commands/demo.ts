import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { EvidencePack } from "../../../evidence/evidence-pack.ts";
import type { Memory } from "../../../memory.ts";
import { type CommonOptions, openMemory, output, scopeOf } from "../context.ts";
import { renderPack } from "../render.ts";
import { ingestFile } from "./ingest.ts";

const examples = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../examples");

/** The questions the demo asks, each showing one way evidence is found. */
const questions: { title: string; text?: string; image?: string }[] = [
  { title: "text → text: a fact from the conversation", text: "When is the cat's vaccination appointment?" },
  { title: "text → image: words only visible inside a picture (OCR of a receipt)", text: "vet invoice total" },
  { title: "text → image: an image found through its caption", text: "photo of my bicycle" },
  { title: "image → image: a new photo of the same bike finds the original", image: "queries/bike-again.png" },
];

/** The scope the example memory lives in: tenant `demo`, user `ana`. */
export function demoOptions(options: CommonOptions): CommonOptions {
  return { ...options, tenant: "demo", user: "ana", agent: undefined };
}

/** Ingests `examples/demo.jsonl` into the demo scope (idempotent: stored sessions are skipped). */
export async function buildDemoMemory(memory: Memory, options: CommonOptions, display: { progress: boolean }) {
  return ingestFile(memory, demoOptions(options), join(examples, "demo.jsonl"), display);
}

/** Builds the example memory from `examples/` (idempotent) and prints a few evidence packs. */
export async function demo(options: CommonOptions): Promise<number> {
  const scoped = demoOptions(options);
  const memory = await openMemory(scoped);
  try {
    const summary = await buildDemoMemory(memory, scoped, { progress: !options.json });
    const packs: { title: string; pack: EvidencePack }[] = [];
    for (const question of questions) {
      const image = question.image ? { data: await readFile(join(examples, question.image)) } : undefined;
      const pack = await memory.search(scopeOf(scoped), { text: question.text, image }, { budget: { rawNodes: 3 } });
      packs.push({ title: question.title, pack });
    }
    output(options, { db: options.db, scope: scopeOf(scoped), ingest: summary, packs }, () =>
      [
        `Cairn demo: example memory of "ana" in ${options.dbLabel} (tenant demo, profile ${options.profile})`,
        `ingested ${summary.added} new session(s) (${summary.duplicates} already stored) from examples/demo.jsonl`,
        ...summary.warnings.map((warning) => `warning: ${warning}`),
        ...packs.map(({ title, pack }) => `\n── ${title}\n${renderPack(pack)}`),
        `\nTry: npx cairn search "bike frame size" --tenant demo --user ana --db ${options.dbLabel}`,
      ].join("\n"),
    );
    return 0;
  } finally {
    await memory.close();
  }
}
