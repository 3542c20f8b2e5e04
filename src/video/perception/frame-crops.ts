import type { Frame } from "../gateway.ts";
import type { Box } from "./detector.ts";

/** Pixel helpers over packed RGB frames: crops, sharpness and colour histograms. Pure. */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

/** The box clipped to the frame, in whole pixels; null when nothing is left. */
export function clipBox(box: Box, width: number, height: number): Box | null {
  const x = Math.max(0, Math.floor(box[0]));
  const y = Math.max(0, Math.floor(box[1]));
  const right = Math.min(width, Math.ceil(box[0] + box[2]));
  const bottom = Math.min(height, Math.ceil(box[1] + box[3]));
  return right - x >= 2 && bottom - y >= 2 ? [x, y, right - x, bottom - y] : null;
}

export function cropRgb(frame: RgbImage, box: Box): RgbImage | null {
  const clipped = clipBox(box, frame.width, frame.height);
  if (!clipped) return null;
  const [x, y, width, height] = clipped;
  const rgb = new Uint8Array(width * height * 3);
  for (let row = 0; row < height; row++) {
    const from = ((y + row) * frame.width + x) * 3;
    rgb.set(frame.rgb.subarray(from, from + width * 3), row * width * 3);
  }
  return { width, height, rgb };
}

/**
 * Sharpness: the variance of a Laplacian over the crop's grey values, sampled onto a 64×64 grid
 * so that it does not depend on the crop's size. Below ~8 a face is a smear.
 */
export function sharpness(frame: Frame | RgbImage, box: Box): number {
  const clipped = clipBox(box, frame.width, frame.height);
  if (!clipped) return 0;
  const [x0, y0, width, height] = clipped;
  const side = 64;
  const grey = new Float32Array(side * side);
  for (let row = 0; row < side; row++) {
    const y = y0 + Math.min(height - 1, Math.floor(((row + 0.5) * height) / side));
    for (let column = 0; column < side; column++) {
      const x = x0 + Math.min(width - 1, Math.floor(((column + 0.5) * width) / side));
      const offset = (y * frame.width + x) * 3;
      grey[row * side + column] =
        0.299 * (frame.rgb[offset] ?? 0) + 0.587 * (frame.rgb[offset + 1] ?? 0) + 0.114 * (frame.rgb[offset + 2] ?? 0);
    }
  }
  let sum = 0;
  let squares = 0;
  let count = 0;
  for (let row = 1; row < side - 1; row++) {
    for (let column = 1; column < side - 1; column++) {
      const at = row * side + column;
      const value =
        (grey[at - 1] ?? 0) +
        (grey[at + 1] ?? 0) +
        (grey[at - side] ?? 0) +
        (grey[at + side] ?? 0) -
        4 * (grey[at] ?? 0);
      sum += value;
      squares += value * value;
      count += 1;
    }
  }
  const mean = sum / count;
  return squares / count - mean * mean;
}

/**
 * Colour of a person crop as a unit vector: HSV histograms (8 hues × 3 saturations × 3 values) of
 * its upper half (hair, shoulders, top) and lower half (trousers, skirt, legs), each over the middle
 * three fifths of the width (the sides are mostly background), square-rooted so that cosine compares
 * like the Hellinger distance. Seen from behind, hair and clothing colours are most of what tells
 * two people apart.
 */
export function colourHistogram(image: RgbImage): Float32Array {
  const binsPerRegion = 8 * 3 * 3;
  const bins = new Float32Array(binsPerRegion * 2);
  const left = Math.floor(image.width * 0.2);
  const right = Math.ceil(image.width * 0.8);
  const middle = Math.floor(image.height / 2);
  for (let y = 0; y < image.height; y += 2) {
    const region = y < middle ? 0 : binsPerRegion;
    for (let x = left; x < right; x += 2) {
      const offset = (y * image.width + x) * 3;
      const [h, s, v] = hsv(image.rgb[offset] ?? 0, image.rgb[offset + 1] ?? 0, image.rgb[offset + 2] ?? 0);
      const hue = Math.min(7, Math.floor(h * 8));
      const saturation = Math.min(2, Math.floor(s * 3));
      const value = Math.min(2, Math.floor(v * 3));
      // Greys have no meaningful hue: they all go to hue 0 so a grey cardigan matches itself under any tint.
      const index = region + (saturation === 0 ? 0 : hue) * 9 + saturation * 3 + value;
      bins[index] = (bins[index] ?? 0) + 1;
    }
  }
  // Each half weighs the same whatever its pixel count; then the whole is unit length.
  for (const start of [0, binsPerRegion]) {
    let total = 0;
    for (let i = start; i < start + binsPerRegion; i++) total += bins[i] ?? 0;
    for (let i = start; i < start + binsPerRegion; i++) bins[i] = Math.sqrt((bins[i] ?? 0) / (total || 1));
  }
  let norm = 0;
  for (const value of bins) norm += value * value;
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < bins.length; i++) bins[i] = (bins[i] ?? 0) / norm;
  return bins;
}

function hsv(r: number, g: number, b: number): [number, number, number] {
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const delta = max - min;
  let h = 0;
  if (delta > 0) {
    if (max === r) h = ((g - b) / delta + 6) % 6;
    else if (max === g) h = (b - r) / delta + 2;
    else h = (r - g) / delta + 4;
  }
  return [h / 6, max === 0 ? 0 : delta / max, max / 255];
}

export function iou(a: Box, b: Box): number {
  const x = Math.max(a[0], b[0]);
  const y = Math.max(a[1], b[1]);
  const right = Math.min(a[0] + a[2], b[0] + b[2]);
  const bottom = Math.min(a[1] + a[3], b[1] + b[3]);
  const inter = Math.max(0, right - x) * Math.max(0, bottom - y);
  const union = a[2] * a[3] + b[2] * b[3] - inter;
  return union > 0 ? inter / union : 0;
}

export function contains(outer: Box, x: number, y: number): boolean {
  return x >= outer[0] && y >= outer[1] && x <= outer[0] + outer[2] && y <= outer[1] + outer[3];
}
