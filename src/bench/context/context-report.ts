import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { TopLevelSpec } from "vega-lite";
import type { RenderSettings } from "../../context/render/page-layout.ts";
import { placeLabels, renderSvg } from "../report/plots.ts";
import { presentShare, presentWindow, type RetentionResult } from "./context-replay.ts";
import type { FidelityRow } from "./fidelity.ts";

/** One manager's replay under one named budget. */
export type BudgetedResult = RetentionResult & { readonly budgetName: string };

export interface ContextRunInfo {
  readonly command: string;
  readonly date: string;
  readonly node: string;
  readonly seconds: number;
  readonly render: RenderSettings;
  /** What the run did not measure or measured on a slice (e.g. the OCR check), one sentence each. */
  readonly notes?: readonly string[];
}

function fixed(value: number, digits = 3): string {
  return value.toFixed(digits);
}

/** The report section: how it was run, the fidelity table, the retention table, the plots. Pure. */
export function renderMarkdown(
  run: ContextRunInfo,
  fidelity: readonly FidelityRow[],
  retention: readonly BudgetedResult[],
  plots: readonly string[],
): string {
  const lines = [
    "# Context managers (VERA)",
    "",
    `Measured without an LLM by \`${run.command}\` on ${run.date.slice(0, 10)} (Node ${run.node}, ${run.seconds} s, 2 shared cores).`,
    "Budgets: `paper` = 128k-token window managed from 64k, `tight` = 16k managed from 8k; both keep the 8 newest messages",
    "native and let a manager's representation of older history fill at most half the trigger; images costed by OpenAI tile rules;",
    `pages at ${run.render.scale}× (${Math.round(run.render.pageWidth * run.render.scale)}×${Math.round(run.render.pageHeight * run.render.scale)} px, ${run.render.fontSize} px DejaVu Sans Mono at scale 1), at most 10 per call. Each dataset is one long`,
    "trajectory (its histories back to back); every assistant message is one model call whose input is the working context",
    "before it. A question is asked at the end of its history (LCMP: of its concept), and scored on the working context then.",
    `A gold turn is present if its message is native, or if ≥ ${presentShare} of its content words are found together (within ${presentWindow}× as many`,
    "words as the turn has) in the summary or on",
    retention.every((row) => row.ocrVerified)
      ? "the kept rendered pages' OCR'd text; a gold image counts only as a native image."
      : "a kept rendered page (this run did not OCR the retention pages (`--no-ocr`): the fidelity table is the evidence that they read back); a gold image counts only as a native image.",
    ...(run.notes ?? []),
    "",
    "## Fidelity (OCR read-back of rendered pages, LoCoMo conversation 1)",
    "",
    "| scale | page px | pages | word recall | image tokens / page (OpenAI tile · 28-px patch · w·h/750) | text tokens / page |",
    "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ...fidelity.map(
      (row) =>
        `| ${row.scale} | ${row.pageWidth}×${row.pageHeight} | ${row.pages} | ${fixed(row.wordRecall)} | ${row.imageTokens.openaiTile} · ${row.imageTokens.patch} · ${row.imageTokens.area} | ${row.textTokensPerPage} |`,
    ),
    "",
    "## Evidence retention and cumulative tokens",
    "",
    "| dataset | budget | manager | role | calls | triggers | non-cache tokens | vs none | spent before 1st trigger (vs none) | mean / max context | gold turns present (text · rendered) | gold images native |",
    "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  if (retention.some((row) => row.answers))
    lines.splice(
      lines.length - 2,
      2,
      `${lines[lines.length - 2]} answer accuracy (judged) |`,
      `${lines[lines.length - 1]} ---: |`,
    );
  for (const row of retention) {
    const none = retention.find(
      (candidate) =>
        candidate.dataset === row.dataset && candidate.budgetName === row.budgetName && candidate.manager === "none",
    );
    const ratio = none ? fixed(row.tokens.nonCache / none.tokens.nonCache, 2) : "";
    const floor =
      none && row.manager !== "none" ? fixed(row.nonCacheBeforeFirstTrigger / none.tokens.nonCache, 2) : "–";
    lines.push(
      `| ${row.dataset} | ${row.budgetName} | ${row.manager} | ${row.role} | ${row.tokens.calls} | ${row.triggers} | ${row.tokens.nonCache.toLocaleString("en")} | ${ratio} | ${floor} | ${row.meanContextTokens.toLocaleString("en")} / ${row.maxContextTokens.toLocaleString("en")} | ${fixed(row.turnRetention)} (${fixed(row.turnAsText)} · ${fixed(row.turnAsRendered)}) of ${row.turnQuestions} q | ${row.imageQuestions > 0 ? `${fixed(row.imageNative)} of ${row.imageQuestions} q` : "–"} |${row.answers ? ` ${row.answers.accuracy === null ? "–" : fixed(row.answers.accuracy)} (${row.answers.judged}) |` : retention.some((other) => other.answers) ? " – |" : ""}`,
    );
  }
  lines.push("", ...plots.map((plot) => `![${path.basename(plot, ".svg")}](${plot})`), "");
  return lines.join("\n");
}

/** The fidelity plot and one retention plot per dataset and budget, as SVG files in `dir`; returns their names. */
export async function writePlots(
  dir: string,
  fidelity: readonly FidelityRow[],
  retention: readonly BudgetedResult[],
): Promise<string[]> {
  const files: string[] = [];
  const fidelitySpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v5.json",
    title: "Rendered-page fidelity: OCR word recall vs image tokens per page",
    width: 420,
    height: 260,
    data: {
      values: fidelity.map((row) => ({
        scale: `${row.scale}×`,
        recall: row.wordRecall,
        tokens: row.imageTokens.patch,
      })),
    },
    layer: [
      {
        mark: { type: "line", point: true },
        encoding: {
          x: { field: "tokens", type: "quantitative", title: "image tokens per page (28-px patches)" },
          y: { field: "recall", type: "quantitative", title: "OCR word recall", scale: { domain: [0, 1] } },
        },
      },
      {
        mark: { type: "text", dy: -10 },
        encoding: {
          x: { field: "tokens", type: "quantitative" },
          y: { field: "recall", type: "quantitative" },
          text: { field: "scale" },
        },
      },
    ],
    config: { font: "sans-serif" },
  };
  await writeFile(path.join(dir, "context-fidelity.svg"), await renderSvg(fidelitySpec as TopLevelSpec));
  files.push("context-fidelity.svg");
  for (const key of [...new Set(retention.map((row) => `${row.dataset}|${row.budgetName}`))]) {
    const [dataset = "", budgetName = ""] = key.split("|");
    const rows = retention.filter((row) => row.dataset === dataset && row.budgetName === budgetName);
    // Managers at the same point (VERA and Visual Rendering where a dataset has no pixels) share one label.
    const points = new Map<string, { text: string; tokens: number; recall: number }>();
    for (const row of rows) {
      const tokens = row.tokens.nonCache / 1e6;
      const key = `${tokens}|${row.turnRetention}`;
      const point = points.get(key);
      points.set(key, {
        text: point ? `${point.text} = ${row.manager}` : row.manager,
        tokens,
        recall: row.turnRetention,
      });
    }
    const tokens = rows.map((row) => row.tokens.nonCache / 1e6);
    const domain: [number, number] = [Math.min(...tokens) / 1.5, Math.max(...tokens) * 1.5];
    const labels = placeLabels([...points.values()], domain);
    const spec = {
      $schema: "https://vega.github.io/schema/vega-lite/v5.json",
      title: `${dataset} (${budgetName} budget): gold turns present vs cumulative non-cache tokens`,
      width: 480,
      height: 320,
      data: { values: labels },
      layer: [
        {
          mark: { type: "point", filled: true, size: 80 },
          encoding: {
            x: {
              field: "tokens",
              type: "quantitative",
              title: "cumulative non-cache tokens (millions, log)",
              scale: { type: "log", domain },
            },
            y: {
              field: "recall",
              type: "quantitative",
              title: "share of gold turns present",
              scale: { domain: [0, 1] },
            },
          },
        },
        {
          mark: { type: "text", dx: 7, align: "left", baseline: "middle", fontSize: 11 },
          encoding: {
            x: { field: "tokens", type: "quantitative", scale: { type: "log", domain } },
            y: { field: "labelRecall", type: "quantitative", scale: { domain: [0, 1] } },
            text: { field: "text" },
          },
        },
      ],
      config: { font: "sans-serif" },
    };
    const file = `context-retention-${dataset}-${budgetName}.svg`;
    await writeFile(path.join(dir, file), await renderSvg(spec as TopLevelSpec));
    files.push(file);
  }
  return files;
}
