import { InputError } from "../core/errors.ts";

/**
 * How a provider charges an image, as data. Providers bill pixels differently; the rule is chosen by the
 * caller (the model they will send the context to) and every manager is costed with the same one.
 *
 * - `openai-tile` (GPT-4o / 4.1 class, `detail: "high"`): the image is shrunk to fit 2048×2048, then
 *   until its short side is at most 768; each 512×512 tile costs `tileTokens` (170) on top of a fixed
 *   `baseTokens` (85). `detail: "low"` costs the base alone.
 * - `patch` (Qwen2-VL class vision encoders): one token per `patchSize`×`patchSize` block (28: 14 px patches
 *   merged 2×2), rounded up per side — proportional to area, the approximation VERA's Appendix C uses.
 * - `area` (Claude class): `width × height / pixelsPerToken` (750), after shrinking the long edge to
 *   `maxEdge` (1568).
 */
export type ImageTokenRule =
  | { readonly kind: "openai-tile"; readonly baseTokens?: number; readonly tileTokens?: number }
  | { readonly kind: "patch"; readonly patchSize?: number }
  | { readonly kind: "area"; readonly pixelsPerToken?: number; readonly maxEdge?: number };

export const imageTokenRuleKinds = ["openai-tile", "patch", "area"] as const;

/** The default rule: the accounting of the OpenAI-compatible chat API the working context is written for. */
export const defaultImageTokenRule: ImageTokenRule = Object.freeze({ kind: "openai-tile" });

export interface ImageSize {
  readonly width: number;
  readonly height: number;
  /** OpenAI's `detail`; only `openai-tile` distinguishes it. */
  readonly detail?: "low" | "high";
}

/**
 * Tokens one image costs under a rule.
 *
 * @example imageTokens({ width: 1024, height: 1024 }, { kind: "openai-tile" }) // 765: 768×768 → 4 tiles
 */
export function imageTokens(size: ImageSize, rule: ImageTokenRule = defaultImageTokenRule): number {
  const { width, height } = size;
  if (!(Number.isFinite(width) && Number.isFinite(height)) || width <= 0 || height <= 0) {
    throw new InputError("image", `size must be positive, got ${width}×${height}`);
  }
  switch (rule.kind) {
    case "openai-tile": {
      const base = rule.baseTokens ?? 85;
      if (size.detail === "low") return base;
      const [fitW, fitH] = shrinkToFit(width, height, 2048 / Math.max(width, height));
      const [w, h] = shrinkToFit(fitW, fitH, 768 / Math.min(fitW, fitH));
      return base + (rule.tileTokens ?? 170) * Math.ceil(w / 512) * Math.ceil(h / 512);
    }
    case "patch": {
      const patch = rule.patchSize ?? 28;
      return Math.ceil(width / patch) * Math.ceil(height / patch);
    }
    case "area": {
      const [w, h] = shrinkToFit(width, height, (rule.maxEdge ?? 1568) / Math.max(width, height));
      return Math.ceil((w * h) / (rule.pixelsPerToken ?? 750));
    }
  }
}

/** Scales down by `factor` when it is below 1 (never up), keeping whole pixels. */
function shrinkToFit(width: number, height: number, factor: number): [number, number] {
  if (factor >= 1) return [width, height];
  return [Math.max(1, Math.floor(width * factor)), Math.max(1, Math.floor(height * factor))];
}

/** Parses a rule name from a flag or request (`openai-tile`, `patch`, `area`). */
export function imageTokenRuleNamed(name: string, field = "imageTokens"): ImageTokenRule {
  if ((imageTokenRuleKinds as readonly string[]).includes(name)) return { kind: name } as ImageTokenRule;
  throw new InputError(field, `unknown image token rule "${name}"; expected ${imageTokenRuleKinds.join(", ")}`);
}
