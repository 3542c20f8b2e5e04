import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { it } from "node:test";
import { blobKey } from "../../src/store/sqlite/blob-files.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { tenantStorage } from "../../src/store/sqlite/tenants.ts";
import { tempDir } from "../support/fixtures.ts";
import { buildSessionWrite, images, scopeA, sha256, spaces } from "./conformance-support.ts";
import { forget } from "./scoped-reads.ts";

/**
 * Two processes share one store folder: a writer decides which images are new before it takes the
 * write lock, and a forget in another process can release the same image in between. The crash
 * loop once ended with a stored session whose image had no file. Two stores on one folder stand in
 * for the processes; the writer's "is it stored?" check is made to answer as it did before the
 * other's forget landed.
 */
it("an image released by another connection's forget after the writer checked it is written again, not lost", async (t) => {
  const dir = tempDir(t);
  const { red } = await images();
  const forgetter = await SqliteStore.open({ path: dir });
  const writer = await SqliteStore.open({ path: dir });
  t.after(async () => {
    await writer.close();
    await forgetter.close();
  });
  await forgetter
    .forScope(scopeA)
    .commitSession(
      await buildSessionWrite({ key: "first", turns: [{ text: "a red circle", images: [{ data: red }] }] }),
    );

  // The writer looked while the image was still stored: it will not write the file before its lock.
  const stale = writer.hasBlob.bind(writer);
  let checks = 0;
  writer.hasBlob = (key: string) => (checks++ === 0 ? true : stale(key));
  const second = await buildSessionWrite({
    key: "second",
    turns: [{ text: "the red circle again", images: [{ data: red }] }],
  });
  // Meanwhile the other connection forgets the only session holding it: row and file go.
  await forget(forgetter.forScope(scopeA), { session: "first" }, spaces);
  assert.equal(forgetter.hasBlob(keyOf(scopeA.tenant, red)), false, "the forget released the image");

  await writer.forScope(scopeA).commitSession(second);
  const { data } = await writer.forScope(scopeA).readBlob(sha256(red));
  assert.equal(sha256(data), sha256(red), "the committed session's image has its bytes");
  const thumbnail = await writer.forScope(scopeA).readBlob(sha256(red), { thumbnail: true });
  assert.ok(thumbnail.data.length > 0, "and its thumbnail");
});

it("a forget's file deletion waits for the write lock and leaves files that a committed row needs", async (t) => {
  const dir = tempDir(t);
  const { blue } = await images();
  const store = await SqliteStore.open({ path: dir });
  t.after(() => store.close());
  const scoped = store.forScope(scopeA);
  await scoped.commitSession(
    await buildSessionWrite({ key: "one", turns: [{ text: "blue", images: [{ data: blue }] }] }),
  );
  await scoped.commitSession(
    await buildSessionWrite({ key: "two", turns: [{ text: "blue too", images: [{ data: blue }] }] }),
  );
  await forget(scoped, { session: "one" }, spaces);
  const path = store.files.blobPath(keyOf(scopeA.tenant, blue));
  assert.ok(existsSync(path), "session two still holds the image: its file stays");
  await forget(scoped, { session: "two" }, spaces);
  assert.equal(existsSync(path), false, "the last reference gone, the file goes");
});

/** The blob key of an image the tenant stores: its own copy (decision 008). */
function keyOf(tenant: string, data: Uint8Array): string {
  return blobKey(tenantStorage(tenant).token, sha256(data));
}
