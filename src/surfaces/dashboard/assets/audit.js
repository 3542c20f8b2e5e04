/** The audit log: every add and forget, newest first. */
import { describeError } from "./api.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { fieldList, genericValue, humanize } from "./render.js";

const pageSize = 50;

export function createAudit(api) {
  const body = document.querySelector("#audit tbody");
  const status = document.getElementById("audit-status");
  const more = document.getElementById("audit-more");
  let events = [];

  async function load() {
    setStatus(status, "Loading the audit log…");
    try {
      const { events: first } = await api.listAudit({ limit: pageSize, offset: 0 });
      events = first;
      render(first.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  async function loadMore() {
    try {
      const { events: next } = await api.listAudit({ limit: pageSize, offset: events.length });
      events = events.concat(next);
      render(next.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  function render(hasMore) {
    setStatus(status, events.length === 0 ? "Nothing has been recorded yet." : "");
    more.hidden = !hasMore;
    const ordered = [...events].sort((a, b) => Date.parse(b.time) - Date.parse(a.time));
    replace(
      body,
      ordered.map((event) =>
        h(
          "tr",
          { dataset: { action: event.action } },
          h("td", {}, timeElement(event.time)),
          h("td", {}, h("span", { class: `badge action-${event.action.replace(/[^a-z0-9-]/gi, "")}` }, event.action)),
          h("td", {}, genericValue(event.subject)),
          h("td", {}, details(event.details ?? {})),
        ),
      ),
    );
  }

  more.addEventListener("click", loadMore);
  return { load };
}

/** Details can be long (maintenance decisions list candidates and features): a one-line summary opens to all of it. */
function details(record) {
  const list = fieldList(record);
  if (!list) return h("span", { class: "muted" }, "—");
  const summary = Object.entries(record)
    .filter(([, value]) => value !== null && typeof value !== "object")
    .slice(0, 3)
    .map(([key, value]) => `${humanize(key)}: ${value}`)
    .join(" · ");
  return h("details", { class: "audit-details" }, h("summary", {}, summary || "details"), list);
}
