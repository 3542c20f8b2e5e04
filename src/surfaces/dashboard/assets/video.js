/**
 * The video panel (issue 14, ReflectWorld-MM Appendix F): per-segment moments with key frames and
 * timestamps, an entity panel with each entity's evolving facts (importance, history of edits),
 * sightings and recent activity, and the rules with the notifier's log; and a source view: what is
 * watched (live or recorded), a stream's segments on a timeline with key frames and media times, and
 * what holds about the place (scene facts).
 */
import { describeError } from "./api.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { imageThumbnail } from "./render.js";

export function createVideo(api) {
  const section = document.getElementById("video");
  const status = document.getElementById("video-status");
  const moments = document.getElementById("video-moments");
  const entities = document.getElementById("video-entities");
  const panel = document.getElementById("video-entity");
  const rules = document.getElementById("video-rules");
  const log = document.getElementById("video-notifications");
  const sourceList = document.getElementById("video-sources");
  const sourceView = document.getElementById("video-source");
  /** The source shown and the timer refreshing it while a watch of it runs. */
  let shown = null;
  let refresh = null;

  async function load() {
    try {
      const [found, recent, stated, decided, watched] = await Promise.all([
        api.videoEntities(),
        api.videoMoments(),
        api.videoRules(),
        api.videoNotifications(),
        api.videoSources(),
      ]);
      const empty =
        found.entities.length === 0 &&
        recent.moments.length === 0 &&
        stated.rules.length === 0 &&
        watched.sources.length === 0;
      section.hidden = empty;
      if (empty) return;
      setStatus(status, "");
      replace(
        sourceList,
        watched.sources.map((source) =>
          h(
            "li",
            {},
            h(
              "button",
              {
                type: "button",
                class: "entity",
                dataset: { source: source.source, live: String(source.live) },
                onclick: () => showSource(source.source),
              },
              source.source,
              " ",
              h("span", { class: `badge${source.live ? " live" : ""}` }, source.live ? "live" : "recorded"),
              ` · ${source.segments} segment${source.segments === 1 ? "" : "s"}`,
            ),
          ),
        ),
      );
      replace(moments, recent.moments.map(moment));
      replace(
        entities,
        found.entities.map((entity) =>
          h(
            "li",
            {},
            h(
              "button",
              { type: "button", class: "entity", dataset: { entity: entity.id }, onclick: () => show(entity.id) },
              entity.name ?? `person ${entity.id}`,
              ` · ${entity.observations} observation${entity.observations === 1 ? "" : "s"}`,
            ),
          ),
        ),
      );
      replace(
        rules,
        stated.rules.length === 0
          ? h("li", { class: "muted" }, "No rules.")
          : stated.rules.map((rule) =>
              h("li", { dataset: { rule: rule.id } }, rule.text, " ", h("code", {}, condition(rule))),
            ),
      );
      replace(
        log,
        decided.notifications.map((item) =>
          h(
            "tr",
            { dataset: { outcome: item.data.outcome } },
            h("td", {}, timeElement(new Date(item.startMs).toISOString())),
            h("td", {}, h("span", { class: `badge outcome-${item.data.outcome}` }, item.data.outcome)),
            h("td", {}, item.text),
            h("td", {}, String(item.data.reason ?? "")),
          ),
        ),
      );
    } catch (error) {
      section.hidden = false;
      setStatus(status, describeError(error), "error");
    }
  }

  function moment({ item, frames }) {
    return h(
      "li",
      { class: "moment", dataset: { trace: item.id } },
      h("div", { class: "moment-time" }, timeElement(new Date(item.startMs).toISOString()), " · ", item.stream ?? ""),
      h("p", {}, item.text),
      h(
        "div",
        { class: "thumbs" },
        frames.slice(0, 3).map((frame) => imageThumbnail(api, { hash: frame.hash, caption: frame.caption ?? "" })),
      ),
    );
  }

  /** One source: its streams, the chosen stream's segments on a timeline, and its scene facts. */
  async function showSource(name, stream) {
    clearTimeout(refresh);
    shown = name;
    try {
      const [{ sources }, { facts }] = await Promise.all([api.videoSources(), api.videoSourceFacts(name)]);
      const source = sources.find((entry) => entry.source === name);
      if (!source || shown !== name) return;
      const current =
        source.streams.find((entry) => entry.stream === stream) ?? source.streams[source.streams.length - 1];
      const { moments } = current ? await api.videoStreamMoments(current.stream) : { moments: [] };
      if (shown !== name) return;
      const startMs = current ? Date.parse(current.from) : 0;
      const spanMs = current ? Math.max(1, Date.parse(current.to) - startMs) : 1;
      const segments = [...moments].reverse();
      replace(
        sourceView,
        h(
          "h3",
          {},
          source.source,
          " ",
          h("span", { class: `badge${current?.live ? " live" : ""}` }, current?.live ? "live" : "recorded"),
        ),
        h(
          "p",
          { class: "hint source-status" },
          current
            ? [
                current.live ? "Watching since " : "Recorded ",
                timeElement(current.from),
                current.live ? "" : [" – ", timeElement(current.to)],
                ` · ${current.segments} analysed segment${current.segments === 1 ? "" : "s"}`,
              ]
            : "No stream yet.",
        ),
        source.streams.length > 1
          ? h(
              "ul",
              { class: "entities source-streams" },
              source.streams.map((entry) =>
                h(
                  "li",
                  {},
                  h(
                    "button",
                    {
                      type: "button",
                      class: "entity",
                      "aria-pressed": String(entry === current),
                      dataset: { stream: entry.stream },
                      onclick: () => showSource(name, entry.stream),
                    },
                    entry.stream,
                  ),
                ),
              ),
            )
          : null,
        h(
          "div",
          { class: "timeline-track", "aria-hidden": "true" },
          segments.map(({ item }) => {
            // Positioned through the CSSOM: the dashboard's CSP allows no inline style attributes.
            const bar = h("span", {});
            bar.style.left = `${(100 * (item.startMs - startMs)) / spanMs}%`;
            bar.style.width = `${Math.max(0.5, (100 * (item.endMs - item.startMs)) / spanMs)}%`;
            return bar;
          }),
        ),
        h(
          "ol",
          { class: "timeline", "aria-label": "Segments" },
          segments.length === 0
            ? h("li", { class: "muted" }, "No analysed segment yet.")
            : segments.map(({ item, frames }) =>
                h(
                  "li",
                  { class: "segment", dataset: { trace: item.id } },
                  h(
                    "div",
                    { class: "segment-time" },
                    `${mediaTime(item.startMs - startMs)}–${mediaTime(item.endMs - startMs)} `,
                    timeElement(new Date(item.startMs).toISOString()),
                  ),
                  h(
                    "div",
                    { class: "thumbs" },
                    frames
                      .slice(0, 1)
                      .map((frame) => imageThumbnail(api, { hash: frame.hash, caption: frame.caption ?? "" })),
                  ),
                  h("p", {}, item.text),
                ),
              ),
        ),
        h("h4", {}, "What holds here"),
        h(
          "ol",
          { class: "facts" },
          facts.length === 0
            ? h("li", { class: "muted" }, "No scene facts yet: they are consolidated every few segments.")
            : facts.map((fact) =>
                h(
                  "li",
                  { class: "fact", dataset: { fact: fact.id } },
                  h("meter", { min: 0, max: 1, value: fact.importance, title: `importance ${fact.importance}` }),
                  ` ${fact.importance.toFixed(2)} ${fact.text} `,
                  h("span", { class: "muted fact-history" }, fact.history.map((edit) => edit.op).join(" → ")),
                ),
              ),
        ),
      );
      sourceView.hidden = false;
      // A running watch adds segments: refresh while it is shown.
      if (current?.live) refresh = setTimeout(() => showSource(name, current.stream), 2000);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  async function show(id) {
    try {
      const memory = await api.videoEntityMemory(id);
      replace(
        panel,
        h("h3", {}, memory.entity.name ?? `person ${memory.entity.id}`),
        h(
          "p",
          { class: "hint" },
          `Facts are consolidated every few observations; the next in ${memory.nextConsolidationIn}.`,
        ),
        h(
          "ol",
          { class: "facts" },
          memory.facts.length === 0
            ? h("li", { class: "muted" }, "No facts yet.")
            : memory.facts.map((fact) =>
                h(
                  "li",
                  { class: "fact", dataset: { fact: fact.id, category: fact.category } },
                  h("meter", { min: 0, max: 1, value: fact.importance, title: `importance ${fact.importance}` }),
                  ` ${fact.importance.toFixed(2)} `,
                  h("span", { class: "badge" }, fact.category),
                  ` ${fact.text} `,
                  h("span", { class: "muted fact-history" }, fact.history.map((edit) => edit.op).join(" → ")),
                ),
              ),
        ),
        h("h4", {}, "Sightings"),
        h(
          "ul",
          {},
          memory.entity.sightings.map((sighting) =>
            h("li", {}, sighting.stream, ": ", timeElement(sighting.from), " – ", timeElement(sighting.to)),
          ),
        ),
        h("h4", {}, "Recent activity"),
        h(
          "ul",
          {},
          memory.recent.map((item) => h("li", {}, item.text)),
        ),
      );
      panel.hidden = false;
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  return { load, show, showSource };
}

/** `m:ss` of a media time from the stream's start. */
function mediaTime(ms) {
  const total = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(total / 60)}:${String(total % 60).padStart(2, "0")}`;
}

function condition(rule) {
  const value = rule.data?.condition ?? {};
  if (value.kind === "count") return `${value.label} ${value.op} ${value.value}`;
  if (value.kind === "arrival") return `${value.entity} arrives`;
  return "preference";
}
