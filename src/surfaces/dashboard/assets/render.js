/** Pieces shared by the panels: id links, images, and a generic view of fields this page does not know yet. */
import { formatBytes, formatNumber, h, replace, safeExternalUrl, timeElement } from "./dom.js";

const idKinds = [
  { prefix: "ses_", route: "session", label: "session" },
  { prefix: "rn_", route: "raw-node", label: "raw node" },
  { prefix: "ent_", route: "entry", label: "entry" },
];
const idPattern = /^[a-z]{2,8}_[A-Za-z0-9_-]{6,64}$/;
const isoPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** The address inside this page of a record id (`ses_…`, `rn_…`, `ent_…`), or null for other ids. */
export function routeFor(id) {
  const kind = idKinds.find((candidate) => String(id).startsWith(candidate.prefix));
  return kind ? `#${kind.route}=${encodeURIComponent(id)}` : null;
}

/** A link to the record an id names, or the id as code when this page has no view of it. */
export function idLink(id, text) {
  const href = routeFor(id);
  const kind = idKinds.find((candidate) => String(id).startsWith(candidate.prefix));
  if (!href) return h("code", { class: "id" }, String(id));
  return h("a", { href, class: "id", title: `Show ${kind.label} ${id}` }, text ?? String(id));
}

/** Plain words, with the internal term in a tooltip (`term("turn", "raw node")`). */
export function term(plain, internal) {
  return h("span", { class: "term", title: internal }, plain);
}

/** `routingText` → "routing text". */
export function humanize(key) {
  return String(key)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .toLowerCase();
}

/**
 * Any JSON value as readable markup: ids link to their record, ISO times read as times, flags as
 * badges, objects as definition lists. Used for fields the API gains after this page was written.
 */
export function genericValue(value, key = "", depth = 0) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  if (typeof value === "boolean") {
    const name = key ? humanize(key) : "";
    return h(
      "span",
      { class: value ? "badge badge-on" : "badge" },
      value ? name || "yes" : name ? `not ${name}` : "no",
    );
  }
  if (typeof value === "number") return h("span", { class: "number" }, formatNumber(value));
  if (typeof value === "string") {
    if (idPattern.test(value)) return idLink(value);
    if (isoPattern.test(value)) return timeElement(value);
    const url = safeExternalUrl(value);
    if (url && /^https?:\/\//.test(value)) {
      return h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, value);
    }
    return h("span", { class: "text" }, value);
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return h("span", { class: "muted" }, "none");
    if (depth > 4) return h("code", {}, JSON.stringify(value));
    const simple = value.every((item) => item === null || typeof item !== "object");
    return h(
      "ul",
      { class: simple ? "inline-list" : "value-list" },
      value.map((item) => h("li", {}, genericValue(item, "", depth + 1))),
    );
  }
  if (typeof value === "object") {
    if (depth > 4) return h("code", {}, JSON.stringify(value));
    return fieldList(value, [], depth + 1);
  }
  return h("span", {}, String(value));
}

/**
 * A `<dl>` of an object's fields, leaving out `skip` (the fields a panel already shows its own way)
 * and, with `omitEmpty`, fields that are null or empty lists.
 */
export function fieldList(record, skip = [], depth = 0, options = {}) {
  const isEmpty = (value) => value === null || value === undefined || (Array.isArray(value) && value.length === 0);
  const entries = Object.entries(record ?? {}).filter(
    ([key, value]) => !skip.includes(key) && !(options.omitEmpty && isEmpty(value)),
  );
  if (entries.length === 0) return null;
  return h(
    "dl",
    { class: "fields" },
    entries.map(([key, value]) => [h("dt", {}, humanize(key)), h("dd", {}, genericValue(value, key, depth))]),
  );
}

/**
 * A thumbnail button for a stored image; activating it shows the original. Caption-only images
 * (no pixels) show their caption instead.
 */
export function imageThumbnail(api, image) {
  const label = image.caption || image.derivedText || "image";
  if (!image.hash) {
    return h(
      "figure",
      { class: "thumb thumb-missing" },
      h("span", { class: "thumb-placeholder", "aria-hidden": "true" }, "no pixels"),
      h("figcaption", {}, image.caption ?? "caption-only image", image.origin ? [" — ", image.origin] : null),
    );
  }
  const img = h("img", { alt: label, width: 96, height: 96, loading: "lazy", decoding: "async", class: "thumb-img" });
  img.dataset.hash = image.hash;
  whenNearView(img, () =>
    api
      .imageUrl(image.hash, { thumbnail: true })
      .then((url) => {
        img.src = url;
      })
      .catch(() => {
        img.alt = `${label} (thumbnail failed to load)`;
        img.classList.add("broken");
      }),
  );
  const button = h(
    "button",
    {
      type: "button",
      class: "thumb-button",
      title: `Show the original: ${label}`,
      onclick: () => openImage(api, image),
    },
    img,
  );
  return h("figure", { class: "thumb" }, button, image.caption ? h("figcaption", {}, image.caption) : null);
}

/**
 * Thumbnails are fetched by script (they need the auth headers), so `loading="lazy"` cannot defer
 * them: fetch each one only when it comes near the viewport, or a session of 500 images asks for 500 at once.
 */
const pending = new WeakMap();
const nearView =
  "IntersectionObserver" in window
    ? new IntersectionObserver(
        (observed) => {
          for (const { target, isIntersecting } of observed) {
            if (!isIntersecting) continue;
            nearView.unobserve(target);
            pending.get(target)?.();
            pending.delete(target);
          }
        },
        { rootMargin: "600px" },
      )
    : null;

function whenNearView(element, load) {
  if (!nearView) {
    load();
    return;
  }
  pending.set(element, load);
  nearView.observe(element);
}

/** Opens the dialog with the original image and what is known about it. */
export function openImage(api, image) {
  const dialog = document.getElementById("image-dialog");
  const body = document.getElementById("image-dialog-body");
  const title = document.getElementById("image-dialog-title");
  title.textContent = image.caption || "Image";
  const original = h("img", { class: "original", alt: image.caption || image.derivedText || "original image" });
  const open = h("a", { class: "button-link", target: "_blank", rel: "noopener", hidden: true }, "Open in a new tab");
  replace(
    body,
    original,
    h(
      "dl",
      { class: "fields" },
      [
        ["media type", image.mediaType],
        ["size", image.width && image.height ? `${image.width} × ${image.height} px` : null],
        ["bytes", image.bytes ? formatBytes(image.bytes) : null],
        ["text read from the image", image.derivedText],
        ["origin", image.origin],
        ["hash", image.hash],
      ]
        .filter(([, value]) => value)
        .map(([key, value]) => [h("dt", {}, key), h("dd", {}, key === "hash" ? h("code", {}, value) : value)]),
    ),
    open,
  );
  api
    .imageUrl(image.hash)
    .then((url) => {
      original.src = url;
      open.href = url;
      open.hidden = false;
    })
    .catch(() => {
      original.replaceWith(h("p", { class: "error" }, "The original could not be loaded."));
    });
  dialog.showModal();
}

/** Where a raw node came from: session, turn, time, speaker, role, source, uri. */
export function provenanceList(provenance) {
  const rows = [
    [
      "session",
      provenance.sessionId ? idLink(provenance.sessionId, provenance.sessionKey ?? provenance.sessionId) : null,
    ],
    ["turn", provenance.turn !== undefined ? String(provenance.turn) : null],
    ["time", provenance.time ? timeElement(provenance.time) : null],
    ["speaker", provenance.speaker],
    ["role", provenance.role],
    ["source", provenance.source],
    ["uri", provenance.uri ? genericValue(provenance.uri) : null],
  ].filter(([, value]) => value !== null && value !== undefined && value !== "");
  return h(
    "dl",
    { class: "fields provenance" },
    rows.map(([key, value]) => [h("dt", {}, key), h("dd", {}, value)]),
  );
}
