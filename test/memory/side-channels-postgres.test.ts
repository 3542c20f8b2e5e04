import { describe, it } from "node:test";
import { tempDir } from "../support/fixtures.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { checkNoSideChannels } from "../support/side-channels.ts";

/**
 * No cross-tenant side channel on the Postgres store (BM25 from the tenant's own statistics,
 * tenant-owned blobs): the same check as SQLite's (`test/support/side-channels.ts`), each store a
 * fresh database of one cluster.
 */

const skip = postgresSkipReason();

if (skip) {
  describe("side channels on Postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();

  describe("side channels on Postgres", () => {
    it("nothing tenant A stores or asks changes tenant B's results, scores, counts or model calls", async (t) => {
      await checkNoSideChannels({ dir: tempDir(t), location: () => cluster.freshDatabase() });
    });
  });
}
