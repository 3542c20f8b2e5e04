import { InputError } from "../../core/errors.ts";
import { vectorBytes, vectorFromBytes } from "../../core/vectors.ts";
import type { BankAudit, BankProgram } from "../bank-records.ts";
import { writeAudit } from "./audit-events.ts";
import type { ScopeContext } from "./scope-context.ts";
import type { Sql } from "./tenant-transaction.ts";

interface BankRow {
  id: string;
  question: string;
  kind: string;
  program: string;
  space: string | null;
  vector: Buffer | null;
  image_space: string | null;
  image_vector: Buffer | null;
  sessions: string;
  cover_from_ms: number;
  cover_to_ms: number;
  verification: string;
  created_ms: number;
  evidence: string[] | null;
}

/** Adds programs and their audit event; the caller's transaction makes it all-or-nothing. */
export async function admitPrograms(
  context: ScopeContext,
  sql: Sql,
  programs: readonly BankProgram[],
  audit: BankAudit,
): Promise<void> {
  for (const [index, program] of programs.entries()) {
    const rowids = await evidenceRowids(context, sql, program, index);
    const [row] = await sql.query<{ rowid: number }>(
      `INSERT INTO bank_programs (id, tenant, scope_key, question, kind, program, space, vector, image_space, image_vector,
         sessions, cover_from_ms, cover_to_ms, verification, created_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING rowid`,
      [
        program.id,
        context.tenant,
        context.key,
        program.question,
        program.kind,
        JSON.stringify(program.program),
        program.space,
        program.vector ? Buffer.from(vectorBytes(program.vector)) : null,
        program.imageSpace,
        program.imageVector ? Buffer.from(vectorBytes(program.imageVector)) : null,
        JSON.stringify(program.sessions),
        program.coverFromMs,
        program.coverToMs,
        JSON.stringify(program.verification),
        program.createdMs,
      ],
    );
    const ordered = [...new Set(program.evidence)];
    await sql.query(
      `INSERT INTO bank_evidence (program_rowid, raw_node_rowid, tenant, ordinal)
       SELECT $1, node, $2, ordinality - 1 FROM unnest($3::bigint[]) WITH ORDINALITY AS e (node, ordinality)`,
      [row?.rowid, context.tenant, ordered.map((id) => rowids.get(id))],
    );
  }
  await writeAudit(context, sql, audit.action, audit.subject, { ...audit.details });
}

export async function readBank(
  context: ScopeContext,
  sql: Sql,
  options: { limit?: number; offset?: number },
): Promise<BankProgram[]> {
  const rows = await sql.query<BankRow>(
    `SELECT p.id, p.question, p.kind, p.program, p.space, p.vector, p.image_space, p.image_vector, p.sessions, p.cover_from_ms, p.cover_to_ms,
            p.verification, p.created_ms,
            (SELECT array_agg(n.id ORDER BY e.ordinal) FROM bank_evidence e JOIN raw_nodes n ON n.rowid = e.raw_node_rowid
              WHERE e.program_rowid = p.rowid) AS evidence
     FROM bank_programs p WHERE p.scope_key = $1 ORDER BY p.rowid LIMIT $2 OFFSET $3`,
    [context.key, options.limit ?? null, options.offset ?? 0],
  );
  return rows.map((row) => ({
    id: row.id,
    question: row.question,
    kind: row.kind,
    program: JSON.parse(row.program) as Record<string, unknown>,
    vector: row.vector ? vectorFromBytes(new Uint8Array(row.vector)) : null,
    space: row.space,
    imageVector: row.image_vector ? vectorFromBytes(new Uint8Array(row.image_vector)) : null,
    imageSpace: row.image_space,
    evidence: row.evidence ?? [],
    sessions: JSON.parse(row.sessions) as string[],
    coverFromMs: row.cover_from_ms,
    coverToMs: row.cover_to_ms,
    verification: JSON.parse(row.verification) as Record<string, unknown>,
    createdMs: row.created_ms,
  }));
}

export async function retirePrograms(
  context: ScopeContext,
  sql: Sql,
  ids: readonly string[],
  audit: BankAudit,
): Promise<number> {
  const removed = await sql.query<{ id: string }>(
    "DELETE FROM bank_programs WHERE scope_key = $1 AND id = ANY($2::text[]) RETURNING id",
    [context.key, [...ids]],
  );
  await writeAudit(context, sql, audit.action, audit.subject, { ...audit.details, retired: removed.length });
  return removed.length;
}

/** Replaces refreshed programs' evidence, span and verification, and audits it; the caller's transaction makes it atomic. */
export async function refreshPrograms(
  context: ScopeContext,
  sql: Sql,
  programs: readonly BankProgram[],
  audit: BankAudit,
): Promise<number> {
  let refreshed = 0;
  for (const [index, program] of programs.entries()) {
    const rowids = await evidenceRowids(context, sql, program, index);
    const [row] = await sql.query<{ rowid: number }>(
      `UPDATE bank_programs SET cover_from_ms = $3, cover_to_ms = $4, verification = $5
       WHERE scope_key = $1 AND id = $2 RETURNING rowid`,
      [context.key, program.id, program.coverFromMs, program.coverToMs, JSON.stringify(program.verification)],
    );
    if (!row) continue;
    await sql.query("DELETE FROM bank_evidence WHERE program_rowid = $1", [row.rowid]);
    const ordered = [...new Set(program.evidence)];
    await sql.query(
      `INSERT INTO bank_evidence (program_rowid, raw_node_rowid, tenant, ordinal)
       SELECT $1, node, $2, ordinality - 1 FROM unnest($3::bigint[]) WITH ORDINALITY AS e (node, ordinality)`,
      [row.rowid, context.tenant, ordered.map((id) => rowids.get(id))],
    );
    refreshed++;
  }
  await writeAudit(context, sql, audit.action, audit.subject, { ...audit.details, refreshed });
  return refreshed;
}

/** Inside a forget's transaction: removes the programs resting on any of these raw nodes; returns how many. */
export async function retireProgramsOn(
  context: ScopeContext,
  sql: Sql,
  nodeRowids: readonly number[],
): Promise<number> {
  const removed = await sql.query<{ id: string }>(
    `DELETE FROM bank_programs WHERE scope_key = $1 AND rowid IN
       (SELECT program_rowid FROM bank_evidence WHERE raw_node_rowid = ANY($2::bigint[])) RETURNING id`,
    [context.key, [...nodeRowids]],
  );
  return removed.length;
}

/** The raw-node rowids a program's evidence names, each checked to be a raw node of this scope. */
async function evidenceRowids(
  context: ScopeContext,
  sql: Sql,
  program: BankProgram,
  index: number,
): Promise<Map<string, number>> {
  if (program.evidence.length === 0) throw new InputError(`programs[${index}].evidence`, "must name raw nodes");
  const found = await sql.query<{ id: string; rowid: number }>(
    "SELECT id, rowid FROM raw_nodes WHERE scope_key = $1 AND id = ANY($2::text[])",
    [context.key, [...program.evidence]],
  );
  const rowids = new Map(found.map((row) => [row.id, row.rowid]));
  const missing = program.evidence.find((id) => !rowids.has(id));
  if (missing !== undefined)
    throw new InputError(`programs[${index}].evidence`, `${missing} is no raw node of this scope`);
  return rowids;
}
