/**
 * The video panel (issue 14, ReflectWorld-MM Appendix F): per-segment moments with key frames and
 * timestamps, an entity panel with each entity's evolving facts (importance, history of edits),
 * sightings and recent activity, and the rules with the notifier's log.
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

  async function load() {
    try {
      const [found, recent, stated, decided] = await Promise.all([
        api.videoEntities(),
        api.videoMoments(),
        api.videoRules(),
        api.videoNotifications(),
      ]);
      const empty = found.entities.length === 0 && recent.moments.length === 0 && stated.rules.length === 0;
      section.hidden = empty;
      if (empty) return;
      setStatus(status, "");
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

  return { load, show };
}

function condition(rule) {
  const value = rule.data?.condition ?? {};
  if (value.kind === "count") return `${value.label} ${value.op} ${value.value}`;
  if (value.kind === "arrival") return `${value.entity} arrives`;
  return "preference";
}
