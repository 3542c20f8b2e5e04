import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { describe, it } from "node:test";
import { dashboardRoutes } from "../../src/surfaces/dashboard/routes.ts";

describe("dashboardRoutes", () => {
  const app = dashboardRoutes();

  it("serves the page with a policy that allows only this origin's scripts", async () => {
    const response = await app.request("/");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
    assert.match(response.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    const html = await response.text();
    assert.match(html, /<script type="module" src="\/dashboard\/app\.js"><\/script>/);
  });

  it("serves every asset with its content type", async () => {
    const types = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8", svg: "image/svg+xml" };
    const assets = readdirSync(new URL("../../src/surfaces/dashboard/assets/", import.meta.url)).filter(
      (name) => !name.endsWith(".html"),
    );
    assert.ok(assets.includes("app.js") && assets.includes("style.css"));
    for (const name of assets) {
      const response = await app.request(`/dashboard/${name}`);
      assert.equal(response.status, 200, name);
      const extension = name.split(".").pop() as keyof typeof types;
      assert.equal(response.headers.get("content-type"), types[extension], name);
      assert.ok((await response.arrayBuffer()).byteLength > 0, name);
    }
  });

  it("answers 404 for anything outside the assets folder or of another kind", async () => {
    for (const path of [
      "/dashboard/missing.js",
      "/dashboard/index.html",
      "/dashboard/..%2Froutes.ts",
      "/dashboard/%2E%2E%2Froutes.ts",
      "/dashboard/routes.ts",
      "/dashboard/",
    ]) {
      const response = await app.request(path);
      assert.equal(response.status, 404, path);
    }
    const body = (await (await app.request("/dashboard/missing.js")).json()) as { error: { code: string } };
    assert.equal(body.error.code, "not_found");
  });

  it("every module the page imports exists, so a missing file fails here and not in a browser", async () => {
    const assetsUrl = new URL("../../src/surfaces/dashboard/assets/", import.meta.url);
    const names = new Set(readdirSync(assetsUrl));
    for (const name of [...names].filter((file) => file.endsWith(".js"))) {
      const source = await (await app.request(`/dashboard/${name}`)).text();
      for (const [, imported] of source.matchAll(/from "\.\/([^"]+)"/g)) {
        assert.ok(names.has(imported as string), `${name} imports ${imported}`);
      }
    }
  });
});
