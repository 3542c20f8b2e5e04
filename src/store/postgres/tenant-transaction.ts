import { createHash } from "node:crypto";
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
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string | Prepared,
    values?: readonly unknown[],
  ): Promise<Row[]>;
}

/**
 * A statement the server parses once per connection and then only binds (`prepared`): for the
 * statements every commit runs, whose text is one of a few shapes.
 */
export interface Prepared {
  readonly name: string;
  readonly text: string;
}

const preparedNames = new Map<string, Prepared>();

/**
 * The statement `text` as a named prepared statement, its name derived from the text (so one text
 * is one server-side statement per connection). Only for texts drawn from a small fixed set — each
 * distinct text stays prepared on every pooled connection that ran it.
 */
export function prepared(text: string): Prepared {
  let known = preparedNames.get(text);
  if (!known) {
    known = Object.freeze({ name: `cairn_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text });
    preparedNames.set(text, known);
  }
  return known;
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
  work: (sql: Sql, opened: pg.QueryResultRow[]) => Promise<T>,
  options: {
    readonly readOnly?: boolean;
    readonly settings?: TransactionSettings;
    /**
     * A first statement that rides on the round trip opening the transaction, its values inlined
     * as literals (escaped by the client): its rows are `work`'s `opened`.
     */
    readonly opening?: { readonly text: string; readonly values: readonly Inlinable[] };
  } = {},
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
    const opening = options.opening ? `; ${inlined(client, options.opening.text, options.opening.values)}` : "";
    const begun = (await client.query(
      `BEGIN ${options.readOnly ? "ISOLATION LEVEL REPEATABLE READ READ ONLY" : "ISOLATION LEVEL READ COMMITTED"}; SET LOCAL cairn.tenant = ${literal(tenant)}${settingsSql(options.settings)}${opening}`,
    )) as unknown as pg.QueryResult | pg.QueryResult[];
    const opened = options.opening && Array.isArray(begun) ? (begun.at(-1)?.rows ?? []) : [];
    const sql: Sql = {
      query: async <Row extends pg.QueryResultRow>(text: string | Prepared, values?: readonly unknown[]) =>
        (typeof text === "string"
          ? await client.query<Row>(text, values as unknown[] | undefined)
          : await client.query<Row>({ name: text.name, text: text.text, values: values as unknown[] | undefined })
        ).rows,
    };
    const result = await work(sql, opened);
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

/** A value `inlined` can write as a literal. */
export type Inlinable = string | number | null | readonly string[] | readonly number[];

/**
 * `text` with its `$n` placeholders replaced by the values as literals: strings escaped by the
 * client (`escapeLiteral`, which handles quotes and backslashes under any setting), finite numbers,
 * NULL, arrays of strings as `ARRAY[…]` (the statement casts them, `$2::text[]`) and arrays of
 * finite numbers as `'{…}'` (`$2::bigint[]`).
 */
function inlined(client: pg.PoolClient, text: string, values: readonly Inlinable[]): string {
  return text.replace(/\$(\d+)/g, (_, index: string) => {
    const value = values[Number(index) - 1];
    if (value === null) return "NULL";
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    if (typeof value === "string") return client.escapeLiteral(value);
    if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
      return `ARRAY[${value.map((item: string) => client.escapeLiteral(item)).join(", ")}]`;
    }
    if (Array.isArray(value) && value.every((item) => typeof item === "number" && Number.isFinite(item))) {
      // An array literal: its type comes from the placeholder's cast (`$2::bigint[]`), even empty.
      return `'{${value.join(",")}}'`;
    }
    throw new StoreError("transaction", `no literal for placeholder $${index}`);
  });
}

/**
 * A read of one statement in one round trip: the transaction's opening, the tenant wall, the
 * statement (its values inlined, see `inlined`) and the COMMIT go as one simple query, where a read
 * through `inTenant` takes two round trips and a COMMIT. For the small reads a commit makes before
 * it writes (index version, is the key stored). Returns the statement's rows.
 */
export async function readInOneTrip<Row extends pg.QueryResultRow>(
  pool: pg.Pool,
  tenant: string,
  operation: string,
  statement: OneTripStatement,
): Promise<Row[]> {
  return (await readAllInOneTrip(pool, tenant, operation, [statement]))[0] as Row[];
}

/** A statement of a one-trip read: its text (or a prepared statement) and the values inlined into it. */
export interface OneTripStatement {
  readonly text: string | Prepared;
  readonly values: readonly Inlinable[];
}

/**
 * Several statements in one snapshot and one round trip, as `readInOneTrip` runs one: the rows of
 * each, in order. For a read whose second statement depends on the first only through what it
 * can select again itself (the same snapshot answers both).
 */
export async function readAllInOneTrip(
  pool: pg.Pool,
  tenant: string,
  operation: string,
  statements: readonly OneTripStatement[],
): Promise<pg.QueryResultRow[][]> {
  const prepare = !unpreparedPools.has(pool);
  try {
    return await oneTrip(pool, tenant, operation, statements, prepare);
  } catch (error) {
    // Behind a transaction-pooling proxy (PgBouncer's `pool_mode = transaction`) each transaction
    // may land on another server connection: one this client prepared on is not the one it
    // executes on (26000), or one another client prepared on already has the name (42P05). SQL
    // PREPARE cannot work there; the pool's reads go on with the statement text inlined, and this
    // read, read-only, runs again that way.
    if (!prepare || !preparedStatementLost(error)) throw error;
    unpreparedPools.add(pool);
    return oneTrip(pool, tenant, operation, statements, false);
  }
}

/** Pools whose server connections do not keep what SQL `PREPARE` made (a transaction pooler): one-trip reads inline. */
const unpreparedPools = new WeakSet<pg.Pool>();

function preparedStatementLost(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as { code?: string }).code;
  return code === "26000" || code === "42P05";
}

async function oneTrip(
  pool: pg.Pool,
  tenant: string,
  operation: string,
  statements: readonly OneTripStatement[],
  prepare: boolean,
): Promise<pg.QueryResultRow[][]> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new StoreError(operation, error);
  }
  let broken: Error | undefined;
  const preparing: string[] = [];
  try {
    // A prepared statement is prepared once per connection (by SQL `PREPARE`, under a name of its
    // own: the driver's protocol-level statements keep theirs) and then only executed: its plan
    // is not made again every call.
    const known = preparedOn.get(client) ?? new Set<string>();
    preparedOn.set(client, known);
    const runs = statements.map(({ text, values }) => {
      if (typeof text === "string") return inlined(client, text, values);
      if (!prepare) return inlined(client, text.text, values);
      const name = `${text.name}_trip`;
      const execute = inlined(
        client,
        `EXECUTE ${name}(${values.map((_, index) => `$${index + 1}`).join(", ")})`,
        values,
      );
      if (known.has(name) || preparing.includes(name)) return execute;
      preparing.push(name);
      return `PREPARE ${name} AS ${text.text}; ${execute}`;
    });
    const results = (await client.query(
      `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL cairn.tenant = ${literal(tenant)}; ${runs.join("; ")}; COMMIT`,
    )) as unknown as pg.QueryResult[];
    const expected = 3 + preparing.length + statements.length;
    if (!Array.isArray(results) || results.length !== expected) {
      throw new StoreError(operation, "a one-trip read returned an unexpected number of results");
    }
    for (const name of preparing) known.add(name);
    // The results: BEGIN, SET, then each statement's (after its PREPARE's, if any), then COMMIT.
    const rows = results.slice(2, -1).filter((result) => result.command !== "PREPARE");
    return rows.map((result) => result.rows);
  } catch (error) {
    // An error inside the simple query leaves its transaction open and aborted. Whether a PREPARE
    // in it stood is not worth knowing: a connection that tried one is not handed out again.
    if (preparing.length > 0) broken = error instanceof Error ? error : new Error(String(error));
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    if (CairnError.is(error)) throw error;
    throw new StoreError(operation, error);
  } finally {
    client.release(broken);
  }
}

/**
 * `Sql` whose every query is a `readInOneTrip` of its own (its own snapshot, values inlined): for
 * a read of one statement written against `Sql`, never for several that must see one snapshot.
 */
export function oneTripSql(pool: pg.Pool, tenant: string, operation: string): Sql {
  return {
    query: <Row extends pg.QueryResultRow>(text: string | Prepared, values?: readonly unknown[]) =>
      readInOneTrip<Row>(pool, tenant, operation, { text, values: (values ?? []) as readonly Inlinable[] }),
  };
}

/** The statements `readInOneTrip` prepared on each pooled connection, by name. */
const preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

/** 64-bit integers (counts, times in ms, row ids) as numbers: every one Cairn stores fits in 2^53. */
export const poolTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === pg.types.builtins.INT8 && format !== "binary") return (value: string) => Number(value);
    return format === undefined ? pg.types.getTypeParser(oid) : pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/**
 * Runs `work` once for every tenant that has a scope, inside that tenant's wall: how a migration (bound
 * to no tenant) reaches rows that row-level security keys by tenant.
 */
export async function forEachTenant(sql: Sql, work: (tenant: string) => Promise<void>): Promise<void> {
  await sql.query("SELECT set_config('cairn.list_scopes', 'on', true)");
  const tenants = (await sql.query<{ tenant: string }>("SELECT DISTINCT tenant FROM scopes ORDER BY tenant")).map(
    (row) => row.tenant,
  );
  await sql.query("SELECT set_config('cairn.list_scopes', 'off', true)");
  for (const tenant of tenants) {
    await sql.query("SELECT set_config('cairn.tenant', $1, true)", [tenant]);
    await work(tenant);
  }
  await sql.query("SELECT set_config('cairn.tenant', '', true)");
}
