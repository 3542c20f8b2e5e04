/**
 * Draws the demo's images with sharp (SVG → PNG) so the example memory holds real pixels we made
 * ourselves. Run `npx tsx examples/make-examples.ts` to regenerate; the outputs are committed.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import sharp from "sharp";

const here = new URL(".", import.meta.url).pathname;

function bicycle(options: { frame: string; sky: string; shift: number; size: number }): string {
  const { frame, sky, shift, size } = options;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size * 0.75}" viewBox="${-shift} 0 400 300">
    <rect x="${-shift}" width="400" height="300" fill="${sky}"/><rect x="${-shift}" y="230" width="400" height="70" fill="#6a5"/>
    <g fill="none" stroke="#222" stroke-width="10"><circle cx="110" cy="200" r="60"/><circle cx="290" cy="200" r="60"/></g>
    <g fill="none" stroke="${frame}" stroke-width="12" stroke-linecap="round">
      <path d="M110 200 L170 110 L260 110 L290 200 M170 110 L200 200 L260 110 M200 200 L110 200"/>
      <path d="M255 110 L265 80 L295 80 M165 110 L155 85 M140 85 L175 85"/></g></svg>`;
}

function whiteboard(): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="400"><rect width="640" height="400" fill="#f4f4f0"/>
    <rect x="10" y="10" width="620" height="380" fill="none" stroke="#999" stroke-width="8"/>
    <text x="40" y="90" font-family="DejaVu Sans, sans-serif" font-size="54" font-weight="bold" fill="#1a3d8f">Q3 LAUNCH PLAN</text>
    <text x="40" y="170" font-family="DejaVu Sans, sans-serif" font-size="36" fill="#222">1. Beta to 50 customers</text>
    <text x="40" y="230" font-family="DejaVu Sans, sans-serif" font-size="36" fill="#222">2. Pricing page live</text>
    <text x="40" y="290" font-family="DejaVu Sans, sans-serif" font-size="36" fill="#222">3. Press on September 14</text></svg>`;
}

function cat(): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="400" height="300" fill="#8b6f5a"/>
    <rect y="190" width="400" height="110" fill="#b33"/><ellipse cx="200" cy="190" rx="120" ry="60" fill="#f39c32"/>
    <circle cx="120" cy="150" r="48" fill="#f39c32"/><path d="M85 118 L92 80 L115 106 Z M130 104 L150 78 L158 118 Z" fill="#f39c32"/>
    <path d="M100 150 q10 -8 20 0 M130 150 q10 -8 20 0" stroke="#222" stroke-width="4" fill="none"/>
    <path d="M300 200 q60 -10 40 -60" stroke="#f39c32" stroke-width="22" fill="none" stroke-linecap="round"/></svg>`;
}

function receipt(): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="420" height="560"><rect width="420" height="560" fill="#ddd"/>
    <rect x="40" y="20" width="340" height="520" fill="#fff"/>
    <g font-family="DejaVu Sans Mono, monospace" fill="#111">
    <text x="70" y="90" font-size="34" font-weight="bold">INVOICE 4821</text>
    <text x="70" y="160" font-size="24">Harbor Vet Clinic</text>
    <text x="70" y="220" font-size="24">Vaccination  45.00</text>
    <text x="70" y="260" font-size="24">Checkup      14.90</text>
    <text x="70" y="340" font-size="30" font-weight="bold">TOTAL 59.90</text></g></svg>`;
}

async function png(svg: string, path: string): Promise<void> {
  await writeFile(join(here, path), await sharp(Buffer.from(svg)).png({ compressionLevel: 9 }).toBuffer());
}

await png(bicycle({ frame: "#c0392b", sky: "#bfe3ff", shift: 0, size: 400 }), "images/red-bike.png");
await png(whiteboard(), "images/whiteboard.png");
await png(cat(), "images/miso-sofa.png");
await png(receipt(), "images/vet-invoice.png");
// The image→image query: the same bike photographed again, smaller, shifted, under a greyer sky.
await png(bicycle({ frame: "#b5332a", sky: "#d0dde6", shift: 30, size: 320 }), "queries/bike-again.png");
