/** Entry point: connection settings, the stats header, the panels, and `#kind=id` links between them. */
import { createAddSession } from "./add-session.js";
import { createApi, describeError, loadConnection, saveConnection } from "./api.js";
import { createAudit } from "./audit.js";
import { createBank } from "./bank.js";
import { createContextPreview } from "./context.js";
import { h, replace, setStatus } from "./dom.js";
import { createEntries } from "./entries.js";
import { createKnowledge } from "./knowledge.js";
import { humanize } from "./render.js";
import { createSearch } from "./search.js";
import { createTimeline } from "./timeline.js";
import { createVideo } from "./video.js";

let connection = loadConnection();
const api = createApi(() => connection);
const globalStatus = document.getElementById("global-status");
const knowledge = createKnowledge(api, { onForgotten: () => afterForget() });
const timeline = createTimeline(api, { onForgotten: () => afterForget() });
const entries = createEntries(api);
const audit = createAudit(api);
const video = createVideo(api);
const bank = createBank(api);
const contextPreview = createContextPreview(api);
createSearch(api);
createAddSession(api, {
  onAdded: async (result) => {
    await Promise.all([refresh(), timeline.show(result.sessionId)]);
  },
});
setUpConnectionForm();
setUpImageDialog();
window.addEventListener("hashchange", followHash);
// A link to the record already in the address bar fires no hashchange: follow it anyway.
document.addEventListener("click", (event) => {
  const link = event.target instanceof Element ? event.target.closest("a[href^='#']") : null;
  if (link && link.getAttribute("href") === window.location.hash) followHash();
});

await showVersion();
await refresh();
await followHash();
document.body.dataset.ready = "true";

async function refresh() {
  await Promise.all([
    loadStats(),
    loadUsers(),
    knowledge.load(),
    timeline.load(),
    entries.load(),
    audit.load(),
    video.load(),
    bank.load(),
    contextPreview.load(),
  ]);
}

/** The tenant's users, for a tenant-wide key: each one a button that switches the panels to that user. */
async function loadUsers() {
  const nav = document.getElementById("users");
  let answer;
  try {
    answer = await api.listUsers();
  } catch {
    // No key, or a server that cannot answer: the other panels say why.
    nav.hidden = true;
    return;
  }
  // A key bound to one user sees itself alone: nothing to choose between.
  const names = answer.tenantWide ? [...new Set(answer.users.map((entry) => entry.user))] : [];
  nav.hidden = names.length === 0;
  replace(
    document.getElementById("users-list"),
    names.map((name) =>
      h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: name === connection.user ? "user current" : "user",
            "aria-pressed": name === connection.user ? "true" : "false",
            dataset: { user: name },
            onclick: () => switchUser(name),
          },
          name,
        ),
      ),
    ),
  );
}

async function switchUser(name) {
  connection = { ...connection, user: name };
  saveConnection(connection);
  document.getElementById("connection-form").elements.namedItem("user").value = name;
  api.clearImages();
  document.getElementById("session-detail").hidden = true;
  replace(document.getElementById("search-results"));
  await refresh();
}

/** After a forget every panel may show what is gone: reload them all, and drop the cached images. */
async function afterForget() {
  api.clearImages();
  replace(document.getElementById("search-results"));
  await refresh();
}

async function loadStats() {
  const stats = document.getElementById("stats");
  try {
    const values = await api.stats();
    const unset = !connection.apiKey && !connection.user && !connection.tenant;
    setStatus(
      globalStatus,
      unset && values.sessions === 0
        ? "Nothing stored in the default scope. Another scope? Set tenant and user under Connection (the demo memory is tenant demo, user ana)."
        : "",
    );
    replace(
      stats,
      Object.entries(values).map(([key, value]) =>
        h("div", { class: "stat" }, h("dt", {}, humanize(key)), h("dd", { dataset: { stat: key } }, String(value))),
      ),
    );
  } catch (error) {
    replace(stats);
    setStatus(globalStatus, describeError(error), "error");
    if (error?.status === 401 || error?.status === 403) document.getElementById("connection").open = true;
  }
}

async function showVersion() {
  try {
    const health = await api.health();
    document.getElementById("server-version").textContent = health.version ? `v${health.version}` : "";
  } catch {
    // The version is decoration; the panels report an unreachable server themselves.
  }
}

function setUpConnectionForm() {
  const form = document.getElementById("connection-form");
  for (const [name, value] of Object.entries(connection)) form.elements.namedItem(name).value = value;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    connection = {
      apiKey: String(data.get("apiKey") ?? "").trim(),
      user: String(data.get("user") ?? "").trim(),
      tenant: String(data.get("tenant") ?? "").trim(),
    };
    saveConnection(connection);
    api.clearImages();
    document.getElementById("session-detail").hidden = true;
    replace(document.getElementById("search-results"));
    document.getElementById("connection").open = false;
    await refresh();
  });
}

function setUpImageDialog() {
  const dialog = document.getElementById("image-dialog");
  // A click on the backdrop (outside the dialog's box) closes it, as Escape does.
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close();
  });
}

/** `#session=ses_…`, `#raw-node=rn_…`, `#entry=ent_…`: links in any panel lead to the record. */
async function followHash() {
  const match = /^#(session|raw-node|entry)=(.+)$/.exec(window.location.hash);
  if (!match) return;
  const [, kind, encoded] = match;
  const id = decodeURIComponent(encoded);
  if (kind === "session") await timeline.show(id);
  else if (kind === "entry") entries.show(id);
  else {
    try {
      const node = await api.getRawNode(id);
      await timeline.show(node.sessionId, { focusNode: node.id });
    } catch (error) {
      setStatus(globalStatus, describeError(error), "error");
    }
  }
}
