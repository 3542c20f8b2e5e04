/**
 * What Cairn knows about the user: each active memory in the words that were said, where it comes
 * from (conversation, turn, time, images) and what it replaced. The internal terms sit in tooltips.
 */
import { describeError } from "./api.js";
import { confirmAction } from "./confirm.js";
import { h, replace, setStatus, timeElement } from "./dom.js";
import { idLink, imageThumbnail, term } from "./render.js";

const pageSize = 20;

export function createKnowledge(api, { onForgotten }) {
  const list = document.getElementById("knowledge");
  const status = document.getElementById("knowledge-status");
  const more = document.getElementById("knowledge-more");
  let memories = [];
  let total = 0;

  async function load() {
    setStatus(status, "Loading what Cairn knows…");
    try {
      const page = await api.knowledge({ limit: pageSize, offset: 0 });
      memories = page.memories;
      total = page.total;
      render();
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  async function loadMore() {
    try {
      const page = await api.knowledge({ limit: pageSize, offset: memories.length });
      memories = memories.concat(page.memories);
      total = page.total;
      render();
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  function render() {
    setStatus(
      status,
      total === 0
        ? "Cairn knows nothing about this user yet."
        : `${total} thing${total === 1 ? "" : "s"} remembered, newest first.`,
    );
    more.hidden = memories.length >= total;
    replace(list, memories.map(memoryItem));
  }

  function memoryItem(memory) {
    const conversations = [...new Map(memory.said.map((turn) => [turn.sessionKey, turn.sessionId])).entries()];
    return h(
      "li",
      { class: "memory", dataset: { entryId: memory.entryId } },
      h(
        "p",
        { class: "memory-head muted" },
        timeElement(memory.timeEnd),
        memory.topics.length > 0 ? [" · about ", memory.topics.join(", ")] : null,
        " ",
        h("span", { class: "term-note", title: `index entry ${memory.entryId}` }, "ⓘ"),
      ),
      h(
        "ul",
        { class: "said" },
        memory.said.map((turn) => saidItem(turn)),
      ),
      memory.moreTurns > 0
        ? h("p", { class: "muted" }, `and ${memory.moreTurns} more turn${memory.moreTurns === 1 ? "" : "s"}`)
        : null,
      memory.replaced.length > 0
        ? h(
            "details",
            { class: "replaced" },
            h(
              "summary",
              {},
              term(
                `Replaced ${memory.replaced.length} earlier version${memory.replaced.length === 1 ? "" : "s"}`,
                "superseded entries: earlier states in this memory's version chain",
              ),
            ),
            h(
              "ol",
              {},
              memory.replaced.map((version) =>
                h(
                  "li",
                  {},
                  timeElement(version.timeEnd),
                  h(
                    "ul",
                    { class: "said" },
                    version.said.map((turn) => saidItem(turn)),
                  ),
                ),
              ),
            ),
          )
        : null,
      memory.alsoHolds > 0
        ? h(
            "p",
            { class: "muted" },
            term(
              `also holds ${memory.alsoHolds} older memor${memory.alsoHolds === 1 ? "y" : "ies"}`,
              "merged or overflow entries hosted by this entry",
            ),
          )
        : null,
      h(
        "p",
        { class: "memory-sources" },
        "From ",
        conversations.map(([key, id], index) => [
          index > 0 ? ", " : "",
          term("conversation", "session"),
          " ",
          idLink(id, key),
          " ",
          h(
            "button",
            {
              type: "button",
              class: "danger small",
              onclick: () => forgetConversation(key),
            },
            "Forget…",
          ),
        ]),
      ),
    );
  }

  function saidItem(turn) {
    return h(
      "li",
      { dataset: { rawNodeId: turn.rawNodeId } },
      h("strong", { class: "speaker" }, turn.speaker ?? "someone"),
      ": ",
      h("span", { class: "said-text" }, turn.text),
      " ",
      h(
        "a",
        {
          href: `#raw-node=${encodeURIComponent(turn.rawNodeId)}`,
          class: "muted",
          title: `raw node ${turn.rawNodeId}`,
        },
        timeElement(turn.time),
      ),
      turn.images.length > 0
        ? h(
            "div",
            { class: "thumbs" },
            turn.images.map((image) => imageThumbnail(api, image)),
          )
        : null,
    );
  }

  async function forgetConversation(key) {
    const confirmed = await confirmAction(
      `Forget the conversation “${key}”? Every turn and image of it is deleted for good, with everything Cairn derived from it. The deletion is recorded in the audit log.`,
      "Forget conversation",
    );
    if (!confirmed) return;
    try {
      const result = await api.forget({ session: key });
      await onForgotten();
      // After the reload, which resets the panel's status.
      setStatus(
        status,
        `Forgot “${key}”: ${result.rawNodes} turn${result.rawNodes === 1 ? "" : "s"}, ${result.blobsDeleted} image${result.blobsDeleted === 1 ? "" : "s"}.`,
        "ok",
      );
    } catch (error) {
      setStatus(status, describeError(error), "error");
    }
  }

  more.addEventListener("click", loadMore);
  return { load };
}
