import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import fc from "fast-check";
import { buildWorkingContext } from "../../src/context/manage-context.ts";
import { Renderer } from "../../src/context/render/renderer.ts";
import type { TrajectoryImage, TrajectoryMessage } from "../../src/context/trajectory.ts";
import { drawPng } from "../support/fixtures.ts";
import { sentence } from "./support.ts";

const sizes = [64, 512, 1600] as const;
const pngs = new Map<number, Uint8Array>();
const renderer = new Renderer();

before(async () => {
  for (const size of sizes) pngs.set(size, new Uint8Array(await drawPng({ size, shape: "stripes" })));
});

const messageSpec = fc.record({
  kind: fc.constantFrom("user", "assistant", "call", "system"),
  words: fc.oneof(fc.integer({ min: 0, max: 80 }), fc.integer({ min: 500, max: 4_000 })),
  images: fc.array(fc.constantFrom(...sizes), { maxLength: 3 }),
  table: fc.boolean(),
});

/** Turns specs into a valid trajectory: every `call` is an assistant tool call followed by its tool result. */
type MessageSpec = typeof messageSpec extends fc.Arbitrary<infer T> ? T : never;

function trajectoryOf(specs: readonly MessageSpec[]): TrajectoryMessage[] {
  const messages: TrajectoryMessage[] = [];
  specs.forEach((spec, index) => {
    const images: TrajectoryImage[] = spec.images.map((size, imageIndex) => ({
      id: `m${index}#img${imageIndex}`,
      data: pngs.get(size) ?? new Uint8Array(),
      mediaType: "image/png",
      width: size,
      height: size,
      kind: "image",
      caption: `picture ${index}.${imageIndex}`,
    }));
    const base = { text: sentence(`k${index}`, spec.words, index), images, artifacts: [], toolCalls: [] };
    const artifacts = spec.table ? [{ kind: "table" as const, id: "t", columns: ["a", "b"], rows: [[1, 2]] }] : [];
    if (spec.kind === "call") {
      messages.push({
        ...base,
        id: `m${index}`,
        role: "assistant",
        images: [],
        toolCalls: [{ id: `c${index}`, name: "look", arguments: "{}" }],
      });
      messages.push({ ...base, id: `r${index}`, role: "tool", toolCallId: `c${index}`, artifacts });
    } else if (spec.kind === "system" && index === 0)
      messages.push({ ...base, id: `m${index}`, role: "system", images: [], text: "Be brief." });
    else messages.push({ ...base, id: `m${index}`, role: spec.kind === "assistant" ? "assistant" : "user", artifacts });
  });
  return messages;
}

// Budgets hold for every manager on random histories (DESIGN invariant 3, for working contexts).
describe("context budgets (property)", () => {
  it("every manager's working context fits the window; the boundary control that cannot, says so", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(messageSpec, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 2_000, max: 30_000 }),
        fc.double({ min: 0.2, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 10 }),
        fc.constantFrom("sliding-window", "summarisation", "visual-rendering", "vera", "discard-all", "none"),
        fc.constantFrom("openai-tile", "patch", "area"),
        async (specs, window, triggerShare, keepRecent, manager, rule) => {
          const trajectory = { id: "p", messages: trajectoryOf(specs) };
          const budget = { window, trigger: Math.floor(window * triggerShare), keepRecent };
          const context = await buildWorkingContext(trajectory, {
            manager,
            budget,
            renderer,
            imageRule: { kind: rule } as never,
          });
          const total = context.items.reduce((sum, item) => sum + item.textTokens + item.imageTokens, 0);
          assert.equal(total, context.cost.total);
          if (manager === "none") assert.equal(context.fits, total <= window);
          else assert.ok(total <= window, `${manager}: ${total} > ${window}`);
          assert.equal(context.managed, context.rawCost.total > budget.trigger);
          // Nothing dropped goes unreported: every history message is in the context or in `dropped`.
          const shown = new Set(context.items.flatMap((item) => item.sources));
          const dropped = new Set(context.dropped.map((entry) => entry.messageId));
          for (const message of trajectory.messages) {
            assert.ok(
              shown.has(message.id) || dropped.has(message.id),
              `${manager}: ${message.id} vanished without a record`,
            );
          }
        },
      ),
      { numRuns: 60, seed: 15 },
    );
  });
});
