import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import type { Memory } from "../../src/memory.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import { bikeHistory, day, scope } from "../compile/support.ts";
import { chromiumSkip, dashboardPage, launchChromium } from "../support/chromium.ts";

const skip = chromiumSkip;

describe("dashboard question bank in Chromium", { skip }, () => {
  let memory: Memory;
  let server: RunningServer;
  let browser: Browser;
  const cleanups: (() => void)[] = [];

  before(async () => {
    memory = await bikeHistory({ after: (fn) => cleanups.push(fn) });
    await memory.compile(scope);
    // Compiling s3 again retires its programs (audited with their questions) and banks new ones.
    await memory.compile(scope, { session: "s3" });
    // s4 supersedes s3's state: the next consolidation re-verifies the programs resting on it.
    await memory.addSession(scope, {
      session: "s4",
      time: day(20),
      turns: [
        {
          speaker: "Ana",
          text: "Rocket now has a new green saddle instead of the blue saddle and the old handlebar tape.",
        },
      ],
    });
    await memory.compile(scope);
    server = await startServer({ memory, keys: null, host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("lists each program with its question, steps, verification and evidence links, and the retired ones", async () => {
    const bank = await memory.listPrograms(scope);
    const { page, problems } = await dashboardPage(browser, { tenant: "acme", user: "ana" });
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    await page.waitForSelector("#bank:not([hidden]) .bank-program");
    const shown = await page
      .locator("#bank-programs .bank-program")
      .evaluateAll((items) => items.map((item) => (item as HTMLElement).dataset.program));
    assert.deepEqual(
      shown,
      bank.map((program) => program.id),
      "every active program, oldest first",
    );

    const naming = bank.find((program) => program.kind === "later-naming");
    assert.ok(naming);
    const card = page.locator(`#bank-programs .bank-program[data-program="${naming.id}"]`);
    assert.match((await card.locator(".bank-question").textContent()) ?? "", new RegExp(`active.*${naming.kind}`));
    assert.ok(((await card.locator(".bank-question").textContent()) ?? "").includes(naming.question));
    const ops = await card
      .locator(".bank-step")
      .evaluateAll((steps) => steps.map((step) => (step as HTMLElement).dataset.op));
    const steps = naming.program.steps as { op: string }[];
    assert.deepEqual(
      ops,
      steps.map((step) => step.op),
      "the DAG's steps in program order",
    );
    assert.match((await card.locator(".bank-step").last().textContent()) ?? "", /←/, "a step names its inputs");
    assert.match((await card.locator(".bank-verification").textContent()) ?? "", /^Verified by rules in \d attempt/);

    const links = await card
      .locator(".bank-evidence a")
      .evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute("href")));
    assert.deepEqual(
      links,
      naming.evidence.map((id) => `#raw-node=${encodeURIComponent(id)}`),
    );
    // An evidence link opens the raw node in the timeline.
    await card.locator(".bank-evidence a").first().click();
    await page.waitForSelector(`[id="node-${naming.evidence[0]}"].highlighted`);

    const reverified = bank.filter((program) => typeof program.verification.reverifiedMs === "number");
    assert.ok(reverified.length > 0);
    for (const program of reverified) {
      assert.match(
        (await page.locator(`.bank-program[data-program="${program.id}"] .bank-verification`).textContent()) ?? "",
        /re-verified .* after an update superseded its evidence/,
      );
    }

    const retired = await page.locator("#bank-retired .retired-program").allTextContents();
    assert.ok(retired.length > 0, "recompiling s3 retired its earlier programs");
    assert.ok(
      retired.every((text) => /retired/.test(text) && /recompiled/.test(text)),
      retired.join(" | "),
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  it("serves the bank read-only over HTTP without vectors", async () => {
    const response = await fetch(`${server.url}/v1/bank?limit=1`, {
      headers: { "x-cairn-tenant": "acme", "x-cairn-user": "ana" },
    });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.programs.length, 1);
    assert.equal(body.programs[0].status, "active");
    assert.equal("vector" in body.programs[0], false);
    assert.ok(body.retired.length > 0);
    const post = await fetch(`${server.url}/v1/bank`, { method: "POST" });
    assert.equal(post.status, 404, "nothing writes through the bank route");
  });
});
