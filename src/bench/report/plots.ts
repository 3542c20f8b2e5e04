import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { ConfigError } from "../../core/errors.ts";
import { type BenchResultSummary, groupByDataset, recallLevel } from "./bench-result-summary.ts";
import { fileSafe } from "./write-results.ts";

export interface PlotOptions {
  /** Method order for legends and bars; methods not listed follow in name order. */
  readonly methodOrder?: readonly string[];
}

/**
 * Draws, per dataset, `<dataset>-recall-vs-tokens.svg` and `<dataset>-by-category.svg` into
 * `outDir`. Returns the paths written.
 *
 * @example
 * const { results } = await readResultSummaries("bench/results");
 * await writePlots(results, "bench/results");
 */
export async function writePlots(
  results: readonly BenchResultSummary[],
  outDir: string,
  options: PlotOptions = {},
): Promise<string[]> {
  await mkdir(outDir, { recursive: true });
  const written: string[] = [];
  for (const [dataset, rows] of groupByDataset(results, options.methodOrder)) {
    const base = path.join(outDir, fileSafe(dataset));
    const plots: [string, TopLevelSpec][] = [
      [`${base}-recall-vs-tokens.svg`, recallVsTokensSpec(dataset, rows)],
      [`${base}-by-category.svg`, byCategorySpec(dataset, rows)],
    ];
    for (const [file, spec] of plots) {
      await writeFile(file, await renderSvg(spec));
      written.push(file);
    }
  }
  return written;
}

/** Renders a Vega-Lite spec to SVG text in-process: no browser, no canvas, no network. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const { vega, vegaLite } = await plotLibraries();
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

let libraries: Promise<{ vega: typeof import("vega"); vegaLite: typeof import("vega-lite") }> | undefined;

/**
 * vega and vega-lite, imported on the first plot. They are development dependencies of Cairn's
 * repository, not of the published package: `cairn bench` from an installed package asks for them
 * (the bench command calls this before it runs anything, so a missing library costs no run).
 */
export function plotLibraries(): Promise<{ vega: typeof import("vega"); vegaLite: typeof import("vega-lite") }> {
  libraries ??= Promise.all([import("vega"), import("vega-lite")]).then(
    ([vega, vegaLite]) => ({ vega, vegaLite }),
    (error: unknown) => {
      libraries = undefined;
      if ((error as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND") throw error;
      throw new ConfigError(
        "the bench's plots need vega and vega-lite, which only Cairn's repository installs: npm install vega@6.4.0 vega-lite@6.4.0",
      );
    },
  );
  return libraries;
}

const font = "sans-serif";
const config = { font, view: { stroke: "#ddd" }, axis: { labelFontSize: 11, titleFontSize: 12 } } as const;

const scatterWidth = 480;
const scatterHeight = 320;
const labelFontSize = 11;
/** Text is measured by estimate in Node (no canvas), so label boxes use the same estimate. */
const labelCharWidth = 0.6 * labelFontSize;
const labelLineHeight = labelFontSize + 2;
const labelGap = 7;

export interface PointLabel {
  readonly text: string;
  readonly tokens: number;
  readonly recall: number;
}

/**
 * Where each point's label goes, in recall units: at its point, or pushed down just enough not to
 * overlap a label above it. Baselines cluster (tri-path and cairn often tie), and a plot whose
 * labels sit on each other is unreadable. Pure.
 */
export function placeLabels(
  labels: readonly PointLabel[],
  tokensDomain: readonly [number, number],
): (PointLabel & { readonly labelRecall: number })[] {
  const [low, high] = tokensDomain.map(Math.log10) as [number, number];
  const xOf = (tokens: number) => (scatterWidth * (Math.log10(tokens) - low)) / Math.max(1e-9, high - low);
  const placed: { left: number; right: number; y: number }[] = [];
  return [...labels]
    .sort((a, b) => b.recall - a.recall || a.tokens - b.tokens)
    .map((label) => {
      const left = xOf(label.tokens) + labelGap;
      const right = left + label.text.length * labelCharWidth;
      let y = scatterHeight * (1 - label.recall);
      for (;;) {
        // The tolerance matters: y = box.y + height can come back a hair under height away from the
        // same box in floating point, which would block forever.
        const blocking = placed.find(
          (box) => box.left < right && left < box.right && Math.abs(box.y - y) < labelLineHeight - 1e-6,
        );
        if (blocking === undefined) break;
        y = blocking.y + labelLineHeight;
      }
      placed.push({ left, right, y });
      return { ...label, labelRecall: 1 - y / scatterHeight };
    });
}

/**
 * Evidence recall against mean text tokens per pack, one labelled point per method. Tokens go on
 * a log scale because full context reads orders of magnitude more than a budgeted pack. Methods at
 * the same point share one label. Pure.
 */
export function recallVsTokensSpec(dataset: string, rows: readonly BenchResultSummary[]): TopLevelSpec {
  const level = recallLevel(rows.map((row) => row.summary)) ?? "turn";
  const points = rows
    .map((row) => ({
      method: row.method,
      // A log axis has no zero; a method that read no text sits at one token.
      tokens: Math.max(1, row.summary.textTokensMean),
      recall: level === "turn" ? row.summary.recallTurn : row.summary.recallSession,
    }))
    .filter((point): point is { method: string; tokens: number; recall: number } => point.recall !== null);
  const coincident = new Map<string, { tokens: number; recall: number; methods: string[] }>();
  for (const point of points) {
    const key = `${point.tokens.toPrecision(3)}:${point.recall.toFixed(3)}`;
    const group = coincident.get(key) ?? { tokens: point.tokens, recall: point.recall, methods: [] };
    group.methods.push(point.method);
    coincident.set(key, group);
  }
  const tokens = points.map((point) => point.tokens);
  // Room on the right for the last label; no "nice" rounding, so label placement knows the scale.
  const domain: [number, number] = tokens.length === 0 ? [1, 10] : [Math.min(...tokens) / 2, Math.max(...tokens) * 4];
  const labels = placeLabels(
    [...coincident.values()].map((group) => ({
      text: group.methods.join(", "),
      tokens: group.tokens,
      recall: group.recall,
    })),
    domain,
  );
  const x = {
    field: "tokens",
    type: "quantitative" as const,
    scale: { type: "log" as const, domain, nice: false },
    title: "Mean text tokens per pack (log scale)",
  };
  const y = {
    type: "quantitative" as const,
    scale: { domain: [0, 1] },
    title: `${level === "turn" ? "Turn" : "Session"}-level evidence recall`,
  };
  const methods = rows.map((row) => row.method);
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: `${dataset}: evidence recall vs. text read`, subtitle: budgetLine(rows[0]) },
    width: scatterWidth,
    height: scatterHeight,
    config,
    layer: [
      {
        data: { values: points },
        mark: { type: "point", filled: true, size: 70, opacity: 0.9 },
        encoding: {
          x,
          y: { ...y, field: "recall" },
          color: { field: "method", type: "nominal", scale: { domain: methods }, title: "Method" },
          shape: { field: "method", type: "nominal", scale: { domain: methods }, title: "Method" },
        },
      },
      {
        data: { values: labels },
        mark: { type: "text", align: "left", baseline: "middle", dx: labelGap, fontSize: labelFontSize, font },
        encoding: { x, y: { ...y, field: "labelRecall" }, text: { field: "text", type: "nominal" } },
      },
    ],
  };
}

/**
 * Grouped bars of recall per category, one bar per method. Categories without turn gold show
 * session recall and say so in their label. Pure.
 */
export function byCategorySpec(dataset: string, rows: readonly BenchResultSummary[]): TopLevelSpec {
  const categories = [...new Set(rows.flatMap((row) => Object.keys(row.byCategory)))].sort();
  const bars = categories.flatMap((category) => {
    const summaries = rows.map((row) => row.byCategory[category]);
    const level = recallLevel(summaries);
    if (level === null) return [];
    return rows.flatMap((row) => {
      const summary = row.byCategory[category];
      const recall = level === "turn" ? summary?.recallTurn : summary?.recallSession;
      if (recall === null || recall === undefined) return [];
      const label = level === "turn" ? category : `${category} (session)`;
      return [{ category: label, method: row.method, recall, questions: summary?.questions ?? 0 }];
    });
  });
  const methods = rows.map((row) => row.method);
  const subtitle = [budgetLine(rows[0])];
  if (bars.some((bar) => bar.category.endsWith(" (session)"))) {
    subtitle.push("categories marked (session) have no turn gold and show session recall");
  }
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: `${dataset}: turn recall by category`, subtitle },
    width: { step: Math.max(12, 60 / Math.max(1, methods.length)), for: "offset" },
    height: 280,
    config,
    data: { values: bars },
    mark: { type: "bar" },
    encoding: {
      x: {
        field: "category",
        type: "nominal",
        sort: null,
        title: "Category",
        axis: { labelAngle: -30, labelLimit: 200 },
      },
      xOffset: { field: "method", type: "nominal", scale: { domain: methods } },
      y: {
        field: "recall",
        type: "quantitative",
        scale: { domain: [0, 1] },
        title: "Turn-level evidence recall",
      },
      color: { field: "method", type: "nominal", scale: { domain: methods }, title: "Method" },
    },
  };
}

function budgetLine(row: BenchResultSummary | undefined): string {
  if (row === undefined) return "";
  const { rawNodes, images, textTokens } = row.config.budget;
  const count = (value: number) => value.toLocaleString("en-US");
  return `budget: ${count(rawNodes)} raw nodes, ${count(images)} images, ${count(textTokens)} text tokens`;
}
