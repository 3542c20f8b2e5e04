import type { TableArtifact } from "../trajectory.ts";
import { monoAdvance, type RenderSettings } from "./page-layout.ts";
import { escapeXml } from "./rasterise.ts";

/** Longest cell drawn, in characters; a longer one ends in an ellipsis (the full text stays in memory). */
const maxCellChars = 60;
/** Most rows drawn on one table image; the rest are counted in a final line. */
const maxRows = 60;

/**
 * A table drawn as a grid: bold shaded header, ruled cells padded around monospace text, numbers right-aligned,
 * so rows and columns stay readable as structure rather than a run of pipes.
 */
export function tableSvg(table: TableArtifact, settings: RenderSettings): string {
  const font = settings.fontSize;
  const charWidth = font * monoAdvance;
  const padX = 10;
  const rowHeight = Math.round(font * 1.9);
  const clip = (value: string | number) => {
    const text = String(value);
    return text.length > maxCellChars ? `${text.slice(0, maxCellChars - 1)}…` : text;
  };
  const rows = table.rows.slice(0, maxRows).map((row) => table.columns.map((_, column) => clip(row[column] ?? "")));
  const header = table.columns.map(clip);
  const widths = header.map(
    (title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)) * charWidth + 2 * padX,
  );
  const numeric = header.map(
    (_, column) => rows.length > 0 && rows.every((row) => /^-?[\d.,]+%?$/.test(row[column] ?? "")),
  );
  const margin = settings.margin;
  const titleHeight = table.title ? rowHeight : 0;
  const omitted = table.rows.length - rows.length;
  const width = Math.ceil(2 * margin + widths.reduce((sum, value) => sum + value, 0));
  const height = Math.ceil(2 * margin + titleHeight + rowHeight * (rows.length + 1) + (omitted > 0 ? rowHeight : 0));
  const parts: string[] = [];
  if (table.title)
    parts.push(`<text x="${margin}" y="${margin + font}" font-weight="bold">${escapeXml(table.title)}</text>`);
  const top = margin + titleHeight;
  const tableWidth = width - 2 * margin;
  parts.push(`<rect x="${margin}" y="${top}" width="${tableWidth}" height="${rowHeight}" fill="#eef2f7"/>`);
  [header, ...rows].forEach((row, rowIndex) => {
    const y = top + rowIndex * rowHeight;
    let x = margin;
    row.forEach((cell, column) => {
      const cellWidth = widths[column] ?? 0;
      const right = numeric[column] && rowIndex > 0;
      const textX = right ? x + cellWidth - padX : x + padX;
      const weight = rowIndex === 0 ? ' font-weight="bold"' : "";
      parts.push(
        `<text x="${textX.toFixed(1)}" y="${(y + rowHeight / 2 + font * 0.35).toFixed(1)}"${right ? ' text-anchor="end"' : ""}${weight}>${escapeXml(cell)}</text>`,
      );
      x += cellWidth;
    });
    parts.push(
      `<line x1="${margin}" x2="${margin + tableWidth}" y1="${y + rowHeight}" y2="${y + rowHeight}" stroke="#999999"/>`,
    );
  });
  if (omitted > 0)
    parts.push(
      `<text x="${margin}" y="${top + rowHeight * (rows.length + 1) + font * 1.3}" font-style="oblique">… ${omitted} more rows</text>`,
    );
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.round(width * settings.scale)}" height="${Math.round(height * settings.scale)}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<g font-family="DejaVu Sans Mono, monospace" font-size="${font}" fill="#111111" xml:space="preserve">${parts.join("")}</g></svg>`
  );
}
