/** The search box and the evidence pack it answers with: items, channel ranks, budget, warnings, route. */
import { describeError, fileToBase64 } from "./api.js";
import { formatNumber, h, replace, setStatus } from "./dom.js";
import { fieldList, genericValue, humanize, idLink, imageThumbnail, provenanceList } from "./render.js";

const channelNames = {
  bm25: "BM25 words",
  dense: "dense text",
  image: "image",
  imageText: "image text",
  imageTextDense: "image text (dense)",
  imageVector: "image pixels",
};
const dimensionNames = { pages: "index pages", rawNodes: "raw nodes", images: "images", textTokens: "text tokens" };

export function createSearch(api) {
  const form = document.getElementById("search-form");
  const status = document.getElementById("search-status");
  const results = document.getElementById("search-results");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const text = String(data.get("text") ?? "").trim();
    const file = data.get("image");
    const hasImage = file instanceof File && file.size > 0;
    if (!text && !hasImage) {
      setStatus(status, "Type what to look for, pick a query image, or both.", "error");
      return;
    }
    const query = { vision: data.get("vision") === "on" };
    if (text) query.text = text;
    const budget = {};
    for (const dimension of Object.keys(dimensionNames)) {
      const value = String(data.get(dimension) ?? "").trim();
      if (value !== "") budget[dimension] = Number(value);
    }
    if (Object.keys(budget).length > 0) query.budget = budget;
    const mode = String(data.get("mode") ?? "");
    if (mode) query.mode = mode;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    setStatus(status, "Searching…");
    try {
      if (hasImage) query.image = { data: await fileToBase64(file) };
      const pack = await api.search(query);
      setStatus(status, `${pack.items.length} item${pack.items.length === 1 ? "" : "s"} of evidence.`, "ok");
      replace(results, renderPack(api, pack, hasImage ? file : null));
    } catch (error) {
      setStatus(status, describeError(error), "error");
    } finally {
      button.disabled = false;
    }
  });
}

function renderPack(api, pack, queryFile) {
  return h(
    "div",
    { class: "pack", "aria-label": "Evidence pack" },
    querySummary(pack, queryFile),
    pack.warnings?.length
      ? h(
          "div",
          { class: "warnings", role: "note", "aria-label": "Warnings" },
          h("h3", {}, "Warnings"),
          h(
            "ul",
            {},
            pack.warnings.map((warning) => h("li", {}, warning)),
          ),
        )
      : null,
    budgetTable(pack.budget),
    pack.route !== undefined && pack.route !== null ? routeTrace(pack.route) : null,
    h("h3", {}, "Evidence"),
    pack.items.length === 0
      ? h("p", { class: "muted" }, "Nothing in memory matched.")
      : h(
          "ol",
          { class: "evidence-items" },
          pack.items.map((item, index) => evidenceItem(api, item, index)),
        ),
    cutItems(pack.budget?.cutItems ?? []),
    otherFields(pack),
  );
}

function querySummary(pack, queryFile) {
  const channels = (pack.channelsUsed ?? []).map((channel) => channelNames[channel] ?? channel).join(", ");
  const timings = pack.timings
    ? `${Math.round(pack.timings.totalMs)} ms (embedding ${Math.round(pack.timings.embedMs)} ms, search ${Math.round(pack.timings.searchMs)} ms)`
    : null;
  let preview = null;
  if (queryFile) {
    preview = h("img", { class: "query-image", alt: "the query image", width: 48, height: 48 });
    preview.src = URL.createObjectURL(queryFile);
  }
  return h(
    "div",
    { class: "pack-summary" },
    preview,
    h(
      "dl",
      { class: "fields" },
      pack.query?.text ? [h("dt", {}, "query"), h("dd", {}, pack.query.text)] : null,
      pack.query?.image ? [h("dt", {}, "query image"), h("dd", {}, h("code", {}, pack.query.image.hash))] : null,
      pack.mode ? [h("dt", {}, "mode"), h("dd", {}, pack.mode)] : null,
      h("dt", {}, "channels used"),
      h("dd", {}, channels || "none"),
      timings ? [h("dt", {}, "time"), h("dd", {}, timings)] : null,
    ),
  );
}

/** Limit, use and cuts for each budget dimension, with a meter so the fill reads at a glance. */
function budgetTable(budget) {
  if (!budget) return null;
  const dimensions = Object.keys({ ...budget.limits, ...budget.used });
  return h(
    "section",
    { class: "budget", "aria-label": "Budget" },
    h("h3", {}, "Budget"),
    h(
      "table",
      { class: "budget-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Dimension", "Used", "Limit", "Fill", "Cut"].map((label) => h("th", { scope: "col" }, label)),
        ),
      ),
      h(
        "tbody",
        {},
        dimensions.map((dimension) => {
          const used = budget.used?.[dimension] ?? 0;
          const limit = budget.limits?.[dimension] ?? 0;
          const cut = budget.cut?.[dimension] ?? 0;
          const name = dimensionNames[dimension] ?? humanize(dimension);
          return h(
            "tr",
            { dataset: { dimension } },
            h("th", { scope: "row" }, name),
            h("td", { class: "number" }, formatNumber(used)),
            h("td", { class: "number" }, formatNumber(limit)),
            h(
              "td",
              {},
              h("meter", {
                min: 0,
                max: Math.max(limit, 1),
                value: used,
                high: Math.max(limit, 1) * 0.9,
                "aria-label": `${name}: ${used} of ${limit}`,
              }),
            ),
            h("td", { class: cut > 0 ? "number cut" : "number" }, formatNumber(cut)),
          );
        }),
      ),
    ),
  );
}

/**
 * How the search got to its evidence (pages scored, entries chosen, raw nodes expanded). Its shape is
 * still settling, so lists of records become tables over whatever fields they carry.
 */
function routeTrace(route) {
  const parts =
    route && typeof route === "object" && !Array.isArray(route)
      ? Object.entries(route).map(([key, value]) =>
          h("section", { class: "route-step" }, h("h4", {}, humanize(key)), routeValue(value)),
        )
      : [routeValue(route)];
  return h("section", { class: "route", "aria-label": "Route trace" }, h("h3", {}, "Route trace"), parts);
}

function routeValue(value) {
  const isRecordList =
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((item) => item && typeof item === "object" && !Array.isArray(item));
  if (!isRecordList) return genericValue(value);
  const columns = [...new Set(value.flatMap((item) => Object.keys(item)))];
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "route-table" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          columns.map((column) => h("th", { scope: "col" }, humanize(column))),
        ),
      ),
      h(
        "tbody",
        {},
        value.map((item) =>
          h(
            "tr",
            {},
            columns.map((column) => h("td", {}, genericValue(item[column], column, 1))),
          ),
        ),
      ),
    ),
  );
}

function evidenceItem(api, item, index) {
  const channels = Object.entries(item.channels ?? {});
  return h(
    "li",
    { class: "evidence-item", dataset: { rawNodeId: item.rawNodeId } },
    h(
      "div",
      { class: "evidence-head" },
      h("span", { class: "rank" }, `#${index + 1}`),
      h("span", { class: "score", title: "fused score (reciprocal rank fusion)" }, `score ${item.score.toFixed(4)}`),
      idLink(item.rawNodeId, "turn"),
      h("span", { class: "muted" }, `${formatNumber(item.textTokens)} tokens`),
    ),
    item.route ? routedVia(item.route) : null,
    item.text ? h("p", { class: "raw-text" }, item.text) : null,
    item.images?.length
      ? h(
          "div",
          { class: "thumbs" },
          item.images.map((image) => imageThumbnail(api, image)),
        )
      : null,
    item.imagesAsText?.length
      ? h(
          "ul",
          { class: "images-as-text" },
          item.imagesAsText.map((image) =>
            h(
              "li",
              {},
              h("span", { class: "badge" }, image.hash ? "image as text" : "caption only"),
              " ",
              [image.caption, image.derivedText].filter(Boolean).join(" — ") || "(no text)",
              image.origin ? h("span", { class: "muted" }, ` (${image.origin})`) : null,
            ),
          ),
        )
      : null,
    item.imagesCut > 0
      ? h(
          "p",
          { class: "cut" },
          `${item.imagesCut} image${item.imagesCut === 1 ? "" : "s"} left out by the image budget`,
        )
      : null,
    h(
      "table",
      { class: "channel-table" },
      h("caption", { class: "visually-hidden" }, "Rank and score of each channel"),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Channel", "Rank", "Score"].map((label) => h("th", { scope: "col" }, label)),
        ),
      ),
      h(
        "tbody",
        {},
        channels.map(([channel, hit]) =>
          h(
            "tr",
            {},
            h("th", { scope: "row" }, channelNames[channel] ?? channel),
            h("td", { class: "number" }, String(hit.rank)),
            h("td", { class: "number" }, typeof hit.score === "number" ? hit.score.toPrecision(4) : String(hit.score)),
          ),
        ),
      ),
    ),
    provenanceList(item.provenance ?? {}),
  );
}

/** How routing reached a raw node: the entry it came through and the link followed. */
function routedVia(route) {
  const { entry, via, latest, ...rest } = route;
  return h(
    "p",
    { class: "routed-via" },
    "Reached through entry ",
    entry ? idLink(entry) : "?",
    via ? ` (${via})` : null,
    latest === true ? [" ", h("span", { class: "badge badge-on" }, "latest")] : null,
    Object.keys(rest).length > 0 ? fieldList(rest) : null,
  );
}

function cutItems(items) {
  if (items.length === 0) return null;
  return h(
    "details",
    { class: "cut-items" },
    h("summary", {}, `${items.length} candidate${items.length === 1 ? "" : "s"} ranked but cut by the budget`),
    h(
      "ul",
      {},
      items.map((item) =>
        h("li", {}, idLink(item.rawNodeId), ` — ${dimensionNames[item.dimension] ?? item.dimension}`),
      ),
    ),
  );
}

/** Anything else the pack gains later, so it is never silently hidden. */
function otherFields(pack) {
  const known = ["query", "items", "budget", "channelsUsed", "mode", "warnings", "timings", "route"];
  const rest = Object.fromEntries(Object.entries(pack).filter(([key]) => !known.includes(key)));
  if (Object.keys(rest).length === 0) return null;
  return h("details", { class: "pack-extra" }, h("summary", {}, "More about this pack"), genericValue(rest));
}
