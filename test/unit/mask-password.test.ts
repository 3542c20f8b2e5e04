import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { maskPassword } from "../../src/surfaces/cli/context.ts";

describe("maskPassword", () => {
  it("never prints a Postgres password: messages show the URL with *** in its place", () => {
    assert.equal(
      maskPassword("postgres://cairn:s3cr%21t@db.internal:5432/cairn"),
      "postgres://cairn:***@db.internal:5432/cairn",
    );
    assert.equal(maskPassword("postgresql://cairn@db/cairn"), "postgresql://cairn@db/cairn", "nothing to hide");
    assert.ok(maskPassword("/tmp/store").startsWith("/"), "a folder is shown as an absolute path");
  });
});
