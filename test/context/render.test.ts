import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import sharp from "sharp";
import { defaultRenderSettings, historyBlocks, layOutPages, wrapText } from "../../src/context/render/page-layout.ts";
import { Renderer } from "../../src/context/render/renderer.ts";
import type { TrajectoryMessage } from "../../src/context/trajectory.ts";
import { contentWords } from "../../src/core/text.ts";
import { createLocalOcrReader } from "../../src/models/local-provider.ts";

const message = (id: string, text: string, fields: Partial<TrajectoryMessage> = {}): TrajectoryMessage => ({
  id,
  role: "user",
  text,
  images: [],
  artifacts: [],
  toolCalls: [],
  ...fields,
});

const prose =
  "On Saturday Maria and I went to the pottery workshop near Linden Station and glazed a blue bowl. " +
  "The instructor, Mr Okafor, said the glaze was uneven, but the kiln firing on 14 June fixed most of it. ";

describe("page layout", () => {
  it("wraps at word boundaries, cuts only words longer than a line, and keeps table rows", () => {
    assert.deepEqual(wrapText("alpha beta gamma", 10), ["alpha beta", "gamma"]);
    assert.deepEqual(wrapText("abcdefghijklmnop", 6), ["abcdef", "ghijkl", "mnop"]);
    assert.deepEqual(wrapText("| a | b |\n| 1 | 2 |", 40), ["| a | b |", "| 1 | 2 |"]);
    assert.deepEqual(wrapText("  indented words here", 12), ["  indented", "  words here"]);
  });

  it("paginates chronologically with a numbered header on every page and each message's label kept", () => {
    const messages = Array.from({ length: 30 }, (_, index) =>
      message(`m${index}`, prose.repeat(3), {
        role: index % 2 ? "assistant" : "user",
        name: index % 2 ? undefined : "Ana",
      }),
    );
    const pages = layOutPages(historyBlocks(messages, { visuals: "as-text" }), defaultRenderSettings);
    assert.ok(pages.length > 2);
    for (const [index, page] of pages.entries()) {
      assert.equal(page.lines[0]?.text, `— history page ${index + 1} of ${pages.length} —`);
    }
    const labels = pages.flatMap((page) =>
      page.lines.filter((line) => (line.labelChars ?? 0) > 0).map((line) => line.text.slice(0, line.labelChars)),
    );
    assert.equal(labels.length, 30);
    assert.equal(labels[0], "[user · Ana]");
    assert.equal(labels[1], "[assistant]");
    assert.deepEqual(pages[0]?.messageIds.slice(0, 2), ["m0", "m1"]);
  });

  it("fills pages from the newest line back, so kept newest pages are full, and keeps every line's time readable", () => {
    const messages = Array.from({ length: 40 }, (_, index) =>
      message(`m${index}`, prose.repeat(2), {
        name: "Ana",
        time: index < 20 ? "2024-05-01T10:00:00Z" : "2024-05-02T18:30:00Z",
      }),
    );
    const pages = layOutPages(historyBlocks(messages, { visuals: "as-text" }), defaultRenderSettings);
    assert.ok(pages.length >= 3);
    const full = pages[pages.length - 1]?.lines.length ?? 0;
    for (const page of pages.slice(1)) assert.equal(page.lines.length, full, "every page but the oldest is full");
    assert.ok((pages[0]?.lines.length ?? 0) <= full);
    const labels = pages.flatMap((page) =>
      page.lines.filter((line) => (line.labelChars ?? 0) > 0).map((line) => line.text.slice(0, line.labelChars)),
    );
    // The time is written when it changes, not on every turn of a conversation.
    assert.deepEqual(
      labels.filter((label) => label.includes("UTC")),
      ["[user · Ana · 2024-05-01 10:00 UTC]", "[user · Ana · 2024-05-02 18:30 UTC]"],
    );
    // Every page header names the time of its first message.
    for (const page of pages) assert.match(page.lines[0]?.text ?? "", / · 2024-05-0[12] \d\d:\d\d UTC —$/);
    assert.match(pages[pages.length - 1]?.lines[0]?.text ?? "", /2024-05-02 18:30 UTC/);
  });
});

describe("renderer", () => {
  const ocr = createLocalOcrReader();
  after(() => ocr.close());

  it("is deterministic: the same history and settings give the same PNG bytes", async () => {
    const messages = [
      message("m0", prose),
      message("m1", "Ünïcödé — ✓ <tags> & ampersands", { role: "tool", toolCallId: "c1" }),
    ];
    const [page] = layOutPages(historyBlocks(messages, { visuals: "as-text" }));
    assert.ok(page);
    const first = await new Renderer().page(page, defaultRenderSettings);
    const second = await new Renderer().page(page, defaultRenderSettings);
    assert.deepEqual(Buffer.from(first.png), Buffer.from(second.png));
    assert.equal(first.width, 768);
    assert.equal(first.height, 1536);
    const full = await new Renderer().page(page, { ...defaultRenderSettings, scale: 1 });
    assert.deepEqual([full.width, full.height], [1024, 2048]);
    assert.notDeepEqual(Buffer.from(full.png), Buffer.from(first.png));
  });

  it("draws tables and charts as images sized to their content", async () => {
    const renderer = new Renderer();
    const table = await renderer.artifact(
      {
        kind: "table",
        id: "t",
        title: "Revenue",
        columns: ["month", "revenue"],
        rows: [
          ["Jan", 12400],
          ["Feb", 9875],
        ],
      },
      defaultRenderSettings,
    );
    const chart = await renderer.artifact(
      {
        kind: "chart",
        id: "c",
        chart: "line",
        title: "Units",
        labels: ["Q1", "Q2", "Q3"],
        series: [{ name: "units", values: [3, 9, 4] }],
      },
      defaultRenderSettings,
    );
    const tableMeta = await sharp(table.png).metadata();
    assert.equal(tableMeta.format, "png");
    assert.ok(table.width < 400 && table.height < 200, `${table.width}×${table.height}`);
    assert.deepEqual([chart.width, chart.height], [675, 420]);
    const tableText = await ocr.reader.readImage(table.png);
    for (const word of ["Revenue", "month", "12400", "9875"])
      assert.ok(tableText.includes(word), `${word} in ${tableText}`);
    const chartText = await ocr.reader.readImage(chart.png);
    for (const word of ["Units", "Q3", "6.75"]) assert.ok(chartText.includes(word), `${word} in ${chartText}`);
  });

  it("renders text that OCR reads back at the default 0.75× scale (word recall ≥ 0.95)", async () => {
    const messages = [
      message("m0", prose.repeat(4), { name: "Ana", time: "2023-06-14T10:00:00Z" }),
      message("m1", prose, { role: "assistant" }),
    ];
    const [page] = layOutPages(historyBlocks(messages, { visuals: "as-text" }));
    assert.ok(page);
    const drawn = await new Renderer().page(page, defaultRenderSettings);
    const read = new Set(contentWords(await ocr.reader.readImage(drawn.png)));
    const want = contentWords(messages.map((entry) => entry.text).join(" "));
    const recall = want.filter((word) => read.has(word)).length / want.length;
    assert.ok(recall >= 0.95, `recall ${recall}`);
  });
});
