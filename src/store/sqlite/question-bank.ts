import { CairnError, InputError, StoreError } from "../../core/errors.ts";
import { vectorBytes, vectorFromBytes } from "../../core/vectors.ts";
import type { BankAudit, BankProgram } from "../bank-records.ts";
import { writeAudit } from "./audit-events.ts";
import type { ScopeContext } from "./scope-context.ts";

interface BankRow {
  rowid: number;
  id: string;
  question: string;
  kind: string;
  program: string;
  space: string | null;
  vector: Uint8Array | null;
  image_space: string | null;
  image_vector: Uint8Array | null;
  sessions: string;
  cover_from_ms: number;
  cover_to_ms: number;
  verification: string;
  created_ms: number;
  evidence: string;
}

/** Adds programs and their audit event in one transaction; evidence must name raw nodes of the scope. */
export function admitPrograms(context: ScopeContext, programs: readonly BankProgram[], audit: BankAudit): void {
  const { db, key } = context;
  const rowidOf = db.prepare("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?").pluck();
  const insert = db.prepare(
    `INSERT INTO bank_programs (id, scope_key, question, kind, program, space, vector, image_space, image_vector,
       sessions, cover_from_ms, cover_to_ms, verification, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const link = db.prepare("INSERT INTO bank_evidence (program_rowid, raw_node_rowid, ordinal) VALUES (?, ?, ?)");
  try {
    db.transaction(() => {
      for (const [index, program] of programs.entries()) {
        const rowids = evidenceRowids(rowidOf, key, program, index);
        const { lastInsertRowid } = insert.run(
          program.id,
          key,
          program.question,
          program.kind,
          JSON.stringify(program.program),
          program.space,
          program.vector ? vectorBytes(program.vector) : null,
          program.imageSpace,
          program.imageVector ? vectorBytes(program.imageVector) : null,
          JSON.stringify(program.sessions),
          program.coverFromMs,
          program.coverToMs,
          JSON.stringify(program.verification),
          program.createdMs,
        );
        for (const [ordinal, rowid] of [...new Set(rowids)].entries()) link.run(lastInsertRowid, rowid, ordinal);
      }
      writeAudit(context, audit.action, audit.subject, { ...audit.details });
    }).immediate();
  } catch (error) {
    if (CairnError.is(error)) throw error;
    throw new StoreError("admitPrograms", error);
  }
}

export function readBank(context: ScopeContext, options: { limit?: number; offset?: number }): BankProgram[] {
  const rows = context.db
    .prepare(
      `SELECT p.*, (SELECT json_group_array(r.id) FROM (SELECT n.id FROM bank_evidence e JOIN raw_nodes n ON n.rowid = e.raw_node_rowid
                     WHERE e.program_rowid = p.rowid ORDER BY e.ordinal) r) AS evidence
       FROM bank_programs p WHERE p.scope_key = ? ORDER BY p.rowid LIMIT ? OFFSET ?`,
    )
    .all(context.key, options.limit ?? -1, options.offset ?? 0) as BankRow[];
  return rows.map(toBankProgram);
}

export function retirePrograms(context: ScopeContext, ids: readonly string[], audit: BankAudit): number {
  const { db, key } = context;
  return db
    .transaction(() => {
      const { changes } = db
        .prepare("DELETE FROM bank_programs WHERE scope_key = ? AND id IN (SELECT value FROM json_each(?))")
        .run(key, JSON.stringify(ids));
      writeAudit(context, audit.action, audit.subject, { ...audit.details, retired: changes });
      return changes;
    })
    .immediate();
}

/** Replaces refreshed programs' evidence, span and verification, and audits it, in one transaction. */
export function refreshPrograms(context: ScopeContext, programs: readonly BankProgram[], audit: BankAudit): number {
  const { db, key } = context;
  const rowidOf = db.prepare("SELECT rowid FROM raw_nodes WHERE scope_key = ? AND id = ?").pluck();
  const programRowid = db.prepare("SELECT rowid FROM bank_programs WHERE scope_key = ? AND id = ?").pluck();
  const update = db.prepare(
    "UPDATE bank_programs SET cover_from_ms = ?, cover_to_ms = ?, verification = ? WHERE rowid = ?",
  );
  const unlink = db.prepare("DELETE FROM bank_evidence WHERE program_rowid = ?");
  const link = db.prepare("INSERT INTO bank_evidence (program_rowid, raw_node_rowid, ordinal) VALUES (?, ?, ?)");
  try {
    return db
      .transaction(() => {
        let refreshed = 0;
        for (const [index, program] of programs.entries()) {
          const rowids = evidenceRowids(rowidOf, key, program, index);
          const target = programRowid.get(key, program.id);
          if (typeof target !== "number") continue;
          update.run(program.coverFromMs, program.coverToMs, JSON.stringify(program.verification), target);
          unlink.run(target);
          for (const [ordinal, rowid] of [...new Set(rowids)].entries()) link.run(target, rowid, ordinal);
          refreshed++;
        }
        writeAudit(context, audit.action, audit.subject, { ...audit.details, refreshed });
        return refreshed;
      })
      .immediate();
  } catch (error) {
    if (CairnError.is(error)) throw error;
    throw new StoreError("refreshPrograms", error);
  }
}

/** Inside a forget's transaction: removes the programs resting on any of these raw nodes; returns how many. */
export function retireProgramsOn(context: ScopeContext, nodeRowids: readonly number[]): number {
  return context.db
    .prepare(
      `DELETE FROM bank_programs WHERE scope_key = ? AND rowid IN
         (SELECT program_rowid FROM bank_evidence WHERE raw_node_rowid IN (SELECT value FROM json_each(?)))`,
    )
    .run(context.key, JSON.stringify(nodeRowids)).changes;
}

function toBankProgram(row: BankRow): BankProgram {
  return {
    id: row.id,
    question: row.question,
    kind: row.kind,
    program: JSON.parse(row.program) as Record<string, unknown>,
    vector: row.vector ? vectorFromBytes(row.vector) : null,
    space: row.space,
    imageVector: row.image_vector ? vectorFromBytes(row.image_vector) : null,
    imageSpace: row.image_space,
    evidence: JSON.parse(row.evidence) as string[],
    sessions: JSON.parse(row.sessions) as string[],
    coverFromMs: row.cover_from_ms,
    coverToMs: row.cover_to_ms,
    verification: JSON.parse(row.verification) as Record<string, unknown>,
    createdMs: row.created_ms,
  };
}

/** The raw-node rowids a program's evidence names, in its order, each checked to be a raw node of this scope. */
function evidenceRowids(
  rowidOf: { get(key: string, id: string): unknown },
  key: string,
  program: BankProgram,
  index: number,
): number[] {
  if (program.evidence.length === 0) throw new InputError(`programs[${index}].evidence`, "must name raw nodes");
  return program.evidence.map((id) => {
    const rowid = rowidOf.get(key, id);
    if (typeof rowid !== "number")
      throw new InputError(`programs[${index}].evidence`, `${id} is no raw node of this scope`);
    return rowid;
  });
}
