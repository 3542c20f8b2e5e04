import { InputError } from "../../core/errors.ts";
import { HttpError } from "./errors.ts";

/**
 * Which Host and Origin headers the service answers, and which origins may read it cross-origin.
 * Without it a page on any site can reach a loopback server through DNS rebinding (its own name
 * resolving to 127.0.0.1) or a plain cross-origin fetch, and read or forget memory under `--no-auth`.
 */
export interface OriginPolicyOptions {
  /**
   * Host names accepted besides the loopback names, as `name` (any port) or `name:port`, for a
   * deployment behind a proxy or on a LAN name. `*` accepts any Host (only behind a proxy that checks it).
   */
  readonly allowedHosts?: readonly string[];
  /** Origins (`https://app.example.com`) whose browsers may send requests, besides the allowed hosts' own. */
  readonly allowedOrigins?: readonly string[];
  /** Origins that get CORS headers (and so may read answers cross-origin); none by default. */
  readonly corsOrigins?: readonly string[];
}

export interface OriginPolicy {
  /** Throws `HttpError` 403 (`host_not_allowed` / `origin_not_allowed`) for a request the policy refuses. */
  check(headers: Headers, url: string): void;
  /** Whether `origin` gets CORS headers. */
  corsAllows(origin: string): boolean;
  readonly corsOrigins: readonly string[];
}

const loopbackNames = ["localhost", "127.0.0.1", "[::1]"];

/**
 * Builds the policy. `boundPort` is read on every request: the port is known only once the socket
 * listens (port 0 in tests); while it is unknown (`app.request()` without a socket) loopback names
 * match on any port.
 *
 * @example
 * const policy = originPolicy({ allowedHosts: ["memory.example.com"] }, () => 7700);
 * policy.check(request.headers, request.url); // throws HttpError("host_not_allowed") for Host: evil.example
 */
export function originPolicy(options: OriginPolicyOptions, boundPort: () => number | undefined): OriginPolicy {
  const extraHosts = (options.allowedHosts ?? []).map((host, index) =>
    parseHostPattern(host, `allowedHosts[${index}]`),
  );
  const anyHost = extraHosts.some((pattern) => pattern.name === "*");
  const allowedOrigins = new Set(
    (options.allowedOrigins ?? []).map((origin, index) => normaliseOrigin(origin, `allowedOrigins[${index}]`)),
  );
  const corsOrigins = (options.corsOrigins ?? []).map((origin, index) =>
    normaliseOrigin(origin, `corsOrigins[${index}]`),
  );
  const corsSet = new Set(corsOrigins);

  const hostAllowed = (host: HostName): boolean => {
    if (anyHost) return true;
    const port = boundPort();
    if (loopbackNames.includes(host.name) && (port === undefined || (host.port ?? 80) === port)) return true;
    return extraHosts.some(
      (pattern) => pattern.name === host.name && (pattern.port === undefined || pattern.port === host.port),
    );
  };

  return {
    corsOrigins,
    corsAllows: (origin) => corsSet.has(origin),
    check(headers, url) {
      const host = headers.get("host") ?? new URL(url).host;
      const parsed = splitHost(host);
      if (parsed === null || !hostAllowed(parsed)) {
        throw new HttpError(
          "host_not_allowed",
          `Host ${JSON.stringify(host)} is not served here (a loopback name, or one named with --allowed-hosts / CAIRN_ALLOWED_HOSTS)`,
          { field: "Host" },
        );
      }
      const origin = headers.get("origin");
      if (origin === null) return;
      if (allowedOrigins.has(origin) || corsSet.has(origin)) return;
      // Same origin (the dashboard's own requests): the Host was checked above. A page elsewhere,
      // even on another loopback port, is a different origin and needs to be named.
      const originHost = hostOfOrigin(origin);
      if (originHost !== null && originHost.name === parsed.name && originHost.port === parsed.port) return;
      throw new HttpError(
        "origin_not_allowed",
        `Origin ${JSON.stringify(origin)} may not call this server (allow it with --allowed-origins or --cors-origin)`,
        { field: "Origin" },
      );
    },
  };
}

/** A host name, lower-cased, and its port when one was written (absent = the scheme's default). */
interface HostName {
  readonly name: string;
  readonly port: number | undefined;
}

const hostPattern = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/;

/** `name`, `name:port`, `[v6]` or `[v6]:port`; anything else (user info, paths, spaces) is no host. */
function splitHost(host: string): HostName | null {
  const match = hostPattern.exec(host.trim().toLowerCase());
  if (!match?.[1]) return null;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && port > 65_535) return null;
  return { name: match[1], port };
}

function parseHostPattern(text: string, field: string): HostName {
  if (text.trim() === "*") return { name: "*", port: undefined };
  const parsed = splitHost(text);
  if (parsed === null) throw new InputError(field, `not a host name or name:port: ${JSON.stringify(text)}`);
  return parsed;
}

/** The host of an `http(s)://` origin; the WHATWG URL parser drops a default port, as browsers do in Host. */
function hostOfOrigin(origin: string): HostName | null {
  try {
    const url = new URL(origin);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    return { name: url.hostname.toLowerCase(), port: url.port === "" ? undefined : Number(url.port) };
  } catch {
    return null;
  }
}

function normaliseOrigin(text: string, field: string): string {
  try {
    const url = new URL(text.trim());
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.pathname !== "/" || url.search || url.hash)
      throw new Error("not an origin");
    return url.origin;
  } catch {
    throw new InputError(field, `not an origin (scheme://host[:port]): ${JSON.stringify(text)}`);
  }
}

/** Splits a comma-separated flag or environment value; empty parts are dropped. */
export function listSetting(value: string | readonly string[] | undefined): string[] {
  const parts = typeof value === "string" ? [value] : (value ?? []);
  return parts
    .flatMap((part) => part.split(","))
    .map((part) => part.trim())
    .filter((part) => part.length > 0);
}
