import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { openKeyStore } from "../../src/auth/key-store.ts";
import { manageContext } from "../../src/context/manage-context.ts";
import { Memory } from "../../src/memory.ts";
import { createHashModels } from "../../src/models/hash-provider.ts";
import { type RunningServer, startServer } from "../../src/surfaces/http/server.ts";
import { chromiumSkip, launchChromium } from "../support/chromium.ts";
import { drawPng, tempDir } from "../support/fixtures.ts";

const skip = chromiumSkip;
const scope = { tenant: "acme", user: "ana" };

/** An agent's history: a photo early on, then long tool results, so that the older part is managed. */
function trajectory(photo: string): Record<string, unknown>[] {
  return [
    { role: "system", content: "You are a travel agent." },
    {
      role: "user",
      content: [
        { type: "text", text: "Here is the kayak I want to rent again." },
        { type: "image_url", image_url: { url: `data:image/png;base64,${photo}` } },
      ],
    },
    ...Array.from({ length: 12 }, (_, n) => [
      {
        role: "assistant",
        content: `Checking rental shop ${n}.`,
        tool_calls: [{ id: `c${n}`, type: "function", function: { name: "visit", arguments: `{"shop":${n}}` } }],
      },
      { role: "tool", tool_call_id: `c${n}`, content: `Shop ${n} rents ${"kayaks canoes paddles vests ".repeat(40)}` },
    ]).flat(),
    { role: "user", content: "Which shop had the red kayak?" },
  ];
}

describe("dashboard in Chromium: working context preview", { skip }, () => {
  let memory: Memory;
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let photo: Buffer;
  const problems: string[] = [];
  const cleanups: (() => void)[] = [];

  before(async () => {
    const dir = tempDir({ after: (fn) => cleanups.push(fn) }, "cairn-context-");
    memory = await Memory.open({ path: join(dir, "store"), models: createHashModels() });
    photo = await drawPng({ shape: "square", color: "#e33", background: "#fd0", size: 200 });
    await memory.addSession(scope, {
      session: "lake-trip",
      time: "2024-06-01T09:00:00Z",
      turns: [
        {
          speaker: "Ana",
          text: "The red kayak at Lake Bled, shop number 7.",
          images: [{ data: photo.toString("base64") }],
        },
        { speaker: "Guide", text: "Shop 7 opens at nine and closes at six." },
        ...Array.from({ length: 6 }, (_, n) => ({ speaker: n % 2 ? "Guide" : "Ana", text: `Small talk ${n}.` })),
      ],
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

  async function preview(): Promise<void> {
    await page.evaluate(() => {
      document.getElementById("context-result")?.replaceChildren();
      const status = document.getElementById("context-status");
      if (status) status.dataset.kind = "";
    });
    await page.click("#context-form button[type=submit]");
    await page.waitForSelector("#context-status[data-kind=ok], #context-status[data-kind=error]");
  }

  /** Waits until every image of the preview has loaded; returns their kinds and natural sizes. */
  async function images(): Promise<{ kind: string; width: number; height: number }[]> {
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLImageElement>("#context-result img")].every(
        (image) => image.complete && image.naturalWidth > 0,
      ),
    );
    return page.$$eval("#context-result img", (list) =>
      list.map((image) => ({
        kind: (image as HTMLImageElement).dataset.kind ?? "",
        width: (image as HTMLImageElement).naturalWidth,
        height: (image as HTMLImageElement).naturalHeight,
      })),
    );
  }

  it("previews VERA on a pasted trajectory: the rendered pages the model gets, and the photo kept native", async () => {
    const messages = trajectory(photo.toString("base64"));
    await page.fill("#context-trajectory", JSON.stringify(messages));
    await page.selectOption("#context-manager", "vera");
    await page.click("#context-form summary");
    await page.fill("#context-keep-recent", "3");
    await preview();
    assert.equal(
      await page.getAttribute("#context-status", "data-kind"),
      "ok",
      (await page.textContent("#context-status")) ?? "",
    );
    const shown = await images();
    const pages = shown.filter((image) => image.kind === "page");
    assert.ok(pages.length >= 1, "at least one rendered page");
    for (const drawn of pages) assert.deepEqual([drawn.width, drawn.height], [768, 1536], "pages at 0.75×");
    assert.deepEqual(
      shown.filter((image) => image.kind === "native").map((image) => [image.width, image.height]),
      [[200, 200]],
      "the photo is kept as the photo",
    );
    // What the page shows is what the SDK returns for the same trajectory: same messages, same PNG bytes.
    const expected = await manageContext(messages, { manager: "vera", budget: { keepRecent: 3 }, force: true });
    assert.equal(await page.locator("#context-result .context-message").count(), expected.messages.length);
    const expectedPage = expected.messages
      .flatMap((message) => (typeof message.content === "string" ? [] : message.content))
      .find((part) => part.type === "image_url" && part.image_url.url.length > 20_000);
    assert.ok(expectedPage?.type === "image_url");
    // The page's CSP lets it show blob: images but not fetch them back: compare decoded pixels instead.
    const shownPixels = await page.$eval("#context-result img[data-kind=page]", (image) => {
      const element = image as HTMLImageElement;
      const canvas = document.createElement("canvas");
      canvas.width = element.naturalWidth;
      canvas.height = element.naturalHeight;
      const context = canvas.getContext("2d");
      context?.drawImage(element, 0, 0);
      const data = context?.getImageData(0, 0, canvas.width, canvas.height).data ?? new Uint8ClampedArray();
      let sum = 0;
      let dark = 0;
      for (let i = 0; i < data.length; i += 4) {
        sum += (data[i] ?? 0) + (data[i + 1] ?? 0) + (data[i + 2] ?? 0);
        if ((data[i] ?? 0) < 128) dark++;
      }
      return { sum, dark };
    });
    const expectedRaw = await sharp(Buffer.from(expectedPage.image_url.url.split(",")[1] ?? "", "base64"))
      .removeAlpha()
      .raw()
      .toBuffer();
    let sum = 0;
    let dark = 0;
    for (let i = 0; i < expectedRaw.length; i += 3) {
      sum += (expectedRaw[i] ?? 0) + (expectedRaw[i + 1] ?? 0) + (expectedRaw[i + 2] ?? 0);
      if ((expectedRaw[i] ?? 0) < 128) dark++;
    }
    assert.deepEqual(shownPixels, { sum, dark }, "the page shown is the page the SDK renders");
    assert.match(
      (await page.textContent("[data-field=tokens]")) ?? "",
      new RegExp(
        `^${expected.cost.total.toLocaleString("en-US")} of ${expected.rawCost.total.toLocaleString("en-US")}`,
      ),
    );
    assert.match((await page.textContent("#context-result")) ?? "", /rendered as/);
  });

  it("shows Visual Rendering with no native image: the photo became its mention on a page", async () => {
    await page.selectOption("#context-manager", "visual-rendering");
    await preview();
    const shown = await images();
    assert.ok(shown.some((image) => image.kind === "page"));
    assert.equal(shown.filter((image) => image.kind !== "page").length, 0);
  });

  it("loads a JSON Lines file into the form and previews it", async () => {
    const lines = trajectory(photo.toString("base64"))
      .map((message) => JSON.stringify(message))
      .join("\n");
    await page.fill("#context-trajectory", "");
    await page.setInputFiles("#context-file", {
      name: "trajectory.jsonl",
      mimeType: "application/json",
      buffer: Buffer.from(lines),
    });
    await page.waitForFunction(
      () => (document.querySelector<HTMLTextAreaElement>("#context-trajectory")?.value ?? "") !== "",
    );
    await page.selectOption("#context-manager", "summarisation");
    await preview();
    assert.equal(await page.getAttribute("#context-status", "data-kind"), "ok");
    assert.equal(await page.locator("#context-result .context-message[data-form=summary]").count(), 1);
  });

  it("previews a stored conversation, its photo from memory kept native, and writes nothing", async () => {
    const before = await memory.stats(scope);
    await page.selectOption("#context-session", { label: "lake-trip (8 turns)" });
    await page.selectOption("#context-manager", "vera");
    await page.fill("#context-keep-recent", "2");
    await preview();
    assert.equal(
      await page.getAttribute("#context-status", "data-kind"),
      "ok",
      (await page.textContent("#context-status")) ?? "",
    );
    const shown = await images();
    assert.deepEqual(
      shown.filter((image) => image.kind === "native").map((image) => [image.width, image.height]),
      [[200, 200]],
    );
    assert.ok(shown.some((image) => image.kind === "page"));
    // The newest turns stay as they were; the older ones are on the page (a short chat: not cheaper, and it says so).
    assert.match((await page.textContent("#context-result")) ?? "", /Small talk 5\./);
    assert.deepEqual(await memory.stats(scope), before, "a preview evicts nothing into memory");
    await page.selectOption("#context-session", "");
  });

  it("says what is wrong with a bad trajectory and shows no result", async () => {
    await page.fill("#context-trajectory", "{not json\nstill not");
    await preview();
    assert.equal(await page.getAttribute("#context-status", "data-kind"), "error");
    assert.match((await page.textContent("#context-status")) ?? "", /Line 1 is not JSON/);
    await page.fill("#context-trajectory", JSON.stringify([{ role: "tool", content: "orphan result" }]));
    await preview();
    assert.equal(await page.getAttribute("#context-status", "data-kind"), "error");
    assert.match((await page.textContent("#context-status")) ?? "", /toolCallId/);
    assert.equal(await page.locator("#context-result .context-message").count(), 0);
    // The refused requests log a 400 each; nothing else may have gone wrong.
    assert.deepEqual(
      problems.filter((problem) => !/status of 400/.test(problem)),
      [],
    );
  });
});
