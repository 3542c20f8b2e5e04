import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { managerNames } from "../../src/context/context-manager.ts";
import { buildWorkingContext } from "../../src/context/manage-context.ts";
import { Renderer } from "../../src/context/render/renderer.ts";
import type { Trajectory } from "../../src/context/trajectory.ts";
import type { ContextMessage } from "../../src/context/working-context.ts";
import { agentTrajectory } from "./support.ts";

const budget = { window: 24_000, trigger: 12_000, keepRecent: 4 };
const renderer = new Renderer();
let long: Trajectory;

before(async () => {
  long = await agentTrajectory(40, { wordsPerResult: 500 });
});

function textOf(messages: readonly ContextMessage[]): string {
  return messages
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : message.content.map((part) => (part.type === "text" ? part.text : "")).join("\n"),
    )
    .join("\n");
}

/** Every tool message answers a call made by an earlier assistant message still in the context. */
function assertToolPairs(messages: readonly ContextMessage[]): void {
  const calls = new Set<string>();
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) calls.add(call.id);
    if (message.role === "tool")
      assert.ok(calls.has(message.tool_call_id ?? ""), `tool result for ${message.tool_call_id} without its call`);
  }
}

describe("context managers", () => {
  it("below the trigger the history passes unchanged, whatever the manager", async () => {
    const short = await agentTrajectory(2);
    const context = await buildWorkingContext(short, { manager: "vera", budget, renderer });
    assert.equal(context.managed, false);
    assert.deepEqual(context.cost, context.rawCost);
    assert.equal(context.dropped.length, 0);
    assert.ok(textOf(context.messages).includes("w1xresult"));
  });

  it("No Compression keeps everything and says when it overflows; Discard-All keeps only the recent part", async () => {
    const none = await buildWorkingContext(long, { manager: "none", budget, renderer });
    assert.equal(none.role, "boundary-control");
    assert.equal(none.cost.total, none.rawCost.total);
    assert.equal(none.fits, false);
    assert.ok(none.warnings.some((warning) => warning.includes("over the window")));
    const reset = await buildWorkingContext(long, { manager: "discard-all", budget, renderer });
    assert.ok(!textOf(reset.messages).includes("w0xplan"));
    assert.ok(textOf(reset.messages).includes("w39xresult"), "recent messages stay native");
    assert.ok(textOf(reset.messages).includes("You are a research agent."), "the system prompt stays");
  });

  it("Sliding Window evicts old tool results first, keeping the calls", async () => {
    const context = await buildWorkingContext(long, { manager: "sliding-window", budget, renderer });
    const text = textOf(context.messages);
    assert.ok(text.includes("evicted to memory"));
    assert.ok(text.includes("w39xresult"));
    assert.ok(context.dropped.some((entry) => entry.what === "tool-result"));
    assertToolPairs(context.messages);
    assert.ok(context.cost.total <= budget.window);
  });

  it("Summarisation replaces the managed history with a labelled summary and builds on it at the next trigger", async () => {
    const first = await buildWorkingContext(long, { manager: "summarisation", budget, renderer });
    const summary = first.messages.find(
      (message) => typeof message.content === "string" && message.content.startsWith("[summary of earlier history"),
    );
    assert.ok(summary, "a summary message");
    assert.match(String(summary.content), /\[\w+ (assistant|tool|user)/, "facts keep their role labels");
    const recentIds = new Set(["sys", ...long.messages.slice(first.recentFrom).map((message) => message.id)]);
    for (const item of first.items) {
      if (item.form === "native")
        assert.ok(
          item.sources.every((id) => recentIds.has(id)),
          "only recent messages stay native",
        );
      else assert.equal(item.images.length, 0, "a summary carries no pixels");
    }
    assert.ok(first.state?.summary);
    const longer = {
      ...long,
      messages: [
        ...long.messages.slice(0, -1),
        ...(await agentTrajectory(60, { wordsPerResult: 500 })).messages.slice(82, 100),
        ...long.messages.slice(-1),
      ],
    };
    const second = await buildWorkingContext(longer, {
      manager: "summarisation",
      budget,
      renderer,
      ...(first.state ? { previous: first.state } : {}),
    });
    assert.ok(second.cost.total <= budget.window);
  });

  it("Visual Rendering carries the managed history as at most 10 pages and no native images", async () => {
    const context = await buildWorkingContext(long, { manager: "visual-rendering", budget, renderer });
    const rendered = context.items.filter((item) => item.form === "rendered");
    assert.equal(rendered.length, 1);
    assert.ok((rendered[0]?.images.length ?? 0) <= 10);
    assert.deepEqual(rendered[0]?.nativeImages, []);
    assert.ok(
      context.dropped.some((entry) => entry.what === "images"),
      "the pixels of old screenshots are not carried",
    );
  });

  it("VERA keeps images, tables and charts native right after the page of their message", async () => {
    const context = await buildWorkingContext(long, { manager: "vera", budget, renderer });
    const rendered = context.items.find((item) => item.form === "rendered");
    assert.ok(rendered);
    assert.ok(
      rendered.nativeImages.some((id) => id.endsWith("#img0")),
      "screenshots stay native",
    );
    assert.ok(
      rendered.nativeImages.some((id) => id.endsWith("#t")),
      "tables stay visual",
    );
    assert.ok(
      rendered.nativeImages.some((id) => id.endsWith("#c")),
      "charts stay visual",
    );
    const parts = typeof rendered.message.content === "string" ? [] : rendered.message.content;
    const labelIndex = parts.findIndex((part) => part.type === "text" && part.text.includes("#img0 from tool"));
    assert.ok(labelIndex > 1, "a native image follows a page");
    assert.equal(parts[labelIndex + 1]?.type, "image_url");
    const vr = await buildWorkingContext(long, { manager: "visual-rendering", budget, renderer });
    assert.ok(
      context.cost.total < context.rawCost.total && vr.cost.total < vr.rawCost.total,
      "both cheaper than the raw history",
    );
  });

  it("every manager's context is valid for a chat API: tool results follow their calls", async () => {
    for (const manager of managerNames) {
      const context = await buildWorkingContext(long, { manager, budget, renderer });
      assertToolPairs(context.messages);
      for (const message of context.messages) {
        if (message.role !== "user" && typeof message.content !== "string")
          assert.fail(`${manager}: images in a ${message.role} message`);
      }
    }
  });

  it("refuses a budget that cannot work", async () => {
    await assert.rejects(buildWorkingContext(long, { budget: { window: 500 } }), /budget.window/);
    await assert.rejects(buildWorkingContext(long, { budget: { window: 10_000, trigger: 20_000 } }), /budget.trigger/);
    await assert.rejects(buildWorkingContext(long, { manager: "zip" as never }), /unknown context manager/);
  });
});

describe("genuine managers (VERA §3)", () => {
  it("a manager that keeps nothing of the managed history is reported as a boundary control for that call", async () => {
    const long = await agentTrajectory(40, { wordsPerResult: 500 });
    // A 1-token-per-page budget leaves VR no room for even one page.
    const context = await buildWorkingContext(long, {
      manager: "visual-rendering",
      budget: { window: 24_000, trigger: 12_000, keepRecent: 4, managedShare: 0.05 },
      renderer,
    });
    assert.equal(context.role, "boundary-control");
    assert.ok(context.warnings.some((warning) => warning.includes("boundary control here")));
    const genuine = await buildWorkingContext(long, { manager: "visual-rendering", budget, renderer });
    assert.equal(genuine.role, "manager");
  });
});
