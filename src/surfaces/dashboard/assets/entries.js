/**
 * Entries: what memory maintains over the raw nodes, each pointing back at the raw nodes it came from.
 * Fields beyond the first shape (pages, relations, versions, latest flag) render generically.
 */
import { describeError } from "./api.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { fieldList, idLink } from "./render.js";

const pageSize = 50;
const shownFields = ["id", "status", "latest", "sessionId", "routingText", "timeStart", "timeEnd", "pointers"];

export function createEntries(api) {
  const list = document.getElementById("entries");
  const status = document.getElementById("entries-status");
  const more = document.getElementById("entries-more");
  let entries = [];

  async function load() {
    setStatus(status, "Loading entries…");
    try {
      const { entries: first } = await api.listEntries({ limit: pageSize, offset: 0 });
      entries = first;
      render(first.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  async function loadMore() {
    try {
      const { entries: next } = await api.listEntries({ limit: pageSize, offset: entries.length });
      entries = entries.concat(next);
      render(next.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  function render(hasMore) {
    setStatus(status, entries.length === 0 ? "No entries yet." : "");
    more.hidden = !hasMore;
    replace(list, entries.map(entryItem));
  }

  function entryItem(entry) {
    const pointers = Array.isArray(entry.pointers) ? entry.pointers : [];
    return h(
      "li",
      { id: `entry-${entry.id}`, class: "entry", tabindex: -1, dataset: { status: entry.status ?? "" } },
      entry.status !== undefined || entry.latest !== undefined
        ? h(
            "p",
            { class: "entry-flags" },
            entry.status
              ? h("span", { class: entry.status === "active" ? "badge badge-on" : "badge" }, entry.status)
              : null,
            entry.latest === true ? [" ", h("span", { class: "badge badge-on" }, "latest")] : null,
          )
        : null,
      entry.routingText ? h("p", { class: "routing-text" }, entry.routingText) : null,
      h(
        "p",
        { class: "entry-meta muted" },
        entry.timeStart ? timeElement(entry.timeStart) : null,
        entry.timeEnd && entry.timeEnd !== entry.timeStart ? [" – ", timeElement(entry.timeEnd)] : null,
        entry.sessionId ? [" · session ", idLink(entry.sessionId)] : null,
      ),
      h(
        "div",
        { class: "pointers" },
        h("span", { class: "label" }, `From ${pointers.length} raw node${pointers.length === 1 ? "" : "s"}: `),
        h(
          "ul",
          { class: "inline-list" },
          pointers.map((pointer) => h("li", {}, idLink(pointer))),
        ),
      ),
      fieldList(entry, shownFields, 0, { omitEmpty: true }),
      h("p", { class: "entry-id muted" }, h("code", { class: "id" }, entry.id)),
    );
  }

  /** Scrolls to an entry of the loaded list and marks it. */
  function show(id) {
    const element = document.getElementById(`entry-${id}`);
    if (!element) {
      setStatus(status, `Entry ${id} is not among the loaded entries.`, "info");
      return;
    }
    for (const other of list.querySelectorAll(".entry.highlighted")) other.classList.remove("highlighted");
    element.classList.add("highlighted");
    element.scrollIntoView({ block: "nearest" });
    element.focus({ preventScroll: true });
  }

  more.addEventListener("click", loadMore);
  return { load, show };
}
