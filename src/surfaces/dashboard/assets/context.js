/**
 * Working-context preview: a trajectory (pasted, from a file, or a stored conversation) goes to `POST /v1/context`
 * with the chosen manager and budget, and the working context comes back shown as the model would get it: each
 * message's text, the rendered history pages and the images kept native beside them. A preview writes nothing.
 */
import { describeError } from "./api.js";
import { formatNumber, h, replace, setStatus } from "./dom.js";

const formLabels = {
  native: "kept as it was",
  rendered: "rendered history",
  summary: "summary",
  pointer: "pointer to memory",
};

export function createContextPreview(api) {
  const form = document.getElementById("context-form");
  const status = document.getElementById("context-status");
  const result = document.getElementById("context-result");
  const sessionSelect = document.getElementById("context-session");
  const fileInput = document.getElementById("context-file");
  const textArea = document.getElementById("context-trajectory");
  /** Object URLs of the images shown, revoked when the next preview replaces them. */
  let shownUrls = [];

  fileInput.addEventListener("change", async () => {
    const file = fileInput.files?.[0];
    if (!file) return;
    textArea.value = await file.text();
    sessionSelect.value = "";
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const messages = sessionSelect.value
        ? await storedConversation(api, sessionSelect.value)
        : parseTrajectory(textArea.value);
      setStatus(status, `Managing ${messages.length} messages…`);
      const data = new FormData(form);
      const budget = {};
      for (const name of ["window", "trigger", "keepRecent"]) {
        const value = String(data.get(name) ?? "").trim();
        if (value !== "") budget[name] = Number(value);
      }
      const scale = String(data.get("scale") ?? "").trim();
      const context = await api.manageContext({
        messages,
        manager: String(data.get("manager") || "vera"),
        ...(Object.keys(budget).length > 0 ? { budget } : {}),
        ...(scale ? { scale: Number(scale) } : {}),
        force: data.get("force") === "on",
        evict: false,
      });
      show(context);
      setStatus(
        status,
        context.managed
          ? `${context.manager} turned ${messages.length} messages into ${context.messages.length}.`
          : "The history is below the trigger: it passes unchanged (tick “Manage even below the trigger” to see the manager).",
        "ok",
      );
    } catch (error) {
      replace(result);
      setStatus(status, error instanceof TrajectoryError ? error.message : describeError(error), "error");
    } finally {
      button.disabled = false;
    }
  });

  /** Stored conversations to pick from (the newest 50). */
  async function load() {
    try {
      const { sessions } = await api.listSessions({ limit: 50, offset: 0 });
      const ordered = [...sessions].sort((a, b) => Date.parse(b.time) - Date.parse(a.time));
      replace(
        sessionSelect,
        h("option", { value: "" }, "— the trajectory above —"),
        ordered.map((session) => h("option", { value: session.id }, `${session.key} (${session.turnCount} turns)`)),
      );
    } catch {
      // Without access the list stays empty; the other panels say why.
      replace(sessionSelect, h("option", { value: "" }, "— the trajectory above —"));
    }
  }

  function show(context) {
    for (const url of shownUrls) URL.revokeObjectURL(url);
    shownUrls = [];
    const cost = context.cost;
    const raw = context.rawCost;
    replace(
      result,
      h(
        "dl",
        { class: "fields context-cost" },
        h("dt", {}, "manager"),
        h("dd", { dataset: { field: "manager" } }, `${context.manager} (${context.role})`),
        h("dt", {}, "tokens"),
        h(
          "dd",
          { dataset: { field: "tokens" } },
          `${formatNumber(cost.total)} of ${formatNumber(raw.total)} unmanaged (${formatNumber(cost.textTokens)} text, ${formatNumber(cost.imageTokens)} image)`,
        ),
        h("dt", {}, "images"),
        h("dd", { dataset: { field: "images" } }, String(cost.images)),
        h("dt", {}, "dropped"),
        h("dd", { dataset: { field: "dropped" } }, `${context.dropped.length} parts (not written: preview)`),
      ),
      context.warnings.length > 0
        ? h(
            "ul",
            { class: "warnings" },
            context.warnings.map((warning) => h("li", {}, warning)),
          )
        : null,
      h(
        "ol",
        { class: "context-messages", "aria-label": "Working context, in the order the model reads it" },
        context.messages.map((message, index) => messageItem(message, context.forms?.[index] ?? "native")),
      ),
    );
  }

  function messageItem(message, form) {
    const parts = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    const rendered = form === "rendered";
    let pageNumber = 0;
    return h(
      "li",
      { class: `context-message form-${form}`, dataset: { form, role: message.role } },
      h(
        "div",
        { class: "raw-node-head" },
        h("strong", {}, message.role),
        message.name ? h("span", { class: "speaker" }, message.name) : null,
        h("span", { class: "badge" }, formLabels[form] ?? form),
      ),
      (message.tool_calls ?? []).map((call) =>
        h("p", { class: "muted" }, `tool call ${call.id}: ${call.function.name}(${call.function.arguments})`),
      ),
      (parts ?? []).map((part, index) => {
        if (part.type === "text") return h("pre", { class: "context-text" }, part.text);
        // In rendered history a page comes first and each native visual follows its label text part.
        const previous = parts[index - 1];
        const native = rendered && previous?.type === "text" && index > 1;
        const kind = !rendered ? "image" : native ? "native" : "page";
        if (kind === "page") pageNumber++;
        const url = dataUrlToObjectUrl(part.image_url.url);
        if (url) shownUrls.push(url);
        return h(
          "figure",
          { class: `context-image kind-${kind}` },
          h("img", {
            src: url ?? "",
            alt: kind === "page" ? `rendered history page ${pageNumber}` : "image kept in the working context",
            dataset: { kind },
            loading: "lazy",
          }),
          h("figcaption", { class: "muted" }, kind === "page" ? `page ${pageNumber}` : "native image"),
        );
      }),
    );
  }

  return { load };
}

class TrajectoryError extends Error {}

/** A JSON array of messages, `{ "messages": [...] }`, or JSON Lines (one message per line). */
export function parseTrajectory(text) {
  const trimmed = text.trim();
  if (trimmed === "") throw new TrajectoryError("Paste a trajectory, pick a file, or choose a stored conversation.");
  try {
    const value = JSON.parse(trimmed);
    if (Array.isArray(value)) return value;
    if (Array.isArray(value?.messages)) return value.messages;
    return [value];
  } catch {
    const messages = [];
    for (const [index, line] of trimmed.split(/\r?\n/).entries()) {
      if (line.trim() === "") continue;
      try {
        messages.push(JSON.parse(line));
      } catch {
        throw new TrajectoryError(
          `Line ${index + 1} is not JSON: give a JSON array of messages or one message per line.`,
        );
      }
    }
    return messages;
  }
}

/** A stored conversation as a trajectory: each turn a message with its speaker, time and images (as base64). */
async function storedConversation(api, sessionId) {
  const { session, rawNodes } = await api.getSession(sessionId);
  const first = rawNodes[0]?.speaker;
  const messages = [];
  for (const node of rawNodes) {
    const images = [];
    for (const image of node.images) {
      if (!image.hash) continue;
      const blob = await api.imageBlob(image.hash);
      images.push({
        data: await blobToBase64(blob),
        ...(blob.type ? { mediaType: blob.type } : {}),
        ...(image.caption ? { caption: image.caption } : {}),
      });
    }
    const captions = node.images
      .filter((image) => !image.hash && image.caption)
      .map((image) => `[image: ${image.caption}]`);
    messages.push({
      id: node.id,
      role: node.role === "assistant" || (node.role !== "user" && node.speaker !== first) ? "assistant" : "user",
      ...(node.speaker ? { name: node.speaker } : {}),
      text: [node.text ?? "", ...captions].filter(Boolean).join("\n"),
      time: node.time ?? session.time,
      ...(images.length > 0 ? { images } : {}),
    });
  }
  return messages;
}

function blobToBase64(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      const value = String(reader.result);
      resolve(value.slice(value.indexOf(",") + 1));
    });
    reader.addEventListener("error", () => reject(reader.error ?? new Error("could not read an image")));
    reader.readAsDataURL(blob);
  });
}

/** The page allows images from this server and `blob:` only: a base64 data URL is shown through a Blob. */
function dataUrlToObjectUrl(url) {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match) return null;
  const bytes = Uint8Array.from(atob(match[2]), (char) => char.charCodeAt(0));
  return URL.createObjectURL(new Blob([bytes], { type: match[1] }));
}
