import { describe, it } from "node:test";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { twoInstancesOnOneStore } from "../support/shared-store.ts";

const skip = postgresSkipReason();

/** The shared-store deployment on what it is for: two `cairn serve` instances on one Postgres database. */
if (skip) {
  describe("two cairn serve instances on one Postgres database", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  describe("two cairn serve instances on one Postgres database", () => {
    it("writers race through both to one scope: none is lost or refused, either reads all, cairn check is clean", async (t) => {
      await twoInstancesOnOneStore(t, await cluster.freshDatabase());
    });
  });
}
