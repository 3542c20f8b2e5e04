import assert from "node:assert/strict";
import { describe, it } from "node:test";
import pg from "pg";
import { poolTypes, prepared, readAllInOneTrip } from "../../src/store/postgres/tenant-transaction.ts";
import { postgresSkipReason, usePostgresCluster } from "../support/postgres-cluster.ts";

const skip = postgresSkipReason();

/**
 * One-trip reads (decision 036) prepare their statements with SQL `PREPARE` once per connection.
 * Behind a transaction-pooling proxy such as PgBouncer, the server connection under a client
 * changes between transactions, so a statement this client prepared is missing where it executes,
 * or one another client prepared is already there. These cases make both happen on a real server
 * (a `DEALLOCATE` or a `PREPARE` behind the store's back, on the pool's only connection) and check
 * that the read still answers, and that the pool's later reads stop preparing.
 */
describe("Postgres one-trip reads behind a transaction pooler", { skip }, () => {
  if (skip) return;
  const cluster = usePostgresCluster();
  const statement = prepared("SELECT $1::int + 1 AS next");
  const read = (pool: pg.Pool, value: number) =>
    readAllInOneTrip(pool, "acme", "test", [{ text: statement, values: [value] }]);
  const onTheConnection = async (pool: pg.Pool, sql: string) => {
    const client = await pool.connect();
    try {
      await client.query(sql);
    } finally {
      client.release();
    }
  };

  it("answers when the statement it prepared is gone from the server connection", async (t) => {
    const pool = new pg.Pool({ connectionString: await cluster.freshDatabase(), max: 1, types: poolTypes });
    t.after(() => pool.end());
    assert.deepEqual(await read(pool, 1), [[{ next: 2 }]]);
    // As if the next transaction landed on another server connection.
    await onTheConnection(pool, "DEALLOCATE ALL");
    assert.deepEqual(await read(pool, 2), [[{ next: 3 }]]);
    await onTheConnection(pool, "DEALLOCATE ALL");
    assert.deepEqual(await read(pool, 3), [[{ next: 4 }]]);
    const left = await pool.query("SELECT count(*)::int AS n FROM pg_prepared_statements");
    assert.equal(left.rows[0]?.n, 0, "the pool no longer prepares");
  });

  it("answers when another client already prepared the name on the server connection", async (t) => {
    const pool = new pg.Pool({ connectionString: await cluster.freshDatabase(), max: 1, types: poolTypes });
    t.after(() => pool.end());
    await onTheConnection(pool, `PREPARE ${statement.name}_trip AS SELECT 0`);
    assert.deepEqual(await read(pool, 41), [[{ next: 42 }]]);
  });
});
