import type { Ranked } from "../../core/ranked.ts";
import { queryTerms } from "../query-terms.ts";
import type { SearchFilters } from "../records.ts";
import type { LexicalField } from "../store.ts";
import { type FilterSql, filterSql } from "./filter-sql.ts";
import { toPhrases } from "./fts-query.ts";
import { lexicalTables } from "./lexical-index.ts";
import { queryTokens } from "./lexical-tokens.ts";
import { type LexicalTrace, topLexical, withIds } from "./lexical-top-k.ts";
import { type WalkTrace, walkTopK } from "./lexical-walk.ts";
import type { ScopeContext } from "./scope-context.ts";
import { statement } from "./statements.ts";
import { tenantExists, tenantKeyRange } from "./tenants.ts";

/**
 * Which BM25 pass answers: `index`, block-max MaxScore over Cairn's own lexical index (decision 030,
 * the default), or `fts5`, FTS5's ranking bounded by MaxScore over phrases (decision 021), kept for
 * A/B runs. Set by `CAIRN_LEXICAL_PASS`; the scores and ids are the same either way.
 */
export type LexicalPassKind = "index" | "fts5";

let passKind: LexicalPassKind = process.env.CAIRN_LEXICAL_PASS === "fts5" ? "fts5" : "index";

/** Switches the pass for this process (benchmarks and tests); returns the one before. */
export function useLexicalPass(kind: LexicalPassKind): LexicalPassKind {
  const before = passKind;
  passKind = kind;
  return before;
}

/** What one search did: which pass, and that pass's own trace. */
export interface SearchLexicalTrace {
  pass?: LexicalPassKind | "fts5-phrase";
  fts5?: LexicalTrace;
  walk?: WalkTrace;
}

/**
 * BM25 over raw-node text or image-derived text of one scope; best first. The top `limit` is found
 * without ranking every document that matches a common word: by Cairn's own block-max index, or by
 * FTS5 for a word FTS5 reads as a phrase of several tokens (positions only FTS5 holds).
 */
export function searchLexical(
  context: ScopeContext,
  field: LexicalField,
  query: string,
  options: { limit: number; filters?: SearchFilters },
  trace?: SearchLexicalTrace,
): Ranked[] {
  const phrases = toPhrases(query);
  if (phrases.length === 0) return [];
  // Each tenant has its own FTS tables, so BM25's document counts and lengths come from its rows alone.
  if (!tenantExists(context.db, context.tenantStorage)) return [];
  const tenant = context.tenantStorage;
  const scopeTokenScored = otherScopesStored(context);
  if (passKind === "index" && options.limit > 0) {
    const tokens = queryTokens(queryTerms(query));
    if (tokens.every((token) => token !== null)) {
      if (trace) trace.pass = "index";
      const walkTrace: WalkTrace = { decoded: 0, blocks: 0, scored: 0 };
      if (trace) trace.walk = walkTrace;
      const filter = filterSql(context, options.filters, "r");
      const accept = filter.sql ? acceptor(context, filter) : undefined;
      const hits = walkTopK(
        {
          db: context.db,
          tables: lexicalTables(tenant, field),
          scopeKey: context.key,
          scopeTokenScored,
          limit: options.limit,
          ...(accept ? { accept } : {}),
        },
        tokens as string[],
        walkTrace,
      );
      return withIds(context.db, hits);
    }
  }
  if (trace) {
    trace.pass = passKind === "index" ? "fts5-phrase" : "fts5";
    trace.fts5 = { strategy: "exhaustive", rounds: 0, scored: 0 };
  }
  // The scope token keeps ranking work proportional to this scope when the tenant's other scopes
  // share the table. But FTS5's bm25 counts the documents of every phrase on every query, the
  // token's too: a pass over the whole scope (~5 ms of ~11 at 100k). With no other scope of the
  // tenant stored it cannot exclude anything, so it is left out; the raw_nodes join keeps
  // results scoped either way.
  return topLexical(
    {
      db: context.db,
      table: field === "text" ? tenant.textTable : tenant.imageTextTable,
      scopeKey: context.key,
      scopeToken: scopeTokenScored ? context.scopeToken : null,
      filter: filterSql(context, options.filters, "r"),
      limit: options.limit,
    },
    phrases,
    trace?.fts5,
  );
}

/** Whether a raw node of the scope passes the filters: one indexed lookup per document asked about, remembered. */
function acceptor(context: ScopeContext, filter: FilterSql): (rowid: number) => boolean {
  const check = statement(
    context.db,
    `SELECT EXISTS (SELECT 1 FROM raw_nodes r WHERE r.rowid = ? AND r.scope_key = ? ${filter.sql})`,
    "pluck",
  );
  const known = new Map<number, boolean>();
  return (rowid) => {
    let passes = known.get(rowid);
    if (passes === undefined) {
      passes = check.get(rowid, context.key, ...filter.params) === 1;
      known.set(rowid, passes);
    }
    return passes;
  };
}

/** Two index seeks (the tenant's keys sort around this one), so it costs microseconds at any size. */
function otherScopesStored(context: ScopeContext): boolean {
  const [low, high] = tenantKeyRange(context.tenant);
  return (
    statement(
      context.db,
      `SELECT EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key >= ? AND scope_key < ?)
             OR EXISTS (SELECT 1 FROM raw_nodes WHERE scope_key > ? AND scope_key < ?)`,
      "pluck",
    ).get(low, context.key, context.key, high) === 1
  );
}
