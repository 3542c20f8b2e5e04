/** Sessions on a timeline, and one session's raw nodes with their images and provenance. */
import { describeError } from "./api.js";
import { confirmAction } from "./confirm.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { fieldList, genericValue, humanize, idLink, imageThumbnail, term } from "./render.js";

const pageSize = 50;

export function createTimeline(api, { onForgotten } = { onForgotten: async () => {} }) {
  const list = document.getElementById("timeline");
  const status = document.getElementById("timeline-status");
  const more = document.getElementById("timeline-more");
  const detail = document.getElementById("session-detail");
  const heading = document.getElementById("session-heading");
  const body = document.getElementById("session-body");
  let sessions = [];
  let selectedId = null;

  async function load() {
    setStatus(status, "Loading sessions…");
    try {
      const { sessions: first } = await api.listSessions({ limit: pageSize, offset: 0 });
      sessions = first;
      render(first.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  async function loadMore() {
    try {
      const { sessions: next } = await api.listSessions({ limit: pageSize, offset: sessions.length });
      const known = new Set(sessions.map((session) => session.id));
      sessions = sessions.concat(next.filter((session) => !known.has(session.id)));
      render(next.length === pageSize);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  function render(hasMore) {
    const ordered = [...sessions].sort((a, b) => Date.parse(b.time) - Date.parse(a.time));
    setStatus(status, ordered.length === 0 ? "No conversations yet: add one, or ingest with the CLI." : "");
    more.hidden = !hasMore;
    const items = [];
    let day = null;
    for (const session of ordered) {
      const sessionDay = new Date(session.time).toDateString();
      if (sessionDay !== day) {
        day = sessionDay;
        items.push(
          h(
            "li",
            { class: "timeline-day", "aria-hidden": "true" },
            new Date(session.time).toLocaleDateString(undefined, { dateStyle: "full" }),
          ),
        );
      }
      items.push(sessionItem(session));
    }
    replace(list, items);
  }

  function sessionItem(session) {
    const button = h(
      "button",
      {
        type: "button",
        class: "timeline-session",
        "aria-controls": "session-detail",
        "aria-current": session.id === selectedId ? "true" : false,
        onclick: () => show(session.id),
      },
      h("span", { class: "timeline-time" }, timeElement(session.time)),
      h("span", { class: "timeline-key" }, session.key),
      h(
        "span",
        { class: "timeline-counts muted" },
        `${session.turnCount} turn${session.turnCount === 1 ? "" : "s"}`,
        session.imageCount > 0 ? ` · ${session.imageCount} image${session.imageCount === 1 ? "" : "s"}` : "",
        session.source ? ` · ${session.source}` : "",
      ),
    );
    return h("li", { class: "timeline-item", dataset: { sessionId: session.id } }, button);
  }

  /** Shows a session's raw nodes; `focusNode` (a raw-node id) is scrolled to and highlighted. */
  async function show(sessionId, options = {}) {
    selectedId = sessionId;
    for (const button of list.querySelectorAll(".timeline-session")) {
      const current = button.parentElement?.dataset.sessionId === sessionId;
      if (current) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
    detail.hidden = false;
    heading.textContent = "Conversation";
    replace(body, h("p", { class: "muted" }, "Loading…"));
    try {
      const { session, rawNodes } = await api.getSession(sessionId);
      heading.textContent = `Conversation ${session.key}`;
      replace(
        body,
        h(
          "div",
          { class: "session-meta" },
          timeElement(session.time),
          " · ",
          idLink(session.id),
          " ",
          h(
            "button",
            {
              type: "button",
              class: "danger small",
              id: "forget-session",
              onclick: () => forget({ session: session.key }),
            },
            "Forget this conversation…",
          ),
          fieldList(session, ["id", "key", "time"]),
        ),
        h(
          "ol",
          { class: "raw-nodes", "aria-label": `Turns of conversation ${session.key}` },
          rawNodes.map((node) => rawNodeItem(node, options.focusNode === node.id)),
        ),
      );
      const target = options.focusNode ? document.getElementById(`node-${options.focusNode}`) : heading;
      target?.scrollIntoView({ block: "nearest" });
      target?.focus({ preventScroll: true });
    } catch (error) {
      replace(body, h("p", { class: "error", role: "alert" }, describeError(error)));
    }
  }

  function rawNodeItem(node, highlighted) {
    const pixels = node.images.filter((image) => image.hash);
    const captionOnly = node.images.filter((image) => !image.hash);
    return h(
      "li",
      { id: `node-${node.id}`, class: highlighted ? "raw-node highlighted" : "raw-node", tabindex: -1 },
      h(
        "div",
        { class: "raw-node-head" },
        h("span", { class: "turn", title: `raw node ${node.id}` }, `Turn ${node.turn}`),
        node.speaker ? h("strong", { class: "speaker" }, node.speaker) : null,
        node.role ? h("span", { class: "badge" }, node.role) : null,
        timeElement(node.time),
      ),
      node.text ? h("p", { class: "raw-text" }, node.text) : null,
      pixels.length > 0 || captionOnly.length > 0
        ? h(
            "div",
            { class: "thumbs" },
            node.images.map((image) => imageThumbnail(api, image)),
          )
        : null,
      h(
        "button",
        {
          type: "button",
          class: "danger small forget-turn",
          onclick: () => forget({ rawNode: node.id }, `turn ${node.turn}`),
        },
        "Forget this turn…",
      ),
      h(
        "details",
        { class: "provenance-details", open: highlighted },
        h("summary", {}, term("Where this comes from", "provenance")),
        h(
          "dl",
          { class: "fields" },
          h("dt", {}, "raw node"),
          h("dd", {}, h("code", { class: "id" }, node.id)),
          h("dt", {}, "session"),
          h("dd", {}, idLink(node.sessionId, node.sessionKey)),
          ...["source", "uri"].flatMap((key) =>
            node[key] ? [h("dt", {}, key), h("dd", {}, genericValue(node[key], key))] : [],
          ),
          ...node.images.flatMap((image) =>
            image.origin ? [h("dt", {}, `image ${image.ordinal} origin`), h("dd", {}, genericValue(image.origin))] : [],
          ),
          ...Object.entries(node.metadata ?? {}).map(([key, value]) => [
            h("dt", {}, humanize(key)),
            h("dd", {}, genericValue(value, key)),
          ]),
        ),
        fieldList(node, [
          "id",
          "sessionId",
          "sessionKey",
          "turn",
          "speaker",
          "role",
          "text",
          "time",
          "source",
          "uri",
          "images",
          "metadata",
        ]),
      ),
    );
  }

  /** Forgets a conversation or one turn after the person confirms; the server audits it. */
  async function forget(target, what) {
    const label = target.session !== undefined ? `the conversation “${target.session}”` : what;
    const confirmed = await confirmAction(
      `Forget ${label}? ${target.session !== undefined ? "Every turn and image of it is" : "It is"} deleted for good, with everything Cairn derived from it. The deletion is recorded in the audit log.`,
      target.session !== undefined ? "Forget conversation" : "Forget turn",
    );
    if (!confirmed) return;
    try {
      const result = await api.forget(target);
      if (target.session !== undefined || result.sessions > 0) {
        detail.hidden = true;
        selectedId = null;
      }
      await onForgotten();
      if (!detail.hidden && selectedId) await show(selectedId);
      // After the reload, which resets the panel's status.
      setStatus(
        status,
        `Forgot ${label}: ${result.rawNodes} turn${result.rawNodes === 1 ? "" : "s"}, ${result.blobsDeleted} image${result.blobsDeleted === 1 ? "" : "s"}.`,
        "ok",
      );
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  more.addEventListener("click", loadMore);
  return { load, show };
}
