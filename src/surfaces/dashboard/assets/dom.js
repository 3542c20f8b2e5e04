/**
 * DOM building without HTML strings: every piece of data becomes a text node or an attribute value,
 * so nothing a person or a dataset stored can turn into markup.
 */

/**
 * `h("a", { href: "#x", class: "link" }, "text", child)`. Props starting with `on` are listeners;
 * `false`, `null` and `undefined` props are left out; `true` sets an empty attribute.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (key === "class") element.className = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key === "hidden") element.hidden = Boolean(value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** Appends strings (as text), numbers, nodes and nested arrays; skips null, undefined and false. */
export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces every child of `parent`. */
export function replace(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

/** A `<time>` showing the local date and time, with the exact ISO time kept in `datetime` and the tooltip. */
export function timeElement(iso, options = {}) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h("span", {}, String(iso));
  const text = options.timeOnly
    ? date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  return h("time", { datetime: date.toISOString(), title: date.toISOString() }, text);
}

/** Sets a status region: `kind` is "info", "ok" or "error" (errors are also announced assertively). */
export function setStatus(element, message, kind = "info") {
  element.dataset.kind = kind;
  element.setAttribute("role", kind === "error" ? "alert" : "status");
  element.textContent = message ?? "";
}

/** Only web links become clickable; anything else (e.g. `javascript:` from stored data) stays text. */
export function safeExternalUrl(value) {
  try {
    const url = new URL(String(value));
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

export function formatNumber(value) {
  return typeof value === "number" ? value.toLocaleString() : String(value);
}

export function formatBytes(bytes) {
  if (typeof bytes !== "number") return "";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
