import { describe } from "node:test";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";
import { runStoreConformance } from "./store-conformance.ts";

const skip = postgresSkipReason();

if (skip) {
  describe("Store conformance: postgres", { skip }, () => {});
} else {
  const cluster = usePostgresCluster();
  // Each case gets a fresh database, so cases stay independent.
  runStoreConformance("postgres", async () => PostgresStore.open({ url: await cluster.freshDatabase() }));
}
