import type { ChartArtifact } from "../trajectory.ts";
import type { RenderSettings } from "./page-layout.ts";
import { escapeXml } from "./rasterise.ts";

const seriesColours = ["#0b5394", "#c0392b", "#1b6e20", "#a14d00", "#6b3fa0", "#117a8b"];

/**
 * A chart drawn legibly: title, value axis with ticks, category labels, a legend, and every value written on
 * its bar or point, so a reader (or OCR) gets the numbers and the shape.
 */
export function chartSvg(chart: ChartArtifact, settings: RenderSettings): string {
  const width = 900;
  const height = 560;
  const font = settings.fontSize;
  const left = 90;
  const right = 30;
  const top = 70;
  const bottom = 90;
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const values = chart.series.flatMap((series) => series.values.filter(Number.isFinite));
  const max = Math.max(0, ...values);
  const min = Math.min(0, ...values);
  const span = max - min || 1;
  const y = (value: number) => top + plotHeight - ((value - min) / span) * plotHeight;
  const parts: string[] = [];
  parts.push(
    `<text x="${width / 2}" y="36" text-anchor="middle" font-weight="bold" font-size="${font * 1.2}">${escapeXml(chart.title ?? "Chart")}</text>`,
  );
  for (let tick = 0; tick <= 4; tick++) {
    const value = min + (span * tick) / 4;
    const ty = y(value);
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${ty.toFixed(1)}" y2="${ty.toFixed(1)}" stroke="#dddddd"/>`,
    );
    parts.push(
      `<text x="${left - 8}" y="${(ty + font / 3).toFixed(1)}" text-anchor="end">${escapeXml(formatNumber(value))}</text>`,
    );
  }
  parts.push(`<line x1="${left}" x2="${left}" y1="${top}" y2="${top + plotHeight}" stroke="#333333"/>`);
  parts.push(
    `<line x1="${left}" x2="${width - right}" y1="${y(0).toFixed(1)}" y2="${y(0).toFixed(1)}" stroke="#333333"/>`,
  );
  const groups = Math.max(1, chart.labels.length);
  const groupWidth = plotWidth / groups;
  chart.labels.forEach((label, index) => {
    const x = left + groupWidth * (index + 0.5);
    parts.push(
      `<text x="${x.toFixed(1)}" y="${top + plotHeight + font * 1.4}" text-anchor="middle">${escapeXml(label)}</text>`,
    );
  });
  chart.series.forEach((series, s) => {
    const colour = seriesColours[s % seriesColours.length];
    if (chart.chart === "bar") {
      const barWidth = (groupWidth * 0.8) / Math.max(1, chart.series.length);
      series.values.forEach((value, index) => {
        if (!Number.isFinite(value)) return;
        const x = left + groupWidth * index + groupWidth * 0.1 + barWidth * s;
        const top0 = Math.min(y(value), y(0));
        const barHeight = Math.abs(y(value) - y(0));
        parts.push(
          `<rect x="${x.toFixed(1)}" y="${top0.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${barHeight.toFixed(1)}" fill="${colour}"/>`,
        );
        parts.push(
          `<text x="${(x + barWidth / 2).toFixed(1)}" y="${(top0 - 4).toFixed(1)}" text-anchor="middle" font-size="${font * 0.8}">${escapeXml(formatNumber(value))}</text>`,
        );
      });
    } else {
      const points = series.values
        .map((value, index) =>
          Number.isFinite(value) ? [left + groupWidth * (index + 0.5), y(value), value] : undefined,
        )
        .filter((point): point is number[] => point !== undefined);
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="3" points="${points.map(([px, py]) => `${px?.toFixed(1)},${py?.toFixed(1)}`).join(" ")}"/>`,
      );
      for (const [px = 0, py = 0, value = 0] of points) {
        parts.push(`<circle cx="${px.toFixed(1)}" cy="${py.toFixed(1)}" r="4" fill="${colour}"/>`);
        parts.push(
          `<text x="${px.toFixed(1)}" y="${(py - 8).toFixed(1)}" text-anchor="middle" font-size="${font * 0.8}">${escapeXml(formatNumber(value))}</text>`,
        );
      }
    }
    const lx = left + s * 180;
    parts.push(`<rect x="${lx}" y="${height - 34}" width="14" height="14" fill="${colour}"/>`);
    parts.push(`<text x="${lx + 20}" y="${height - 22}">${escapeXml(series.name)}</text>`);
  });
  const outWidth = Math.round(width * settings.scale);
  const outHeight = Math.round(height * settings.scale);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${outWidth}" height="${outHeight}" viewBox="0 0 ${width} ${height}">` +
    `<rect width="100%" height="100%" fill="#ffffff"/>` +
    `<g font-family="DejaVu Sans, sans-serif" font-size="${font}" fill="#111111">${parts.join("")}</g></svg>`
  );
}

function formatNumber(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : Number(value.toPrecision(3)).toString();
}
