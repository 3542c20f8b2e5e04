import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import { chromiumSkip, launchChromium } from "../support/chromium.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { livesInJudge } from "../support/judges.ts";

const skip = chromiumSkip;
const scope = { tenant: "acme", user: "ana" };
/** Stored text and captions that would run if the page ever turned data into markup. */
const scriptText = `<script>document.title='pwned-text'</script><img src=x onerror="document.title='pwned-img'">`;
const scriptCaption = `<img src=x onerror="window.pwned=true;document.title='pwned-caption'"> the sea`;

describe("dashboard in Chromium: what Cairn knows, and forgetting", { skip }, () => {
  let memory: Memory;
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const cleanups: (() => void)[] = [];

  before(async () => {
    const dir = tempDir({ after: (fn) => cleanups.push(fn) }, "cairn-knowledge-");
    memory = await Memory.open({ path: join(dir, "store"), models: createHashModels(), judge: livesInJudge });
    const png = (await drawPng({ shape: "square", color: "#0af", background: "#fff", size: 120 })).toString("base64");
    const turn = (text: string, images?: unknown[]) => [{ speaker: "Ana", text, ...(images ? { images } : {}) }];
    await memory.addSession(scope, {
      session: "lisbon",
      time: "2024-01-01T10:00:00Z",
      turns: turn("Ana lives in Lisbon near the river."),
    });
    await memory.addSession(scope, {
      session: "report",
      time: "2024-01-05T10:00:00Z",
      turns: turn(`The quarterly report is due on Friday. ${scriptText}`),
    });
    await memory.addSession(scope, {
      session: "porto",
      time: "2024-02-10T10:00:00Z",
      turns: turn("Ana lives in Porto now, near the sea.", [{ data: png, caption: scriptCaption }]),
    });
    const keys = await openKeyStore(join(dir, "store"));
    const apiKey = (await keys.create(scope)).key;
    server = await startServer({ memory, keys, host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: "en-US" });
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.addInitScript((key) => {
      localStorage.setItem("cairn.dashboard.connection", JSON.stringify({ apiKey: key, user: "", tenant: "" }));
    }, apiKey);
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    for (const cleanup of cleanups) cleanup();
  });

  it("shows the latest memory in the words said, with its image and the version it replaced", async () => {
    const porto = page.locator("#knowledge .memory", { hasText: "Porto" });
    await porto.waitFor();
    assert.match((await page.textContent("#knowledge-status")) ?? "", /2 things remembered/);
    assert.match(
      (await porto.locator(".said").first().textContent()) ?? "",
      /Ana: Ana lives in Porto now, near the sea\./,
    );
    await porto.locator(".replaced summary").click();
    assert.match((await porto.locator(".replaced").textContent()) ?? "", /Ana lives in Lisbon near the river\./);
    assert.equal(
      await porto.locator(".replaced summary .term").getAttribute("title"),
      "superseded entries: earlier states in this memory's version chain",
    );
    const thumbnail = porto.locator("img.thumb-img");
    await thumbnail.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => {
      const image = document.querySelector<HTMLImageElement>("#knowledge img.thumb-img");
      return Boolean(image?.complete && image.naturalWidth > 0);
    });
    assert.equal(await porto.locator("a[href^='#session=']").textContent(), "porto");
  });

  it("never runs stored text or captions as markup", async () => {
    const report = page.locator("#knowledge .memory", { hasText: "quarterly report" });
    assert.match((await report.textContent()) ?? "", /<script>document\.title='pwned-text'<\/script>/);
    assert.match((await page.locator("#knowledge figcaption").first().textContent()) ?? "", /<img src=x onerror=/);
    assert.equal(await page.locator("#knowledge script, #knowledge img[src='x']").count(), 0);
    assert.equal(await page.evaluate(() => (window as { pwned?: boolean }).pwned), undefined);
    assert.ok(!(await page.title()).startsWith("pwned"), await page.title());
  });

  it("speaks plainly, with the internal term in a tooltip", async () => {
    assert.equal(await page.locator("#timeline-heading .term").getAttribute("title"), "sessions, by time");
    assert.equal(await page.textContent("#timeline-heading"), "Conversations");
    assert.equal(
      await page.locator("#entries-heading .term").getAttribute("title"),
      "entries of the active index (C3M)",
    );
    assert.equal(await page.locator("label[for=budget-raw-nodes] .term").textContent(), "Turns");
  });

  it("forgets a conversation only after confirmation, and the memory is gone everywhere", async () => {
    const porto = page.locator("#knowledge .memory", { hasText: "Porto" });
    await porto.locator("button", { hasText: "Forget…" }).click();
    await page.waitForSelector("#confirm-dialog[open]");
    assert.match((await page.textContent("#confirm-message")) ?? "", /Forget the conversation “porto”\?/);
    await page.click("#confirm-no");
    assert.equal(await page.locator("#confirm-dialog[open]").count(), 0);
    assert.equal((await memory.listSessions(scope)).length, 3, "cancel forgets nothing");

    await porto.locator("button", { hasText: "Forget…" }).click();
    await page.waitForSelector("#confirm-dialog[open]");
    await page.keyboard.press("Escape");
    assert.equal((await memory.listSessions(scope)).length, 3, "Escape forgets nothing");

    await porto.locator("button", { hasText: "Forget…" }).click();
    await page.click("#confirm-yes");
    await page.waitForSelector("#knowledge-status[data-kind=ok]");
    assert.match((await page.textContent("#knowledge-status")) ?? "", /Forgot “porto”: 1 turn, 1 image/);
    assert.deepEqual((await memory.listSessions(scope)).map((session) => session.key).sort(), ["lisbon", "report"]);
    assert.equal(await page.locator("#knowledge .memory", { hasText: "Porto" }).count(), 0);
    await page.waitForFunction(() => document.querySelector("[data-stat=sessions]")?.textContent === "2");
    const audit = await memory.listAudit(scope);
    assert.ok(
      audit.some((event) => event.action === "forget"),
      "the forget is audited",
    );
    await page.waitForSelector('#audit tr[data-action="forget"]');
  });

  it("forgets one turn from the conversation view after confirmation", async () => {
    await page.click("#timeline .timeline-session:has-text('report')");
    await page.waitForSelector("#session-body .raw-node");
    await page.click("#session-body .forget-turn");
    await page.waitForSelector("#confirm-dialog[open]");
    assert.match((await page.textContent("#confirm-message")) ?? "", /Forget turn 0\?/);
    await page.click("#confirm-yes");
    await page.waitForSelector("#timeline-status[data-kind=ok]");
    assert.match((await page.textContent("#timeline-status")) ?? "", /Forgot turn 0: 1 turn, 0 images/);
    const report = (await memory.listSessions(scope)).find((session) => session.key === "report");
    assert.ok(report);
    assert.deepEqual(await memory.listRawNodes(scope, report.id), [], "the turn is gone from the store");
    await page.waitForFunction(() => document.querySelectorAll("#session-body .raw-node").length === 0);
    assert.equal(await page.locator("#knowledge .memory", { hasText: "quarterly report" }).count(), 0);
    assert.deepEqual(problems, [], "no console errors or uncaught exceptions");
  });
});
