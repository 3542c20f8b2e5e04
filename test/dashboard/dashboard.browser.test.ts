import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import { chromiumSkip, launchChromium } from "../support/chromium.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

const skip = chromiumSkip;
const artifacts = new URL("../../test-artifacts/", import.meta.url);
const scope = { tenant: "acme", user: "ana" };

describe("dashboard in Chromium", { skip }, () => {
  let memory: Memory;
  let server: RunningServer;
  let apiKey: string;
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
    const keys = await openKeyStore(join(dir, "store"));
    apiKey = (await keys.create({ tenant: scope.tenant, user: scope.user })).key;
    server = await startServer({ memory, keys, host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: "en-US" });
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  });

  after(async () => {
    await browser?.close();
    // The server owns the memory and the key store and closes them.
    await server?.close();
    for (const cleanup of cleanups) cleanup();
  });

  it("asks for an API key, and loads with it: stats header, timeline, stored text shown as text", async () => {
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    await page.waitForSelector("#global-status[data-kind=error]");
    assert.match((await page.textContent("#global-status")) ?? "", /API key/);
    assert.equal(await page.locator("#connection[open]").count(), 1, "the connection settings open by themselves");
    // The browser logs each refused request; only what follows the key must be clean.
    problems.length = 0;
    await page.fill("#api-key", apiKey);
    await page.click("#connection-form button[type=submit]");
    await page.waitForFunction(
      () =>
        document.querySelector("[data-stat=sessions]")?.textContent === "1" &&
        document.querySelector("#timeline")?.textContent?.includes("hostile"),
    );
    assert.equal(
      await page.evaluate(() => JSON.parse(localStorage.getItem("cairn.dashboard.connection") ?? "{}").apiKey),
      apiKey,
    );
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
    await page.press("#search-text", "Enter");
    await page.waitForSelector("#search-results .evidence-item");
    const first = page.locator("#search-results .evidence-item").first();
    assert.match((await first.textContent()) ?? "", /red kayak waiting/);
    const width = await naturalWidth(page, "#search-results .evidence-item img.thumb-img");
    assert.ok(width > 0, "the evidence image loaded");
    assert.ok((await first.locator(".channel-table tbody tr").count()) > 0, "channel ranks are shown");
    const pack = await memory.search(scope, "red kayak");
    const dimensions = Object.keys(pack.budget.limits);
    assert.ok(dimensions.length >= 3);
    assert.equal(await page.locator("#search-results .budget-table tbody tr").count(), dimensions.length);
    for (const dimension of dimensions) {
      const row = page.locator(`.budget-table tr[data-dimension=${dimension}] td`);
      assert.equal(await row.nth(0).textContent(), String(pack.budget.used[dimension as "images"]), dimension);
      assert.equal(await row.nth(1).textContent(), pack.budget.limits[dimension as "images"].toLocaleString("en-US"));
    }
    assert.equal(await page.textContent(".budget-table tr[data-dimension=images] td"), "1");
    if (pack.route) {
      assert.ok(await page.locator("#search-results .route").isVisible(), "the route trace is shown");
      for (const entry of pack.route.entries) {
        assert.equal(await page.locator(`#search-results .route a[href="#entry=${entry.id}"]`).count(), 1, entry.id);
      }
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

  it("searches by an uploaded image alone", async () => {
    const png = await drawPng({ shape: "square", color: "#e33", background: "#fd0", size: 160 });
    await page.fill("#search-text", "");
    await page.setInputFiles("#search-image", { name: "query.png", mimeType: "image/png", buffer: png });
    await page.click("#search-form button[type=submit]");
    await page.waitForSelector("#search-results .pack-summary img.query-image");
    assert.ok((await naturalWidth(page, "#search-results img.query-image")) > 0, "the query image is shown");
    const first = page.locator("#search-results .evidence-item").first();
    assert.match((await first.textContent()) ?? "", /red kayak waiting/);
    assert.ok((await first.locator(".channel-table th", { hasText: "image pixels" }).count()) === 1);
    await page.setInputFiles("#search-image", []);

    await first.locator(".thumb-button").first().click();
    await page.waitForSelector("#image-dialog[open] img.original");
    await page.click("#image-dialog button:has-text('Close')");
    assert.equal(await page.locator("#image-dialog[open]").count(), 0, "the Close button closes the dialog");
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

  it("shows fields the API gains later: a route trace and entry pages, versions and relations", async () => {
    const [first, second] = (await memory.listEntries(scope)).map((entry) => entry.id);
    const [session] = await memory.listSessions(scope);
    assert.ok(first && second && session);
    const [node] = await memory.listRawNodes(scope, session.id);
    assert.ok(node);
    await page.route("**/v1/entries*", async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { entries: Record<string, unknown>[] };
      for (const entry of body.entries) {
        if (entry.id !== first) continue;
        Object.assign(entry, {
          page: "Boats",
          latest: true,
          previousVersion: second,
          relations: [{ kind: "update", entry: second }],
        });
      }
      await route.fulfill({ response, json: body });
    });
    await page.route("**/v1/search", async (route) => {
      const response = await route.fetch();
      const pack = (await response.json()) as Record<string, unknown>;
      pack.route = {
        pagesScored: [
          { page: "Boats", score: 0.91 },
          { page: "Food", score: 0.12 },
        ],
        entriesChosen: [first],
        rawNodesExpanded: [node.id],
      };
      await route.fulfill({ response, json: pack });
    });
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    const entry = page.locator(`#entry-${first}`);
    assert.match((await entry.textContent()) ?? "", /Boats/);
    assert.ok((await entry.locator(".badge-on", { hasText: /^latest$/ }).count()) >= 1, "the latest flag shows");
    await entry.locator(`a[href="#entry=${second}"]`).first().click();
    await page.waitForSelector(`#entry-${second}.highlighted`);

    await page.fill("#search-text", "kayak");
    await page.press("#search-text", "Enter");
    const route = page.locator("#search-results .route");
    await route.waitFor();
    assert.match((await route.textContent()) ?? "", /pages scored.*Boats.*0\.91/s);
    assert.equal(await route.locator(`a[href="#raw-node=${node.id}"]`).count(), 1);
    await page.unrouteAll();
    assert.deepEqual(problems, [], "no console errors or uncaught exceptions");
  });
});

/** A --no-auth server over a memory holding one session in `scope`, and a page of the dashboard loaded from it. */
async function openWithoutAuth(
  t: { after: (fn: () => unknown) => void },
  scope: { tenant: string; user: string },
  session: string,
  text: string,
) {
  const dir = tempDir(t, "cairn-dashboard-open-");
  const memory = await Memory.open({ path: join(dir, "store"), models: createHashModels() });
  await memory.addSession(scope, {
    session,
    time: "2024-01-01T00:00:00Z",
    turns: [{ speaker: "Ana", text }],
  });
  const server = await startServer({ memory, keys: null, host: "127.0.0.1", port: 0 });
  t.after(() => server.close());
  const browser = await launchChromium();
  t.after(() => browser.close());
  const page = await browser.newPage({ locale: "en-US" });
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  return page;
}

describe("dashboard without auth", { skip }, () => {
  it("works with empty connection fields when the server runs --no-auth", async (t) => {
    const page = await openWithoutAuth(t, { tenant: "default", user: "default" }, "open", "no keys here");
    assert.equal(await page.textContent("[data-stat=sessions]"), "1");
    assert.equal(await page.locator("#global-status[data-kind=error]").count(), 0);
    assert.equal(await page.textContent("#global-status"), "");
    assert.match((await page.textContent("#timeline")) ?? "", /open/);
  });

  it("points at the Connection fields when the default scope is empty, and reads the scope set there", async (t) => {
    const page = await openWithoutAuth(t, { tenant: "demo", user: "ana" }, "demo-1", "in the demo scope");
    assert.equal(await page.textContent("[data-stat=sessions]"), "0");
    assert.match((await page.textContent("#global-status")) ?? "", /Set tenant and user under Connection/);
    await page.click("#connection summary");
    await page.fill("#tenant", "demo");
    await page.fill("#user", "ana");
    await page.click("#connection-form button[type=submit]");
    // The panels reload side by side after the submit: wait for the stats and the timeline both, since
    // on a loaded machine either may land first.
    await page.waitForFunction(
      () =>
        document.querySelector("[data-stat=sessions]")?.textContent === "1" &&
        document.querySelector("#timeline")?.textContent?.includes("demo-1"),
    );
    assert.equal(await page.textContent("#global-status"), "");
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
