import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { type QuestionScore, summarise, summariseByCategory } from "../../src/bench/metrics.ts";
import { keptSections, keptSectionsMarker } from "../../src/bench/report/benchmarks-md.ts";
import { type BenchResultSummary, renderBenchmarksMarkdown, writeReport } from "../../src/bench/report/index.ts";
import { placeLabels } from "../../src/bench/report/plots.ts";
import { writeResults } from "../../src/bench/report/write-results.ts";
import type { BenchResult } from "../../src/bench/run-bench.ts";
import { InputError } from "../../src/core/errors.ts";

interface QuestionSpec {
  readonly id: string;
  readonly category: string;
  readonly goldTurns?: readonly string[];
  readonly goldSessions?: readonly string[];
  readonly retrieved: readonly string[];
  readonly tokens: number;
  readonly latencyMs: number;
}

/** A scored question, its metrics worked out the way `scoreQuestion` would from turn ids alone. */
function score(spec: QuestionSpec): QuestionScore {
  const turns = spec.goldTurns ?? [];
  const sessions = spec.goldSessions ?? [];
  const found = turns.filter((turn) => spec.retrieved.includes(turn)).length;
  const turnRecall = turns.length === 0 ? null : found / turns.length;
  const sessionsRead = new Set(spec.retrieved.map((turn) => turn.split(":")[0]));
  const sessionRecall =
    sessions.length === 0 ? null : sessions.filter((session) => sessionsRead.has(session)).length / sessions.length;
  const first = spec.retrieved.findIndex((turn) => turns.includes(turn));
  const hit = (k: number) => (turns.length === 0 ? null : first >= 0 && first < k ? 1 : 0);
  return {
    id: spec.id,
    category: spec.category,
    recall: { turn: turnRecall, session: sessionRecall, image: null },
    routeHit: turns.length > 0 ? turnRecall : sessionRecall,
    supportRecall: turns.length > 0 ? turnRecall : sessionRecall,
    hitAt: { 1: hit(1), 5: hit(5), 10: hit(10) },
    mrr: turns.length === 0 ? null : first >= 0 ? 1 / (first + 1) : 0,
    imageHit: null,
    textTokens: spec.tokens,
    images: 0,
    latencyMs: spec.latencyMs,
    emptyGold: turns.length === 0 && sessions.length === 0,
    retrievedTurns: spec.retrieved,
    gold: { turns, sessions, images: [] },
  };
}

function result(dataset: string, method: string, specs: readonly QuestionSpec[]): BenchResult {
  const questions = specs.map(score);
  return {
    dataset,
    method,
    description: `${method} over ${dataset}`,
    config: {
      profile: "offline",
      models: { text: "use-lite", image: null, imageReaders: ["tesseract"] },
      budget: { pages: 3, rawNodes: 12, images: 8, textTokens: 12_000 },
      search: { rrfK: 60, perChannel: 10 },
      limit: null,
      date: "2025-05-04T10:11:12.000Z",
      machine: { cpu: "Test CPU", cores: 2, node: "v20.20.2" },
    },
    ingest: { histories: 2, sessions: 6, rawNodes: 1_500, ms: 3_000 },
    peakRssMb: 512.4,
    summary: summarise(questions),
    byCategory: summariseByCategory(questions),
    notes: [dataset === "locomo" ? "2 evidence ids <unresolved> & skipped" : "1 image missing"],
    warnings: method === "cairn" ? ["pack cut at 12 raw nodes (×3)"] : [],
    questions,
  };
}

/** LoCoMo-like: turn gold everywhere, one question without gold. Full context reads everything. */
function locomoResults(): BenchResult[] {
  const question = (id: string, category: string, goldTurns: string[], retrieved: string[], tokens: number) => ({
    id,
    category,
    goldTurns,
    goldSessions: [...new Set(goldTurns.map((turn) => turn.split(":")[0] ?? ""))],
    retrieved,
    tokens,
    latencyMs: tokens / 100,
  });
  return [
    result("locomo", "full-context", [
      question("conv-1:q1", "multi-hop", ["D1:3", "D2:4"], ["D1:1", "D1:3", "D2:4"], 20_000),
      question("conv-1:q2", "temporal", ["D1:1"], ["D1:1", "D1:3", "D2:4"], 20_000),
      question("conv-1:q3", "temporal", [], [], 20_000),
    ]),
    result("locomo", "bm25", [
      question("conv-1:q1", "multi-hop", ["D1:3", "D2:4"], ["D1:3", "D9:9"], 400),
      question("conv-1:q2", "temporal", ["D1:1"], ["D9:9", "D1:1"], 600),
      question("conv-1:q3", "temporal", [], ["D1:1"], 500),
    ]),
    result("locomo", "cairn", [
      question("conv-1:q1", "multi-hop", ["D1:3", "D2:4"], ["D2:4", "D1:3"], 300),
      question("conv-1:q2", "temporal", ["D1:1"], ["D1:1"], 350),
      question("conv-1:q3", "temporal", [], ["D3:1"], 250),
    ]),
  ];
}

/** Mem-Gallery-like: the VS category has session gold only. */
function memGalleryResults(): BenchResult[] {
  const specs = (retrieved: string[]): QuestionSpec[] => [
    { id: "mg-1", category: "FR", goldTurns: ["D1:2"], goldSessions: ["D1"], retrieved, tokens: 800, latencyMs: 4 },
    { id: "mg-2", category: "VS", goldSessions: ["D2"], retrieved, tokens: 900, latencyMs: 6 },
  ];
  return [
    result("mem-gallery", "bm25", specs(["D1:2", "D1:5"])),
    result("mem-gallery", "cairn", specs(["D2:1", "D1:2"])),
  ];
}

function section(markdown: string, dataset: string): string {
  const start = markdown.indexOf(`\n## ${dataset}\n`);
  assert.ok(start >= 0, `section ${dataset}`);
  const next = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, next === -1 ? undefined : next);
}

/** Enough of XML 1.0 to catch what a broken SVG writer produces: unbalanced tags, bare `<` or `&`. */
function assertWellFormedXml(text: string): void {
  const token =
    /<\?[^?]*\?>|<!--[\s\S]*?-->|<(\/?)([A-Za-z_][\w:.-]*)((?:\s+[A-Za-z_][\w:.-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  const entity = /&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);/g;
  const open: string[] = [];
  let index = 0;
  let roots = 0;
  while (index < text.length) {
    const lt = text.indexOf("<", index);
    const chars = text.slice(index, lt === -1 ? undefined : lt);
    assert.ok(!chars.replace(entity, "").includes("&"), `bare & near ${index}`);
    if (lt === -1) break;
    token.lastIndex = lt;
    const match = token.exec(text);
    assert.ok(match, `malformed markup at ${lt}: ${text.slice(lt, lt + 60)}`);
    const [whole, closing, name, attributes, selfClosing] = match;
    assert.ok(!(attributes ?? "").replace(entity, "").includes("&"), `bare & in attributes of <${name}>`);
    if (name !== undefined) {
      if (closing) assert.equal(open.pop(), name, `closing </${name}> at ${lt}`);
      else if (!selfClosing) {
        if (open.length === 0) roots++;
        open.push(name);
      } else if (open.length === 0) roots++;
    }
    index = lt + whole.length;
  }
  assert.deepEqual(open, [], "unclosed elements");
  assert.equal(roots, 1, "one root element");
}

describe("bench report", () => {
  let dir: string;
  let outDir: string;
  let benchmarksFile: string;
  let files: string[];
  let skipped: readonly { file: string; reason: string }[];
  let markdown: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "cairn-report-"));
    outDir = path.join(dir, "bench", "results");
    benchmarksFile = path.join(dir, "BENCHMARKS.md");
    // An earlier run of another dataset, and JSON that is not a result, already sit in the folder.
    await writeResults(memGalleryResults(), outDir);
    await writeFile(path.join(outDir, "perf-search.json"), JSON.stringify({ name: "perf", p95Ms: 3 }));
    await writeFile(path.join(outDir, "broken.json"), "{");
    const report = await writeReport(locomoResults(), {
      outDir,
      benchmarksFile,
      commands: ["npx cairn bench --dataset locomo --method all"],
    });
    files = report.files;
    skipped = report.skipped;
    markdown = await readFile(benchmarksFile, "utf8");
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("writes a summary JSON and a per-question JSONL per result", async () => {
    for (const expected of locomoResults()) {
      const base = path.join(outDir, `locomo-${expected.method}`);
      assert.ok(files.includes(`${base}.json`) && files.includes(`${base}.questions.jsonl`));
      const summary = JSON.parse(await readFile(`${base}.json`, "utf8")) as Record<string, unknown>;
      assert.equal("questions" in summary, false);
      const { questions, ...rest } = expected;
      assert.deepEqual({ ...summary, config: { ...(summary.config as object), date: rest.config.date } }, rest);

      const lines = (await readFile(`${base}.questions.jsonl`, "utf8")).trimEnd().split("\n");
      assert.equal(lines.length, questions.length);
      lines.forEach((line, index) => {
        const parsed = JSON.parse(line) as QuestionScore;
        const question = questions[index];
        assert.ok(question);
        assert.deepEqual(Object.keys(parsed).slice(0, 4), ["id", "category", "gold", "retrievedTurns"]);
        assert.deepEqual(parsed, JSON.parse(JSON.stringify(question)));
        assert.deepEqual(parsed.retrievedTurns, question.retrievedTurns);
      });
    }
  });

  test("refuses two results that would write the same file", async () => {
    const [first] = locomoResults();
    assert.ok(first);
    await assert.rejects(writeResults([first, first], path.join(dir, "twice")), InputError);
  });

  test("skips JSON that is not a result and says why", () => {
    assert.deepEqual(skipped.map((entry) => path.basename(entry.file)).sort(), ["broken.json", "perf-search.json"]);
    assert.match(skipped.find((entry) => entry.file.endsWith("broken.json"))?.reason ?? "", /not JSON/);
    assert.doesNotMatch(markdown, /perf|p95Ms|broken/);
  });

  test("the header says how the results were produced", () => {
    assert.match(markdown, /```sh\nnpx cairn bench --dataset locomo --method all\n```/);
    assert.match(markdown, /- \*\*Profile\*\*: `offline`/);
    assert.match(markdown, /- \*\*Models\*\*: text `use-lite`, image none, image readers `tesseract`/);
    assert.match(markdown, /- \*\*Budget\*\*: 3 index pages, 12 raw nodes, 8 images, 12,000 text tokens/);
    assert.match(markdown, /- \*\*Search\*\*: RRF k = 60, 10 candidates per channel/);
    assert.match(markdown, /- \*\*Machine\*\*: Test CPU, 2 cores, Node 20\.20\.2/);
    assert.match(markdown, /- \*\*Date\*\*: 2025-05-04 10:11 UTC/);
  });

  test("reports every dataset in the folder, one row per method in run order", () => {
    assert.ok(markdown.indexOf("\n## locomo\n") < markdown.indexOf("\n## mem-gallery\n"));
    const locomo = section(markdown, "locomo");
    const main = locomo.split("### By category")[0] ?? "";
    const methodRows = main.split("\n").filter((line) => /^\| `[^`]+` \| [\d.—]/.test(line));
    // The main table: one row per method, in run order.
    assert.deepEqual(
      methodRows.map((line) => line.split(" | ")[0]),
      ["| `full-context`", "| `bm25`", "| `cairn`"],
    );
    // bm25: turn and session recall (0.5 + 1) / 2, hit@10 1, MRR (1 + 0.5) / 2, tokens (400 + 600 + 500) / 3, latency 4, 6.
    assert.ok(
      locomo.includes("| `bm25` | 0.750 | 0.750 | — | 0.750 | 0.750 | 1.000 | 0.750 | — | 500 | 0.00 | 5.0 | 6.0 |"),
      locomo,
    );
    assert.ok(locomo.includes("| `full-context` | 1.000 | 1.000 | — | 1.000 | 1.000 | 1.000 | 0.750 | — | 20,000 |"));
    assert.match(locomo, /3 questions; 1 have no gold evidence and are reported apart/);
    assert.match(
      locomo,
      /2 histories, 6 sessions, 1,500 raw nodes in 3\.0 s \(500\.0 raw nodes\/s\)\. Peak RSS 512 MB/,
    );
    assert.doesNotMatch(locomo, /different settings/);
  });

  test("has a per-category table, at session level where a category has no turn gold", () => {
    const locomo = section(markdown, "locomo");
    assert.match(locomo, /### By category/);
    assert.match(locomo, /\| Category \| Level \| Questions \| `full-context` \| `bm25` \| `cairn` \|/);
    assert.ok(locomo.includes("| multi-hop | turn | 1 | 1.000 | 0.500 | 1.000 |"), locomo);
    assert.ok(locomo.includes("| temporal | turn | 2 (1 without gold) | 1.000 | 1.000 | 1.000 |"), locomo);
    const memGallery = section(markdown, "mem-gallery");
    assert.ok(memGallery.includes("| FR | turn | 1 | 1.000 | 1.000 |"), memGallery);
    assert.ok(memGallery.includes("| VS | session | 1 | 0.000 | 1.000 |"), memGallery);
  });

  test("keeps dataset notes and warnings in collapsible blocks, escaped", () => {
    const locomo = section(markdown, "locomo");
    assert.match(
      locomo,
      /<details>\n<summary>Dataset notes \(1\)<\/summary>\n\n- 2 evidence ids &lt;unresolved&gt; &amp; skipped/,
    );
    assert.match(locomo, /- `cairn`: cairn over locomo\n {2}- warning: pack cut at 12 raw nodes \(×3\)/);
  });

  test("draws two valid SVG plots per dataset and embeds them under their dataset", async () => {
    for (const dataset of ["locomo", "mem-gallery"]) {
      const methods = dataset === "locomo" ? ["full-context", "bm25", "cairn"] : ["bm25", "cairn"];
      for (const [kind, titles] of [
        ["recall-vs-tokens", ["Mean text tokens per pack (log scale)", "Turn-level evidence recall"]],
        ["by-category", ["Category", "Turn-level evidence recall"]],
      ] as const) {
        const file = path.join(outDir, `${dataset}-${kind}.svg`);
        assert.ok(files.includes(file), file);
        const svg = await readFile(file, "utf8");
        assert.ok(svg.startsWith("<svg"), svg.slice(0, 40));
        assertWellFormedXml(svg);
        for (const text of [...methods, ...titles, dataset]) assert.ok(svg.includes(text), `${file}: ${text}`);
        assert.match(svg, /font-family="sans-serif"/);
        assert.ok(section(markdown, dataset).includes(`![${dataset}-${kind}](bench/results/${dataset}-${kind}.svg)`));
      }
    }
    assert.ok(files.at(-1) === benchmarksFile);
  });

  test("calls out rows that come from different runs", () => {
    const rows: BenchResultSummary[] = memGalleryResults().map(({ questions: _questions, ...rest }) => rest);
    const [first, second] = rows;
    assert.ok(first && second);
    const stale = { ...second, config: { ...second.config, limit: 1, date: "2025-04-01T08:00:00.000Z" } };
    const text = renderBenchmarksMarkdown([first, stale], { plots: [], commands: [] });
    assert.match(text, /\*\*Note:\*\* these rows come from runs with different settings/);
    assert.match(text, /- \*\*Histories\*\*: all \(mem-gallery\); first 1 \(--limit\) \(mem-gallery\)/);
  });
});

describe("bench report: maintenance and knowledge update", () => {
  test("reports knowledge-update recall against tri-path, and the active index of methods that keep one", () => {
    const [fullContext, bm25, cairn] = locomoResults() as [BenchResult, BenchResult, BenchResult];
    const triPath = { ...bm25, method: "tri-path" };
    const maintained: BenchResult = {
      ...cairn,
      maintenance: {
        policy: "ramu",
        episodes: 2,
        utilisationMean: 0.944,
        activeEntriesMean: 34,
        indexTokensMean: 5_010,
        overflowRepairsPerEpisode: 21.5,
        pointersPerEpisode: 588.2,
        rawNodesPerEpisode: 588.2,
        episodesWithAllPointers: 2,
        violations: 0,
        actions: { "index.keep": 40, "index.overflow": 43 },
      },
    };
    const markdown = renderBenchmarksMarkdown([fullContext, triPath, maintained], { plots: [], commands: [] });
    const update = markdown.slice(markdown.indexOf("### Knowledge update"));
    assert.match(update, /latest state \(temporal\)/);
    // temporal: tri-path finds D1:1 for the one question with gold (recall 1); so does cairn: a 0-point difference.
    // MRR: tri-path found D1:1 second (1/2), cairn first (1).
    assert.match(update, /\| `tri-path` \| 1\.000 \| 0\.0 \| 0\.500 \|/);
    assert.match(update, /\| `cairn` \| 1\.000 \| 0\.0 \| 1\.000 \|/);
    const index = markdown.slice(markdown.indexOf("### Active index after replay"));
    assert.match(index, /\| `cairn` \| 0\.944 \| 34\.0 \| 5,010 \| 21\.50 \| 588\.2 \| 588\.2 \| 2\/2 \| 0 \|/);
    assert.doesNotMatch(
      index.split("\n\n").slice(0, 3).join("\n"),
      /`tri-path` \|/,
      "methods without an index have no row",
    );
  });
});

describe("placeLabels", () => {
  test("keeps a lone label at its point and pushes clustered labels apart", () => {
    const placed = placeLabels(
      [
        { text: "bm25", tokens: 410, recall: 0.57 },
        { text: "tri-path, cairn", tokens: 430, recall: 0.6 },
        { text: "caption-rag", tokens: 440, recall: 0.59 },
        { text: "full-context", tokens: 22_000, recall: 0.59 },
      ],
      [200, 90_000],
    );
    const byText = new Map(placed.map((label) => [label.text, label]));
    assert.equal(byText.get("tri-path, cairn")?.labelRecall, 0.6);
    assert.equal(byText.get("full-context")?.labelRecall, 0.59);
    const cluster = ["tri-path, cairn", "caption-rag", "bm25"].map((text) => byText.get(text)?.labelRecall ?? NaN);
    for (let index = 1; index < cluster.length; index++) {
      // 13 px of a 320 px tall plot between lines.
      assert.ok((cluster[index - 1] ?? 0) - (cluster[index] ?? 0) >= 13 / 320 - 1e-9, String(cluster));
    }
  });

  test("settles labels whose pushed position comes back a hair closer than a line in floating point", () => {
    // At recall 0.201 a label pushed one line below another lands 12.99999999999997 px away from it:
    // comparing without a tolerance blocked on the same label forever (the bench run that found it hung).
    const placed = placeLabels(
      ["a", "b", "c", "d"].map((text) => ({ text, tokens: 500, recall: 0.201 })),
      [200, 90_000],
    );
    const recalls = placed.map((label) => label.labelRecall).sort((a, b) => b - a);
    for (let index = 1; index < recalls.length; index++) {
      assert.ok((recalls[index - 1] ?? 0) - (recalls[index] ?? 0) >= 13 / 320 - 1e-6, String(recalls));
    }
  });
});

describe("BENCHMARKS.md kept sections", () => {
  test("what follows the marker survives a regeneration; a file without it keeps nothing", () => {
    const handWritten = `${keptSectionsMarker}\n\n## Postgres\n\nside-by-side figures\n`;
    assert.equal(keptSections(`# Benchmarks\n\nold tables\n\n${handWritten}`), `\n${handWritten}`);
    assert.equal(keptSections("# Benchmarks\n\nold tables\n"), "");
    assert.equal(keptSections(undefined), "");
  });
});
