/**
 * What decision 037 changed in what a Postgres document holds: every turn of a dataset, made into
 * its lexical document as a write makes it (contextual index text with the default settings, CJK
 * bigrams), cut by PostgreSQL's `english` configuration (the terms before) and by FTS5's tokenizer
 * in the process (the terms now). Prints per document the distinct terms (= postings written, the
 * server's ingest work per document) and the length, both ways, and the process CPU FTS5's cut costs
 * per document. Deterministic counts; the CPU figure is this process's own (`process.cpuUsage`).
 *
 *   CAIRN_DATA=../shared/data npx tsx bench/perf/postgres-terms.ts --dataset locomo
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { loadDataset, resolveDataDir } from "../../src/bench/datasets/index.ts";
import { startThrowawayCluster } from "../../src/bench/postgres/throwaway-cluster.ts";
import { contextualTexts, defaultIndexTextConfig } from "../../src/store/index-text.ts";
import { lexicalDocument } from "../../src/store/lexical-text.ts";
import { documentTerms } from "../../src/store/postgres/lexical-terms.ts";

const { values } = parseArgs({
  options: { dataset: { type: "string", default: "locomo" }, data: { type: "string" } },
});
const dataset = await loadDataset(values.dataset as "locomo", resolveDataDir(values.data));
const bodies: string[] = [];
for (const history of dataset.histories) {
  for (const session of history.sessions) {
    const texts = contextualTexts(
      session.turns.map((turn) => ({
        speaker: turn.speaker ?? null,
        text: turn.text ?? "",
        imageText: (turn.images ?? []).map((image) => image.caption ?? "").join("\n"),
        timeMs: Date.parse(turn.time ?? session.time),
      })),
      defaultIndexTextConfig,
    );
    bodies.push(...texts.map((text) => lexicalDocument(text)));
  }
}

const started = process.cpuUsage();
const cut = documentTerms(bodies);
const cpu = process.cpuUsage(started);
const fts5 = { terms: 0, length: 0 };
for (const document of cut) {
  fts5.terms += document.terms.length;
  fts5.length += document.length;
}

const server = await startThrowawayCluster();
const client = new pg.Client({ connectionString: server.adminUrl });
const english = { terms: 0, length: 0 };
try {
  await client.connect();
  for (let start = 0; start < bodies.length; start += 2_000) {
    const [row] = (
      await client.query<{ terms: string; length: string }>(
        `SELECT sum(cardinality(tsvector_to_array(v))) AS terms,
           sum((SELECT coalesce(sum(array_length(u.positions, 1)), 0) FROM unnest(v) u)) AS length
         FROM (SELECT to_tsvector('english', b) AS v FROM unnest($1::text[]) AS b) x`,
        [bodies.slice(start, start + 2_000)],
      )
    ).rows;
    english.terms += Number(row?.terms ?? 0);
    english.length += Number(row?.length ?? 0);
  }
} finally {
  await client.end();
  server.stop();
}

const per = (total: number) => (total / bodies.length).toFixed(2);
console.log(`${values.dataset}: ${bodies.length} text documents (turns' contextual index text)`);
console.log(
  `distinct terms (postings) per document: english ${per(english.terms)}, FTS5 ${per(fts5.terms)} (×${(fts5.terms / english.terms).toFixed(2)})`,
);
console.log(
  `length per document: english ${per(english.length)}, FTS5 ${per(fts5.length)} (×${(fts5.length / english.length).toFixed(2)})`,
);
console.log(`FTS5 cut in the process: ${((cpu.user + cpu.system) / bodies.length).toFixed(1)} µs CPU per document`);
