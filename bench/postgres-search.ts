/**
 * The Postgres store's search choices, measured (issue 11): vector search filtered by scope first
 * — an exact scan of the scope's rows, the store's in-process usearch index above `exactBelow`
 * (decision 025; before it, pgvector HNSW with iterative scans), and a pgvector HNSW index (built
 * here) that filters a fixed top-ef afterwards (what iterative scans
 * replace) — and BM25 with per-tenant statistics counted at query time; then how far that BM25
 * agrees with the SQLite store's FTS5 on the same corpus, through the seam of both.
 *
 *   npx tsx bench/postgres-search.ts --url postgres://cairn_app@127.0.0.1:5432/bench
 *   npx tsx bench/postgres-search.ts --url … --size 100000 --scopes 10 --dims 384 --queries 200
 *
 * `--url` names an empty database with pgvector available, as a role that owns it (not a superuser).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { normalise } from "../src/core/vectors.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { vectorLiteral } from "../src/store/postgres/vector-spaces.ts";
import type { RawNodeWrite, SessionWrite, VectorSpace } from "../src/store/records.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/store.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    size: { type: "string", default: "100000" },
    scopes: { type: "string", default: "10" },
    dims: { type: "string", default: "384" },
    queries: { type: "string", default: "200" },
    "agreement-size": { type: "string", default: "10000" },
    /** `own`: each scope's vectors come from clusters of its own (people talk about their own things); `shared`: every scope draws from the same clusters, the worst case for filtering after HNSW. */
    mix: { type: "string", default: "own" },
    /** Only the vector and BM25 timings, not the FTS5 agreement. */
    "skip-agreement": { type: "boolean", default: false },
  },
});
if (!values.url) throw new Error("--url postgres://… is required (an empty database with pgvector)");
const url = values.url;
const size = Number(values.size);
const scopeCount = Number(values.scopes);
const dims = Number(values.dims);
const queryCount = Number(values.queries);
const agreementSize = Number(values["agreement-size"]);
const sharedClusters = values.mix === "shared";
const tenant = "bench";
const space: VectorSpace = { name: `text:bench-${dims}`, kind: "text", dimensions: dims };

// ── Deterministic data: clustered unit vectors, Zipf-distributed words ─────────────────────────
let seed = 42;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};
const gaussian = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
const centres = Array.from({ length: 200 }, () => Float32Array.from({ length: dims }, gaussian));
const near = (centre: Float32Array, spread: number) =>
  normalise(Float32Array.from(centre, (value) => value + spread * gaussian()));
const vocabulary = Array.from({ length: 20_000 }, (_, index) => `w${index.toString(36)}x`);
const zipf = () => vocabulary[Math.min(vocabulary.length - 1, Math.floor(Math.exp(random() * Math.log(20_000))))];
const sentence = (words: number) => Array.from({ length: words }, zipf).join(" ");

const scopeOf = (index: number) => ({ tenant, user: `u${index}` });

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await work();
  return { ms: performance.now() - start, result };
}

function sessionWrite(key: string, texts: readonly string[], vectors: readonly Float32Array[] | null): SessionWrite {
  const rawNodes: RawNodeWrite[] = texts.map((text, turn) => ({
    turn,
    speaker: "Ana",
    role: null,
    text,
    timeMs: Date.UTC(2024, 0, 1) + turn,
    source: null,
    uri: null,
    metadata: {},
    images: [],
    textVectors: vectors ? { [space.name]: vectors[turn] ?? new Float32Array(dims) } : {},
    imageVectors: [],
  }));
  return {
    key,
    timeMs: Date.UTC(2024, 0, 1),
    source: null,
    contentHash: key,
    blobs: [],
    rawNodes,
    spaces: vectors ? [space] : [],
    index: {
      plan: { baseVersion: null, ops: [], audits: [], warnings: [], overflowRepairs: 0 },
      spaces: { text: space.name, image: null },
    },
  };
}

// ── Load: one seam commit per scope creates the space, then bulk rows through SQL ──────────────
async function load(): Promise<Float32Array[][]> {
  const store = await PostgresStore.open({ url });
  const perScope = Math.floor(size / scopeCount);
  const vectorsByScope: Float32Array[][] = [];
  const rowidsOf: number[] = [];
  for (let scope = 0; scope < scopeCount; scope++) {
    const first = near(centres[scope % centres.length] as Float32Array, 0.6);
    await store.forScope(scopeOf(scope)).commitSession(sessionWrite("seed", [sentence(12)], [first]));
    vectorsByScope.push([first]);
  }
  await store.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const [{ table_name: table } = { table_name: "" }] = (
    await client.query<{ table_name: string }>("SELECT table_name FROM vector_spaces WHERE name = $1", [space.name])
  ).rows;
  await client.query(`DROP INDEX ${table}_hnsw`);
  const started = performance.now();
  for (let scope = 0; scope < scopeCount; scope++) {
    const key = `${tenant}/u${scope}/`;
    await client.query(`BEGIN; SET LOCAL cairn.tenant = '${tenant}'`);
    const [session] = (await client.query<{ rowid: string }>("SELECT rowid FROM sessions WHERE scope_key = $1", [key]))
      .rows;
    rowidsOf.push(Number(session?.rowid));
    for (let done = 1; done < perScope; done += 2_000) {
      const batch = Math.min(2_000, perScope - done);
      const ids = Array.from({ length: batch }, (_, index) => `rn_b${scope}_${done + index}`);
      const texts = ids.map(() => sentence(8 + Math.floor(random() * 24)));
      // Each scope mixes a few clusters, so a scope's nearest neighbours are not the whole scope.
      const vectors = ids.map(() =>
        near(centres[(scope * 7 + Math.floor(random() * 20)) % centres.length] as Float32Array, 0.6),
      );
      vectorsByScope[scope]?.push(...vectors);
      await client.query(
        `WITH nodes AS (
           INSERT INTO raw_nodes (id, tenant, scope_key, session_rowid, turn, speaker, text, time_ms, metadata)
           SELECT id, $1, $2, $3, $4 + position, 'Ana', text, 1704067200000 + position, '{}'
           FROM unnest($5::text[], $6::text[]) WITH ORDINALITY AS n (id, text, position)
           RETURNING rowid, text, turn
         ), sized AS (
           SELECT rowid, terms, coalesce((SELECT sum(array_length(u.positions, 1)) FROM unnest(terms) u), 0)::int AS length
           FROM (SELECT rowid, to_tsvector('english', text) AS terms FROM nodes) documents
         ), docs AS (
           INSERT INTO lexical_docs (raw_node_rowid, field, tenant, scope_key, length)
           SELECT rowid, 'text', $1, $2, length FROM sized
         ), postings AS (
           INSERT INTO lexical_postings (scope_key, field, lexeme, raw_node_rowid, tenant, tf, length)
           SELECT $2, 'text', u.lexeme, s.rowid, $1, array_length(u.positions, 1), s.length FROM sized s, unnest(s.terms) u
         )
         INSERT INTO ${table} (raw_node_rowid, ordinal, tenant, scope_key, session_rowid, time_ms, speaker, embedding)
         SELECT n.rowid, -1, $1, $2, $3, 1704067200000, 'Ana', v.embedding::vector
         FROM nodes n JOIN unnest($7::text[]) WITH ORDINALITY AS v (embedding, position) ON n.turn = $4 + v.position`,
        [tenant, key, rowidsOf[scope], done - 1, ids, texts, vectors.map(vectorLiteral)],
      );
    }
    await client.query("COMMIT");
  }
  // The bulk rows bypassed the store: its BM25 statistics are recounted once, as commits would have kept them.
  await client.query(`BEGIN; SET LOCAL cairn.tenant = '${tenant}'`);
  await client.query("DELETE FROM lexical_terms WHERE tenant = $1", [tenant]);
  await client.query("DELETE FROM lexical_stats WHERE tenant = $1", [tenant]);
  await client.query(
    `INSERT INTO lexical_terms (tenant, field, lexeme, df)
     SELECT tenant, field, lexeme, count(*) FROM lexical_postings WHERE tenant = $1 GROUP BY 1, 2, 3`,
    [tenant],
  );
  await client.query(
    `INSERT INTO lexical_stats (tenant, field, docs, total_length)
     SELECT tenant, field, count(*), sum(length) FROM lexical_docs WHERE tenant = $1 GROUP BY 1, 2`,
    [tenant],
  );
  await client.query("COMMIT");
  const loaded = performance.now() - started;
  await client.query("SET maintenance_work_mem = '1GB'");
  const build = await timed(() =>
    client.query(`CREATE INDEX ${table}_hnsw ON ${table} USING hnsw (embedding vector_cosine_ops)`),
  );
  await client.query("ANALYZE");
  await client.end();
  console.log(
    `loaded ${size} raw nodes (${scopeCount} scopes of one tenant, ${dims}-d) in ${(loaded / 1000).toFixed(1)} s; HNSW build ${(build.ms / 1000).toFixed(1)} s`,
  );
  return vectorsByScope;
}

async function vectorSearch(vectorsByScope: Float32Array[][]): Promise<void> {
  const exact = await PostgresStore.open({ url, vectorSearch: { exactBelow: Number.MAX_SAFE_INTEGER } });
  // The store's path above exactBelow: this process's usearch index of the scope, candidates scored exactly.
  const approximate = await PostgresStore.open({ url, vectorSearch: { exactBelow: 0 } });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const [{ table_name: table } = { table_name: "" }] = (
    await client.query<{ table_name: string }>("SELECT table_name FROM vector_spaces WHERE name = $1", [space.name])
  ).rows;
  const rows = new Map<string, { ms: number[]; recall: number[] }>();
  const record = (name: string, ms: number, found: readonly string[], truth: readonly string[]) => {
    const row = rows.get(name) ?? { ms: [], recall: [] };
    row.ms.push(ms);
    row.recall.push(truth.filter((id) => found.includes(id)).length / truth.length);
    rows.set(name, row);
  };
  for (let query = 0; query < queryCount; query++) {
    const scope = Math.floor(random() * scopeCount);
    const pool = vectorsByScope[scope] ?? [];
    const vector = near(pool[Math.floor(random() * pool.length)] as Float32Array, 0.05);
    const truth = await timed(() => exact.forScope(scopeOf(scope)).searchVectors(space.name, vector, { limit: 10 }));
    const truthIds = truth.result.map((hit) => hit.id);
    record("exact scan of the scope (store, below exactBelow)", truth.ms, truthIds, truthIds);
    await approximate.vectorIndexReady(space.name, scopeOf(scope));
    const ann = await timed(() =>
      approximate.forScope(scopeOf(scope)).searchVectors(space.name, vector, { limit: 10 }),
    );
    record(
      "in-process usearch HNSW, candidates scored exactly (store, decision 025)",
      ann.ms,
      ann.result.map((hit) => hit.id),
      truthIds,
    );
    const post = await timed(async () => {
      await client.query(`BEGIN READ ONLY; SET LOCAL cairn.tenant = '${tenant}'; SET LOCAL hnsw.ef_search = 100`);
      // Forces the HNSW index: `scope_key || ''` cannot use the scope's btree (with which the planner
      // would rather sort the scope, an exact scan), and sequential scans are off.
      await client.query("SET LOCAL enable_seqscan = off; SET LOCAL hnsw.iterative_scan = off");
      const found = await client.query<{ id: string }>(
        `SELECT r.id FROM (SELECT raw_node_rowid FROM ${table} WHERE scope_key || '' = $1
           ORDER BY embedding <=> $2::vector LIMIT 10) v JOIN raw_nodes r ON r.rowid = v.raw_node_rowid`,
        [`${tenant}/u${scope}/`, vectorLiteral(vector)],
      );
      await client.query("COMMIT");
      return found.rows.map((row) => row.id);
    });
    record("HNSW, filter after (iterative scan off, ef_search 100)", post.ms, post.result, truthIds);
  }
  console.log(
    `\nvector search, top 10 within one scope (${size / scopeCount} of ${size} vectors, clusters ${sharedClusters ? "shared by all scopes" : "of each scope's own"}), ${queryCount} queries`,
  );
  console.log("| path | p50 ms | p95 ms | recall@10 vs exact |\n|---|---|---|---|");
  for (const [name, { ms, recall }] of rows) {
    const mean = recall.reduce((sum, value) => sum + value, 0) / recall.length;
    console.log(
      `| ${name} | ${percentile(ms, 50).toFixed(2)} | ${percentile(ms, 95).toFixed(2)} | ${mean.toFixed(3)} |`,
    );
  }
  await client.end();
  await exact.close();
  await approximate.close();
}

async function lexicalSearch(): Promise<void> {
  const store = await PostgresStore.open({ url });
  const ms: number[] = [];
  for (let query = 0; query < queryCount; query++) {
    const scope = Math.floor(random() * scopeCount);
    const text = sentence(2 + Math.floor(random() * 3));
    ms.push((await timed(() => store.forScope(scopeOf(scope)).searchLexical("text", text, { limit: 10 }))).ms);
  }
  await store.close();
  console.log(
    `\nBM25 over a tenant of ${size} documents (statistics kept per tenant), top 10, ${queryCount} queries of 2-4 words: p50 ${percentile(ms, 50).toFixed(2)} ms, p95 ${percentile(ms, 95).toFixed(2)} ms`,
  );
}

/** The same corpus through both stores' seams; how many of FTS5's top 10 the Postgres BM25 also returns. */
async function agreement(): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), "cairn-bench-sqlite-"));
  const sqlite = await SqliteStore.open({ path: folder });
  // Another tenant of the same database: its BM25 statistics are its own, whatever the bench tenant holds.
  const postgres = await PostgresStore.open({ url });
  const scope = { tenant: "agree", user: "u" };
  const stores: Store[] = [sqlite, postgres];
  for (let session = 0; session * 100 < agreementSize; session++) {
    const texts = Array.from({ length: 100 }, () => sentence(8 + Math.floor(random() * 24)));
    for (const store of stores) await store.forScope(scope).commitSession(sessionWrite(`s${session}`, texts, null));
  }
  let overlap = 0;
  let compared = 0;
  for (let query = 0; query < queryCount; query++) {
    const text = sentence(2 + Math.floor(random() * 3));
    const [fts5, bm25] = await Promise.all(
      stores.map((store) => store.forScope(scope).searchLexical("text", text, { limit: 10 })),
    );
    if (!fts5?.length || !bm25) continue;
    // Raw-node ids differ between stores: compare by (session, turn) through the text itself.
    const textsOf = async (store: Store, ids: readonly string[]) =>
      (await store.forScope(scope).readRawNodes({ ids })).map((node) => `${node.sessionKey}/${node.turn}`);
    const expected = await textsOf(
      sqlite,
      fts5.map((hit) => hit.id),
    );
    const found = new Set(
      await textsOf(
        postgres,
        bm25.map((hit) => hit.id),
      ),
    );
    overlap += expected.filter((key) => found.has(key)).length / expected.length;
    compared++;
  }
  await sqlite.close();
  await postgres.close();
  rmSync(folder, { recursive: true, force: true });
  console.log(
    `\nagreement with SQLite FTS5 on ${agreementSize} documents: ${((100 * overlap) / compared).toFixed(1)}% of FTS5's top 10 in the Postgres BM25's top 10 (${compared} queries)`,
  );
}

const vectors = await load();
await vectorSearch(vectors);
await lexicalSearch();
if (!values["skip-agreement"]) await agreement();
