import pg from "pg";
import { CairnError, StoreError } from "../../core/errors.ts";

/**
 * The second tenant wall. Every table holding a tenant's data has a row-level security policy
 * that compares its `tenant` column with the `cairn.tenant` setting, and the store runs every
 * statement inside a transaction that sets it (`SET LOCAL`, so it never outlives the transaction
 * on a pooled connection). A statement that forgot its scope filter still sees one tenant only; a
 * statement run without the setting sees nothing.
 */

/** What the parts of the store need from a connection: parameterised queries returning typed rows. */
export interface Sql {
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: readonly unknown[]): Promise<Row[]>;
}

/** Tenant ids are validated (`validateScope`: letters, digits, `.`, `_`, `@`, `-`), so quoting is all it needs. */
function literal(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * Runs `work` in one transaction bound to `tenant`: committed if it returns, rolled back if it
 * throws. Cairn's typed errors pass through; anything else becomes a `StoreError` of `operation`.
 */
/** Settings a transaction opens with (`SET LOCAL`): names of word characters and dots, values numbers or words. */
export type TransactionSettings = Readonly<Record<string, number | string>>;

function settingsSql(settings: TransactionSettings | undefined): string {
  return Object.entries(settings ?? {})
    .map(([name, value]) => {
      if (!/^[a-z_][a-z0-9_.]*$/.test(name) || !/^[A-Za-z0-9_.]+$/.test(String(value))) {
        throw new StoreError("transaction", `bad setting ${name} = ${String(value)}`);
      }
      return `; SET LOCAL ${name} = ${value}`;
    })
    .join("");
}

export async function inTenant<T>(
  pool: pg.Pool,
  tenant: string,
  operation: string,
  work: (sql: Sql) => Promise<T>,
  options: { readonly readOnly?: boolean; readonly settings?: TransactionSettings } = {},
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new StoreError(operation, error);
  }
  let broken: unknown;
  let released = false;
  try {
    // One round trip opens the transaction and raises the wall. A read sees one snapshot throughout
    // (REPEATABLE READ): readIndex's entries and version must come from the same moment, or a plan
    // could be made against a version its entries predate. A write runs in READ COMMITTED after
    // taking its scope's lock, so each of its statements sees what the writer before it committed.
    // Settings (statement timeouts, for instance) ride on the same round trip.
    await client.query(
      `BEGIN ${options.readOnly ? "ISOLATION LEVEL REPEATABLE READ READ ONLY" : "ISOLATION LEVEL READ COMMITTED"}; SET LOCAL cairn.tenant = ${literal(tenant)}${settingsSql(options.settings)}`,
    );
    const sql: Sql = {
      query: async <Row extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) =>
        (await client.query<Row>(text, values as unknown[] | undefined)).rows,
    };
    const result = await work(sql);
    if (options.readOnly) {
      // A read-only transaction's result is final once its statements returned: the caller has it a
      // round trip sooner, and the connection goes back to the pool once the COMMIT is done.
      const held = client;
      held.query("COMMIT").then(
        () => held.release(),
        (error: unknown) => held.release(error instanceof Error ? error : new Error(String(error))),
      );
      released = true;
      return result;
    }
    await client.query("COMMIT");
    return result;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      // The connection is unusable: let the pool discard it rather than hand it out again.
      broken = rollbackError;
    }
    if (CairnError.is(error)) throw error;
    throw new StoreError(operation, error);
  } finally {
    if (!released) client.release(broken instanceof Error ? broken : undefined);
  }
}

/** 64-bit integers (counts, times in ms, row ids) as numbers: every one Cairn stores fits in 2^53. */
export const poolTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === pg.types.builtins.INT8 && format !== "binary") return (value: string) => Number(value);
    return format === undefined ? pg.types.getTypeParser(oid) : pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;
