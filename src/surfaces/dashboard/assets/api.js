/** The REST API under /v1 of the same origin, with the scope headers the person set. */

const storageKey = "cairn.dashboard.connection";

/** `{ apiKey, user, tenant }` from this browser's storage; empty strings when never set. */
export function loadConnection() {
  const empty = { apiKey: "", user: "", tenant: "" };
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey) ?? "null");
    if (!stored || typeof stored !== "object") return empty;
    return {
      apiKey: typeof stored.apiKey === "string" ? stored.apiKey : "",
      user: typeof stored.user === "string" ? stored.user : "",
      tenant: typeof stored.tenant === "string" ? stored.tenant : "",
    };
  } catch {
    // Unreadable storage (private mode, corrupt value) means "not set", which the form then shows.
    return empty;
  }
}

export function saveConnection(connection) {
  localStorage.setItem(storageKey, JSON.stringify(connection));
}

/** An error answer of the API: `{ error: { code, message, field? } }`, or the status when the body is not that. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.field = field ?? null;
  }

  /** A sentence for a person, with a hint for the errors the connection settings can fix. */
  describe() {
    const where = this.field ? ` (${this.field})` : "";
    const hint =
      this.status === 401
        ? " Set an API key under Connection."
        : this.status === 403
          ? " The key may be bound to another user: clear the User field under Connection."
          : "";
    return `${this.message}${where}.${hint}`;
  }
}

export function describeError(error) {
  if (error instanceof ApiError) return error.describe();
  return `Could not reach the server: ${error?.message ?? String(error)}`;
}

async function toApiError(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON (e.g. a proxy's HTML page): the status line is all there is to report.
  }
  const error = body?.error;
  if (error && typeof error.message === "string") {
    return new ApiError(response.status, error.code ?? "error", error.message, error.field);
  }
  return new ApiError(response.status, "http", `${response.status} ${response.statusText || "error"}`);
}

export function createApi(getConnection) {
  /** hash|kind → Promise of an object URL; images need the auth headers, so `<img src>` cannot fetch them. */
  let imageUrls = new Map();

  function headers(json) {
    const result = new Headers({ Accept: "application/json" });
    const { apiKey, user, tenant } = getConnection();
    if (apiKey) result.set("Authorization", `Bearer ${apiKey}`);
    if (user) result.set("X-Cairn-User", user);
    if (tenant) result.set("X-Cairn-Tenant", tenant);
    if (json) result.set("Content-Type", "application/json");
    return result;
  }

  async function request(method, path, body) {
    const response = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw await toApiError(response);
    return response;
  }

  async function json(method, path, body) {
    return (await request(method, path, body)).json();
  }

  function page(options) {
    const params = new URLSearchParams();
    if (options?.limit !== undefined) params.set("limit", String(options.limit));
    if (options?.offset !== undefined) params.set("offset", String(options.offset));
    const query = params.toString();
    return query ? `?${query}` : "";
  }

  return {
    health: () => json("GET", "/v1/health"),
    stats: () => json("GET", "/v1/stats"),
    listSessions: (options) => json("GET", `/v1/sessions${page(options)}`),
    getSession: (id) => json("GET", `/v1/sessions/${encodeURIComponent(id)}`),
    getRawNode: (id) => json("GET", `/v1/raw-nodes/${encodeURIComponent(id)}`),
    listEntries: (options) => json("GET", `/v1/entries${page(options)}`),
    /** The question bank (PMMC): active programs and recent retirements. */
    bank: () => json("GET", "/v1/bank?limit=200"),
    listAudit: (options) => json("GET", `/v1/audit${page(options)}`),
    addSession: (session) =>
      request("POST", "/v1/sessions", session).then(async (response) => ({
        status: response.status,
        result: await response.json(),
      })),
    search: (query) => json("POST", "/v1/search", query),
    knowledge: (options) => json("GET", `/v1/knowledge${page(options)}`),
    /** The tenant's users (`tenantWide`), or only the key's own user for a key bound to one. */
    listUsers: () => json("GET", "/v1/users"),
    /** `{ session: key }` or `{ rawNode: id }`; audited by the server like any forget. */
    forget: (target) => json("POST", "/v1/forget", target),
    /** Video memory: entities, an entity's facts panel, per-segment moments, rules and the notification log. */
    videoEntities: () => json("GET", "/v1/video/entities"),
    videoEntityMemory: (id) => json("GET", `/v1/video/entities/${encodeURIComponent(id)}/memory`),
    videoMoments: () => json("GET", "/v1/video/moments?limit=12"),
    /** The source view: watched sources with their streams and live status, one stream's segments, a source's scene facts. */
    videoSources: () => json("GET", "/v1/video/sources"),
    videoStreamMoments: (stream) => json("GET", `/v1/video/moments?stream=${encodeURIComponent(stream)}&limit=500`),
    videoSourceFacts: (source) => json("GET", `/v1/video/facts?source=${encodeURIComponent(source)}`),
    videoRules: () => json("GET", "/v1/video/rules"),
    videoNotifications: () => json("GET", "/v1/video/notifications?limit=50"),
    /** A trajectory and a manager in, the working context out (`POST /v1/context`). */
    manageContext: (body) => json("POST", "/v1/context", body),
    /** An image's original bytes as a Blob (for sending them on, e.g. into a trajectory). */
    imageBlob: (hash) => request("GET", `/v1/blobs/${encodeURIComponent(hash)}`).then((response) => response.blob()),

    /** An object URL for an image blob (or its thumbnail), fetched once per scope. */
    imageUrl(hash, options = {}) {
      const kind = options.thumbnail ? "thumbnail" : "original";
      const key = `${kind}:${hash}`;
      let url = imageUrls.get(key);
      if (!url) {
        const path = `/v1/blobs/${encodeURIComponent(hash)}${options.thumbnail ? "/thumbnail" : ""}`;
        url = request("GET", path)
          .then((response) => response.blob())
          .then((blob) => URL.createObjectURL(blob));
        // A failed fetch is not cached: the next render tries again.
        url.catch(() => imageUrls.delete(key));
        imageUrls.set(key, url);
      }
      return url;
    },

    /** Forget cached images, e.g. when the scope changes. */
    clearImages() {
      for (const url of imageUrls.values()) url.then((value) => URL.revokeObjectURL(value)).catch(() => {});
      imageUrls = new Map();
    },
  };
}

/** A picked file as base64 (what `POST /v1/sessions` and `POST /v1/search` take as `{ data }`). */
export function fileToBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      const value = String(reader.result);
      resolve(value.slice(value.indexOf(",") + 1));
    });
    reader.addEventListener("error", () => reject(reader.error ?? new Error(`could not read ${file.name}`)));
    reader.readAsDataURL(file);
  });
}
