import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tempDir } from "../support/fixtures.ts";
import { cairnHash, demoSearch, demoSourceWithForget, migrateQueries } from "../support/migrate-fixture.ts";

const cairn = cairnHash;

/** `cairn migrate` between two embedded stores; the Postgres suite runs the same into and out of a database. */
describe("cairn migrate", () => {
  it("copies the demo memory record for record: the copy answers every search the same and checks clean", async (t) => {
    const dir = tempDir(t);
    const [source, target] = [join(dir, "source"), join(dir, "target")];
    await demoSourceWithForget(source);

    const migrated = await cairn(["migrate", "--db", source, "--to", target, "--json"]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const report = JSON.parse(migrated.stdout);
    assert.deepEqual(report.differences, []);
    assert.ok(report.sessions > 0 && report.blobs > 0 && report.entries > 0, migrated.stdout);

    for (const query of migrateQueries) {
      assert.deepEqual(await demoSearch(target, query), await demoSearch(source, query), query);
    }
    const checked = await cairn(["check", "--db", target, "--json"]);
    assert.equal(checked.code, 0, checked.stdout);

    const again = await cairn(["migrate", "--db", source, "--to", target, "--json"]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(JSON.parse(again.stdout).sessions, 0, "a second run copies nothing new");

    // The forget's keyed hashes came along under the source's secret, which stayed behind: counted, not hidden.
    assert.equal(report.auditSecretCarried, false);
    assert.ok(report.foreignKeyedEvents > 0, migrated.stdout);
    assert.notDeepEqual(readFileSync(join(target, "audit.key")), readFileSync(join(source, "audit.key")));
    const carried = join(dir, "carried");
    const withSecret = await cairn(["migrate", "--db", source, "--to", carried, "--carry-audit-secret", "--json"]);
    assert.equal(withSecret.code, 0, withSecret.stderr);
    assert.equal(JSON.parse(withSecret.stdout).foreignKeyedEvents, 0);
    assert.deepEqual(readFileSync(join(carried, "audit.key")), readFileSync(join(source, "audit.key")));
  });

  it("read commands refuse a store that is not there, creating nothing (a mistyped --db)", async (t) => {
    const dir = tempDir(t);
    const missing = join(dir, "typo");
    for (const args of [["search", "anything"], ["show", "ses_x"], ["forget", "--session", "s1", "--yes"], ["check"]]) {
      const result = await cairn([...args, "--db", missing, "--tenant", "acme", "--user", "ana"]);
      assert.equal(result.code, 3, `${args[0]}: ${result.stderr}`);
      assert.match(result.stderr, /store .*typo not found/);
      assert.ok(!existsSync(missing), `${args[0]} created no store`);
    }
  });

  it("refuses a missing source without creating anything, and a target that is the source", async (t) => {
    const dir = tempDir(t);
    const missing = await cairn(["migrate", "--db", join(dir, "nope"), "--to", join(dir, "target")]);
    assert.equal(missing.code, 3, missing.stderr);
    assert.ok(!existsSync(join(dir, "nope")) && !existsSync(join(dir, "target")), "nothing created");
    const same = await cairn(["migrate", "--db", join(dir, "nope"), "--to", join(dir, "nope")]);
    assert.equal(same.code, 2, same.stderr);
    const noTarget = await cairn(["migrate", "--db", join(dir, "nope")]);
    assert.equal(noTarget.code, 2, noTarget.stderr);
  });
});
