import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cairnProcess } from "../support/cairn-process.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

describe("cairn context", () => {
  it("writes a VERA working context (messages, rendered pages, report) and keeps dropped messages in the store", async (t) => {
    const dir = tempDir(t);
    writeFile(dir, "shot.png", await drawPng({ size: 512, shape: "circle", label: "kayak" }));
    const filler = (n: number) => `Round ${n}: ${"the harbour log lists boats, tides and weather notes ".repeat(40)}`;
    const lines = [
      JSON.stringify({ role: "system", text: "You are a travel agent." }),
      ...Array.from({ length: 30 }, (_, n) => [
        JSON.stringify({
          role: "assistant",
          text: `Checking page ${n}.`,
          toolCalls: [{ id: `c${n}`, name: "browse", arguments: `{"page":${n}}` }],
        }),
        JSON.stringify({
          role: "tool",
          toolCallId: `c${n}`,
          name: "browse",
          text: filler(n),
          ...(n % 5 === 0 ? { images: [{ path: "shot.png", caption: `kayak photo ${n}` }] } : {}),
        }),
      ]).flat(),
      JSON.stringify({ role: "user", name: "Ana", text: "Which harbour had the kayak?" }),
    ];
    const file = writeFile(dir, "trajectory.jsonl", `${lines.join("\n")}\n`);
    const out = join(dir, "out");
    const db = join(dir, "store");
    const run = await cairnProcess([
      "context",
      file,
      "--out",
      out,
      "--budget",
      "12000",
      "--keep-recent",
      "3",
      "--db",
      db,
      "--tenant",
      "t1",
      "--profile",
      "hash",
      "--json",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout);
    assert.equal(report.manager, "vera");
    assert.equal(report.managed, true);
    assert.ok(report.cost.total <= 12_000 && report.cost.total < report.rawCost.total);
    assert.ok(report.evicted.written > 0, "dropped messages went to the store");
    const messages = JSON.parse(readFileSync(join(out, "messages.json"), "utf8"));
    assert.equal(messages[0].role, "system");
    assert.equal(messages.at(-1).content, "Which harbour had the kayak?");
    assert.ok(existsSync(join(out, "image-01.png")), "rendered pages are written as files");
    const search = await cairnProcess([
      "search",
      "harbour log Round 1",
      "--db",
      db,
      "--tenant",
      "t1",
      "--profile",
      "hash",
      "--json",
    ]);
    assert.equal(search.code, 0, search.stderr);
    assert.ok(JSON.parse(search.stdout).items.length > 0, "evicted messages can be searched");
  });

  it("a bad trajectory line is exit 2 naming the field, and nothing is written", async (t) => {
    const dir = tempDir(t);
    const file = writeFile(
      dir,
      "bad.jsonl",
      `${JSON.stringify({ role: "user", text: "hi" })}\n${JSON.stringify({ role: "wizard", text: "x" })}\n`,
    );
    const run = await cairnProcess(["context", file, "--out", join(dir, "out"), "--db", join(dir, "store"), "--json"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /messages\[1\]\.role/);
    assert.equal(existsSync(join(dir, "out")), false);
    assert.equal(existsSync(join(dir, "store")), false);
    const noOut = await cairnProcess(["context", file]);
    assert.equal(noOut.code, 2);
    assert.match(noOut.stderr, /--out/);
  });
});
