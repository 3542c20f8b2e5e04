import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { Judgement, JudgeView, RelationJudge } from "../../src/maintain/judge.ts";
import { Memory, type MemoryOptions } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { daySession, distinctTopics, tempDir } from "../support/fixtures.ts";

const scope = { tenant: "acme", user: "ana" };

async function open(t: { after: (fn: () => void) => void }, options: Partial<MemoryOptions> = {}) {
  const memory = await Memory.open({ path: join(tempDir(t), "store"), models: createHashModels(), ...options });
  t.after(() => memory.close());
  return memory;
}

const topics = distinctTopics.slice(0, 6);

describe("budgeted routing through the active index", () => {
  it("ranks by route order with BM25 off or silent, instead of failing", async (t) => {
    const memory = await open(t);
    for (const [index, texts] of topics.entries())
      await memory.addSession(scope, daySession(`s${index}`, index, texts));
    const dense = await memory.search(scope, "corgi", { channels: ["dense", "route"] });
    assert.ok(dense.items.length > 0, "dense and route order still find evidence");
    assert.ok(dense.channelsUsed.includes("route"));
    const silent = await memory.search(scope, "zyzzyva", { channels: ["bm25", "dense", "route"] });
    assert.ok(silent.items.length > 0, "a query no word of which is stored still gets routed evidence");
  });

  it("reads at most the page budget and reports pages read, pages cut and the route trace", async (t) => {
    const memory = await open(t, { maintenance: { bounds: { entries: 6, pages: 3, tokens: 6_144, bytes: 393_216 } } });
    for (const [index, texts] of topics.entries())
      await memory.addSession(scope, daySession(`s${index}`, index, texts));
    const pack = await memory.search(scope, "what colour was the kayak", { mode: "route", budget: { pages: 1 } });
    assert.equal(pack.mode, "route");
    assert.ok(pack.route, "a routed pack carries its trace");
    assert.equal(pack.route.pages.filter((page) => page.read).length, 1);
    assert.equal(pack.budget.used.pages, 1);
    assert.equal(pack.budget.cut.pages, pack.route.pages.length - 1);
    assert.ok(pack.route.entries.some((entry) => entry.chosen));
    for (const item of pack.items) assert.ok(item.route, "route mode reads only what routing reached");
    assert.equal(pack.route.selected, pack.items.length);
  });

  it("reaches raw nodes that the capacity fallback moved out of the active bounds", async (t) => {
    const memory = await open(t, { maintenance: { bounds: { entries: 2, pages: 1, tokens: 6_144, bytes: 393_216 } } });
    for (const [index, texts] of topics.entries())
      await memory.addSession(scope, daySession(`s${index}`, index, texts));
    const entries = await memory.listEntries(scope);
    assert.equal(entries.filter((entry) => entry.status === "active").length, 2);
    assert.ok(
      entries.some((entry) => entry.status === "overflow"),
      "six topics in two entries overflow",
    );
    const check = await memory.checkIndex(scope);
    assert.deepEqual(check.violations, []);
    assert.equal(check.utilisation.pointers, 12, "every raw node stays pointed at");
    // Every raw node is reachable by routing: asking for each one's own words finds it.
    for (const texts of topics) {
      const pack = await memory.search(scope, texts[0] as string, { mode: "route" });
      assert.ok(
        pack.items.some((item) => item.text === texts[0]),
        `routing reaches "${texts[0]}" (${pack.items.map((item) => item.route?.via).join()})`,
      );
    }
  });

  it("puts the latest state of an updated fact before the state it replaced", async (t) => {
    // A judge that calls every later "lives in" record an update of an earlier one: the mechanics under test are
    // the version chain and the reader, not the comparator's thresholds.
    const judge: RelationJudge = {
      id: "lives-in",
      async judge(incoming: JudgeView, candidate: JudgeView): Promise<Judgement> {
        const both = /lives in/.test(incoming.routingText) && /lives in/.test(candidate.routingText);
        return both && incoming.timeStartMs > candidate.timeEndMs
          ? { relation: "update", confidence: 0.9, features: {} }
          : { relation: "distinct", confidence: 0.9, features: {} };
      },
    };
    const memory = await open(t, { judge });
    await memory.addSession(scope, daySession("old", 0, ["Ana lives in Lisbon near the river."]));
    await memory.addSession(scope, daySession("noise", 1, ["The quarterly report is due on Friday."]));
    const update = await memory.addSession(scope, daySession("new", 40, ["Ana lives in Porto now, near the sea."]));
    assert.deepEqual(update.maintenance.actions, ["index.update"]);
    const entries = await memory.listEntries(scope);
    const latest = entries.find((entry) => entry.sessions.includes("new"));
    const earlier = entries.find((entry) => entry.sessions.includes("old"));
    assert.equal(latest?.latest, true);
    assert.equal(earlier?.status, "superseded");
    assert.equal(latest?.predecessor, earlier?.id);

    const pack = await memory.search(scope, "where does Ana live", { mode: "route" });
    const order = pack.items.map((item) => item.provenance.sessionKey);
    assert.ok(order.includes("old"), "the earlier state stays reachable through the version chain");
    assert.ok(order.indexOf("new") < order.indexOf("old"), `latest first, got ${order.join()}`);
    const earlierItem = pack.items.find((item) => item.provenance.sessionKey === "old");
    assert.equal(earlierItem?.route?.via, "earlier-state");
    const audit = await memory.listAudit(scope, { limit: 100_000 });
    const event = audit.find((item) => item.action === "index.update");
    assert.equal(event?.details.relation, "update");
    assert.equal(event?.details.confidence, 0.9);
  });

  it("adds the neighbour window around what a chosen entry points at, across segment boundaries", async (t) => {
    const memory = await open(t, { maintenance: { segmentMaxNodes: 3 } });
    const texts = topics.flat().slice(0, 9);
    await memory.addSession(scope, daySession("long", 0, texts));
    const segments = await memory.listEntries(scope);
    assert.ok(segments.length >= 3, "nine turns in several segments");
    assert.ok(
      segments.every((entry) => entry.pointers.length <= 3),
      "of at most three raw nodes each",
    );
    const ask = (window: number) =>
      memory.search(scope, texts[2] as string, { mode: "route", routing: { entries: 1, window } });
    const without = await ask(0);
    const withWindow = await ask(1);
    assert.ok(without.items.every((item) => item.route?.via === "entry"));
    const neighbours = withWindow.items.filter((item) => item.route?.via === "neighbour");
    assert.ok(neighbours.length > 0, "the window reaches past the chosen entry's own raw nodes");
    assert.ok(withWindow.route && without.route && withWindow.route.expanded > without.route.expanded);
    for (const item of neighbours) {
      const turns = withWindow.items
        .filter((other) => other.route?.via === "entry")
        .map((other) => other.provenance.turn);
      assert.ok(
        turns.some((turn) => Math.abs(turn - item.provenance.turn) === 1),
        "a neighbour is one turn away",
      );
    }
  });
});
