/** A one-turn session typed in by a person: speaker, text and an optional image, sent as JSON with base64. */
import { describeError, fileToBase64 } from "./api.js";
import { h, replace, setStatus } from "./dom.js";
import { idLink } from "./render.js";

export function createAddSession(api, { onAdded }) {
  const form = document.getElementById("add-form");
  const status = document.getElementById("add-status");

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const speaker = String(data.get("speaker") ?? "").trim();
    const text = String(data.get("text") ?? "").trim();
    const caption = String(data.get("caption") ?? "").trim();
    const file = data.get("image");
    const hasImage = file instanceof File && file.size > 0;
    if (!text && !hasImage) {
      setStatus(status, "Write some text, pick an image, or both.", "error");
      return;
    }
    const localTime = String(data.get("time") ?? "");
    const time = localTime ? new Date(localTime) : new Date();
    if (Number.isNaN(time.getTime())) {
      setStatus(status, "The time is not a valid date.", "error");
      return;
    }
    const key = String(data.get("session") ?? "").trim() || `dashboard-${time.toISOString().replace(/[:.]/g, "-")}`;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    setStatus(status, "Adding…");
    try {
      const turn = {};
      if (speaker) turn.speaker = speaker;
      if (text) turn.text = text;
      if (hasImage) {
        const image = { data: await fileToBase64(file) };
        if (file.type) image.mediaType = file.type;
        if (caption) image.caption = caption;
        turn.images = [image];
      }
      const { result } = await api.addSession({
        session: key,
        time: time.toISOString(),
        source: "dashboard",
        turns: [turn],
      });
      replace(
        status,
        result.duplicate ? "This exact session was already stored: " : "Added session ",
        idLink(result.sessionId, result.sessionKey),
        ".",
        result.warnings?.length
          ? h(
              "ul",
              {},
              result.warnings.map((warning) => h("li", {}, warning)),
            )
          : null,
      );
      status.dataset.kind = "ok";
      status.setAttribute("role", "status");
      form.reset();
      await onAdded(result);
    } catch (error) {
      setStatus(status, describeError(error), "error");
    } finally {
      button.disabled = false;
    }
  });
}
