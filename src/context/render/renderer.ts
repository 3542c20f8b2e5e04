import { createHash } from "node:crypto";
import type { Artifact } from "../trajectory.ts";
import { chartSvg } from "./chart-svg.ts";
import type { LaidPage, RenderSettings } from "./page-layout.ts";
import { pageSvg, type RasterImage, rasterise } from "./rasterise.ts";
import { tableSvg } from "./table-svg.ts";

/** Rasterised images kept by SVG hash: a replay re-renders the same pages and artifacts many times. */
const cacheLimit = 512;

/**
 * Draws laid-out pages and artifacts to PNG. Deterministic: output depends only on the input and settings.
 * The cache is an optimisation only; an entry is the bytes the SVG would produce again.
 */
export class Renderer {
  readonly #cache = new Map<string, Promise<RasterImage>>();

  page(page: LaidPage, settings: RenderSettings): Promise<RasterImage> {
    return this.#draw(pageSvg(page, settings));
  }

  artifact(artifact: Artifact, settings: RenderSettings): Promise<RasterImage> {
    return this.#draw(artifact.kind === "chart" ? chartSvg(artifact, settings) : tableSvg(artifact, settings));
  }

  #draw(svg: string): Promise<RasterImage> {
    const key = createHash("sha256").update(svg).digest("hex");
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      // Refresh its place: the map's order is the eviction order.
      this.#cache.delete(key);
      this.#cache.set(key, cached);
      return cached;
    }
    const drawn = rasterise(svg);
    drawn.catch(() => this.#cache.delete(key));
    this.#cache.set(key, drawn);
    if (this.#cache.size > cacheLimit) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    return drawn;
  }
}
