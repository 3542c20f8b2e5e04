import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Browser, chromium, type Page } from "playwright-core";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";
import { startInterimServer } from "./support/interim-server.ts";

const chromiumPath = process.env.CAIRN_CHROMIUM ?? "/usr/bin/chromium";
const skip = existsSync(chromiumPath)
  ? false
  : `Chromium not found at ${chromiumPath} (install Debian's chromium, or set CAIRN_CHROMIUM)`;
const artifacts = new URL("../../test-artifacts/", import.meta.url);
const scope = { tenant: "default", user: "default" };

describe("dashboard in Chromium", { skip }, () => {
  let memory: Memory;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const cleanups: (() => void)[] = [];

  before(async () => {
    const dir = tempDir({ after: (fn) => cleanups.push(fn) }, "cairn-dashboard-");
    memory = await Memory.open({ path: join(dir, "store"), models: createHashModels() });
    // Stored text that would run as markup if the page ever used innerHTML.
    await memory.addSession(scope, {
      session: "hostile",
      time: "2024-04-02T09:00:00Z",
      turns: [{ speaker: "<b>Mallory</b>", text: `<img src="x" onerror="document.title='pwned'"> hello` }],
    });
    server = await startInterimServer(memory);
    browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"], headless: true });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await memory?.close();
    for (const cleanup of cleanups) cleanup();
  });

  it("loads with the stats header, the timeline and stored text shown as text", async () => {
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.textContent("[data-stat=sessions]"), "1");
    assert.match((await page.textContent("#timeline")) ?? "", /hostile/);
    await page.click("#timeline .timeline-session");
    await page.waitForSelector("#session-body .raw-node");
    const text = await page.textContent("#session-body .raw-node");
    assert.match(text ?? "", /<img src="x" onerror=/);
    assert.match(text ?? "", /<b>Mallory<\/b>/);
    assert.equal(await page.locator("#session-body img[src='x']").count(), 0);
    assert.notEqual(await page.title(), "pwned");
  });

  it("adds a session with an image through the form and shows it on the timeline", async () => {
    const png = await drawPng({ shape: "square", color: "#e33", background: "#fd0", size: 160 });
    await page.fill("#add-speaker", "Ana");
    await page.fill("#add-text", "Our new red kayak waiting at the lake shore.");
    await page.setInputFiles("#add-image", { name: "kayak.png", mimeType: "image/png", buffer: png });
    await page.fill("#add-caption", "red kayak on a yellow dock");
    await page.click("#add-form button[type=submit]");
    await page.waitForSelector("#add-status[data-kind=ok] a");
    assert.match((await page.textContent("#add-status")) ?? "", /Added session/);
    await page.waitForFunction(() => document.querySelector("[data-stat=sessions]")?.textContent === "2");
    await page.waitForSelector("#session-heading:has-text('dashboard-')");
    const thumbnail = page.locator("#session-body .raw-node img.thumb-img").first();
    await thumbnail.waitFor();
    assert.ok(await naturalWidth(page, "#session-body .raw-node img.thumb-img"), "the thumbnail loaded");
    assert.match((await page.textContent("#session-body")) ?? "", /Ana/);
  });

  it("finds the new session by text and shows its image, channels, budget and route", async () => {
    await page.fill("#search-text", "red kayak");
    await page.click("#search-form button[type=submit]");
    await page.waitForSelector("#search-results .evidence-item");
    const first = page.locator("#search-results .evidence-item").first();
    assert.match((await first.textContent()) ?? "", /red kayak waiting/);
    const width = await naturalWidth(page, "#search-results .evidence-item img.thumb-img");
    assert.ok(width > 0, "the evidence image loaded");
    assert.ok((await first.locator(".channel-table tbody tr").count()) > 0, "channel ranks are shown");
    assert.equal(await page.locator("#search-results .budget-table tbody tr").count(), 3);
    const imagesUsed = await page.textContent(".budget-table tr[data-dimension=images] td");
    assert.equal(imagesUsed, "1");
    const pack = await memory.search(scope, "red kayak");
    const route = (pack as { route?: unknown }).route;
    if (route !== undefined && route !== null) {
      assert.ok(await page.locator("#search-results .route").isVisible(), "the route trace is shown");
    }

    // The thumbnail opens the original at full size.
    await first.locator(".thumb-button").first().click();
    await page.waitForFunction(() => {
      const image = document.querySelector<HTMLImageElement>("#image-dialog img.original");
      return Boolean(image?.complete && image.naturalWidth > 0);
    });
    assert.equal(await naturalWidth(page, "#image-dialog img.original"), 160);
    await page.keyboard.press("Escape");
    assert.equal(await page.locator("#image-dialog[open]").count(), 0);
  });

  it("lists the add in the audit log and links entries back to their raw nodes", async () => {
    const sessions = await memory.listSessions(scope);
    const added = sessions.find((session) => session.key.startsWith("dashboard-"));
    assert.ok(added);
    const row = page.locator(`#audit tr[data-action="session.add"]:has(a[href="#session=${added.id}"])`);
    await row.waitFor();
    assert.equal(await row.count(), 1);

    const [node] = await memory.listRawNodes(scope, added.id);
    assert.ok(node);
    await page.click(`#entries a[href="#raw-node=${node.id}"]`);
    await page.waitForSelector(`#node-${node.id}.highlighted`);
    assert.equal(await page.evaluate(() => document.activeElement?.id), `node-${node.id}`);

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: new URL("dashboard.png", artifacts).pathname, fullPage: true });
    assert.deepEqual(problems, [], "no console errors or uncaught exceptions");
  });
});

/** Waits for an image to finish loading and gives its natural width (0 when it failed). */
async function naturalWidth(page: Page, selector: string): Promise<number> {
  await page.waitForFunction((css) => {
    const image = document.querySelector<HTMLImageElement>(css);
    return Boolean(image?.src && image.complete);
  }, selector);
  return page.evaluate((css) => document.querySelector<HTMLImageElement>(css)?.naturalWidth ?? 0, selector);
}
