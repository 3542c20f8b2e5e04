import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import { chromiumSkip, launchChromium } from "../support/chromium.ts";
import { tempDir } from "../support/fixtures.ts";

const skip = chromiumSkip;

describe("dashboard in Chromium: a tenant's users for a tenant-wide key", { skip }, () => {
  let server: RunningServer;
  let browser: Browser;
  const keys: { admin: string; ana: string } = { admin: "", ana: "" };
  const problems: string[] = [];
  const cleanups: (() => void)[] = [];

  before(async () => {
    const dir = tempDir({ after: (fn) => cleanups.push(fn) }, "cairn-users-");
    const memory = await Memory.open({ path: join(dir, "store"), models: createHashModels() });
    const note = (session: string, text: string) => ({ session, time: "2024-03-01T10:00:00Z", turns: [{ text }] });
    await memory.addSession({ tenant: "acme", user: "ana" }, note("a", "Ana keeps bees on the roof."));
    await memory.addSession({ tenant: "acme", user: "bo" }, note("b", "Bo restores old typewriters."));
    await memory.addSession({ tenant: "globex", user: "zed" }, note("z", "Zed is in another tenant."));
    const store = await openKeyStore(join(dir, "store"));
    keys.admin = (await store.create({ tenant: "acme" })).key;
    keys.ana = (await store.create({ tenant: "acme", user: "ana" })).key;
    server = await startServer({ memory, keys: store, host: "127.0.0.1", port: 0 });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    for (const cleanup of cleanups) cleanup();
  });

  async function open(apiKey: string) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: "en-US" });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.addInitScript((key) => {
      localStorage.setItem("cairn.dashboard.connection", JSON.stringify({ apiKey: key, user: "", tenant: "" }));
    }, apiKey);
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    return page;
  }

  it("lists the tenant's users, and one click shows what Cairn knows about each", async () => {
    const page = await open(keys.admin);
    await page.locator("#connection summary").click();
    const buttons = page.locator("#users-list button");
    assert.deepEqual(await buttons.allTextContents(), ["ana", "bo"], "acme's users, not globex's");
    await page.click("#users-list button[data-user=bo]");
    await page.locator("#knowledge .memory", { hasText: "typewriters" }).waitFor();
    assert.equal(await page.locator("#knowledge .memory", { hasText: "bees" }).count(), 0);
    assert.equal(await page.getAttribute("#users-list button[data-user=bo]", "aria-pressed"), "true");
    assert.equal(await page.inputValue("#user"), "bo", "the connection now names the user");
    await page.click("#users-list button[data-user=ana]");
    await page.locator("#knowledge .memory", { hasText: "bees" }).waitFor();
    await page.close();
    assert.deepEqual(problems, []);
  });

  it("shows no list to a key bound to one user", async () => {
    const page = await open(keys.ana);
    await page.locator("#knowledge .memory", { hasText: "bees" }).waitFor();
    assert.equal(await page.locator("#users").isHidden(), true);
    await page.close();
  });
});
