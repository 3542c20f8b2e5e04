import type pg from "pg";

/**
 * Text looked for in every row of every table of the public schema, read through a superuser
 * connection (row-level security bypassed), each row in its text form: bytea as `\x` and hex,
 * vectors as `[…]`. Returns "what in table" for each hit.
 */
export async function rowsHolding(
  admin: pg.Client,
  needles: readonly { readonly what: string; readonly text: string }[],
): Promise<string[]> {
  const tables = await admin.query<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
  );
  const found: string[] = [];
  for (const { name } of tables.rows) {
    const rows = await admin.query<{ row: string }>(`SELECT t::text AS row FROM public."${name}" t`);
    for (const needle of needles) {
      if (rows.rows.some(({ row }) => row.includes(needle.text))) found.push(`${needle.what} in ${name}`);
    }
  }
  return found;
}
