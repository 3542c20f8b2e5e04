import sharp from "sharp";
import type { LaidLine, LaidPage, RenderSettings } from "./page-layout.ts";

/** Role colours of the label lines: who said what stays visible on the page (provenance). */
const roleColours: Readonly<Record<LaidLine["role"], string>> = {
  system: "#4a2370",
  user: "#083a6b",
  assistant: "#134d17",
  tool: "#6e3500",
  page: "#444444",
};

export function escapeXml(text: string): string {
  let kept = "";
  for (const char of text) if (xmlAllowed(char.codePointAt(0) ?? 0)) kept += char;
  return kept.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** XML 1.0 refuses most control characters and lone surrogates; they would fail the whole page. */
function xmlAllowed(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    code >= 0x10000
  );
}

/** One laid-out page as SVG, drawn at `scale` (the viewBox stays at scale 1, so the text is vector-drawn smaller). */
export function pageSvg(page: LaidPage, settings: RenderSettings): string {
  const { pageWidth, pageHeight, fontSize, lineHeight, margin, scale } = settings;
  const baseline = lineHeight - (lineHeight - fontSize) / 2 - fontSize * 0.2;
  const lines = page.lines.map((line, index) => {
    if (line.text === "") return "";
    const y = margin + index * lineHeight + baseline;
    const labelStyle = ` font-weight="bold" fill="${roleColours[line.role]}"`;
    const style =
      line.style === "label"
        ? labelStyle
        : line.style === "note"
          ? ` fill="${roleColours[line.role === "page" ? "page" : line.role]}" font-style="oblique"`
          : "";
    const labelChars = line.labelChars ?? 0;
    const content =
      labelChars > 0
        ? `<tspan${labelStyle}>${escapeXml(line.text.slice(0, labelChars))}</tspan>${escapeXml(line.text.slice(labelChars))}`
        : escapeXml(line.text);
    return `<text x="${margin}" y="${y.toFixed(2)}"${style}>${content}</text>`;
  });
  return svgDocument(pageWidth, pageHeight, scale, fontSize, lines.join(""));
}

function svgDocument(width: number, height: number, scale: number, fontSize: number, body: string): string {
  const outWidth = Math.max(1, Math.round(width * scale));
  const outHeight = Math.max(1, Math.round(height * scale));
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${outWidth}" height="${outHeight}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<g font-family="DejaVu Sans Mono, monospace" font-size="${fontSize}" fill="#111111" xml:space="preserve">${body}</g></svg>`
  );
}

export interface RasterImage {
  readonly png: Uint8Array;
  readonly width: number;
  readonly height: number;
}

/**
 * SVG to PNG through sharp (librsvg with fontconfig's DejaVu). Deterministic: the same SVG gives the same
 * bytes (no metadata, fixed compression), which `test/context/render.test.ts` checks.
 */
export async function rasterise(svg: string): Promise<RasterImage> {
  const { data, info } = await sharp(Buffer.from(svg), { density: 72 })
    .flatten({ background: "#ffffff" })
    .png({ compressionLevel: 9, adaptiveFiltering: false, palette: false })
    .toBuffer({ resolveWithObject: true });
  return { png: new Uint8Array(data), width: info.width, height: info.height };
}
