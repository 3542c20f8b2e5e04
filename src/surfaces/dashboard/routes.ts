import { readFile } from "node:fs/promises";
import { Hono } from "hono";

/** The dashboard's files live next to this module, served as they are: no build step. */
const assetsDir = new URL("./assets/", import.meta.url);

const contentTypes: Readonly<Record<string, string>> = Object.freeze({
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
});

/** Plain names only: no folders, no dots beyond the extension, so a request cannot leave `assets/`. */
const assetName = /^[a-z0-9][a-z0-9-]*\.(js|css|svg)$/;

/**
 * Everything comes from this server: scripts and styles from `/dashboard/`, data from `/v1`,
 * images from `/v1/blobs` or a local `blob:` preview of a file the person picked. Nothing inline.
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/**
 * The web dashboard: `GET /` is the page, `GET /dashboard/<file>` its scripts and styles. The page
 * talks only to the REST API under `/v1` of the same origin.
 *
 * @example app.route("/", dashboardRoutes());
 */
export function dashboardRoutes(): Hono {
  const app = new Hono();
  app.get("/", async (c) => {
    const html = await readFile(new URL("index.html", assetsDir));
    return c.body(html, 200, {
      "Content-Type": contentTypes.html ?? "text/html",
      "Content-Security-Policy": contentSecurityPolicy,
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-cache",
    });
  });
  app.get("/dashboard/:file", async (c) => {
    const name = c.req.param("file");
    const match = assetName.exec(name);
    const extension = match?.[1];
    const type = extension ? contentTypes[extension] : undefined;
    const data = type ? await readAsset(name) : null;
    if (!type || !data) {
      return c.json({ error: { code: "not_found", message: `dashboard asset ${name} not found` } }, 404);
    }
    return c.body(data, 200, {
      "Content-Type": type,
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "no-cache",
    });
  });
  return app;
}

async function readAsset(name: string): Promise<Uint8Array<ArrayBuffer> | null> {
  try {
    return await readFile(new URL(name, assetsDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
