import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { cairnEntry } from "../support/compiled.ts";
import { drawPng, tempDir, writeFile } from "../support/fixtures.ts";

/** The CLI's entry: bin/cairn.js's module, compiled once for the run (test/support/compiled.ts). */
const bin = cairnEntry();

function cairn(args: string[], cwd: string) {
  const result = spawnSync(process.execPath, [bin, ...args, "--tenant", "acme", "--user", "ana", "--profile", "hash"], {
    encoding: "utf8",
    cwd,
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("cairn remember and cairn append", () => {
  it("files a note with an image, appends turns from --text and a file, and a retry appends nothing", async (t) => {
    const dir = tempDir(t, "cairn-append-");
    mkdirSync(join(dir, "img"));
    writeFile(dir, "img/helmet.png", await drawPng({ shape: "circle", color: "#c00", background: "#fff" }));
    const note = cairn(["remember", "my new red helmet", "--image", "img/helmet.png", "--json"], dir);
    assert.equal(note.code, 0, note.stderr);
    const remembered = JSON.parse(note.stdout);
    assert.match(remembered.sessionKey, /^remember\/day\//);

    const first = cairn(
      ["append", "--session", "chat-7", "--text", "We bought a canoe", "--speaker", "Ana", "--json"],
      dir,
    );
    assert.equal(first.code, 0, first.stderr);
    writeFile(
      dir,
      "more.jsonl",
      `${JSON.stringify({ speaker: "Bo", text: "Which colour?" })}\n${JSON.stringify({ speaker: "Ana", text: "Teal with a zeppelin sticker", images: [{ path: "img/helmet.png" }] })}\n`,
    );
    const more = cairn(["append", "more.jsonl", "--session", "chat-7", "--json"], dir);
    assert.equal(more.code, 0, more.stderr);
    assert.equal(JSON.parse(more.stdout).rawNodeIds.length, 2);
    const retry = cairn(["append", "more.jsonl", "--session", "chat-7"], dir);
    assert.equal(retry.code, 0);
    assert.match(retry.stdout, /already appended/);

    const found = JSON.parse(cairn(["search", "zeppelin sticker", "--json"], dir).stdout);
    assert.equal(found.items[0].rawNodeId, JSON.parse(more.stdout).rawNodeIds[1]);
    const helmet = JSON.parse(cairn(["search", "red helmet", "--json"], dir).stdout);
    assert.equal(helmet.items[0].rawNodeId, remembered.rawNodeId);
  });

  it("refuses an append without a session, with both a file and --text, or with a bad line, writing nothing", (t) => {
    const dir = tempDir(t, "cairn-append-");
    writeFile(dir, "bad.jsonl", `${JSON.stringify({ text: "fine" })}\n{"text": 5}\n`);
    assert.equal(cairn(["append", "--text", "x"], dir).code, 2);
    assert.equal(cairn(["append", "bad.jsonl", "--session", "s", "--text", "x"], dir).code, 2);
    const bad = cairn(["append", "bad.jsonl", "--session", "s", "--json"], dir);
    assert.equal(bad.code, 2);
    assert.match(JSON.parse(bad.stderr).error.field, /turns\[1\]\.text/);
    assert.equal(cairn(["remember", "--json"], dir).code, 2);
    const listed = cairn(["search", "fine", "--json"], dir);
    assert.equal(JSON.parse(listed.stdout).items.length, 0, "nothing was written");
  });
});
