import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";

/** A fresh folder that is removed when the test ends. */
export function tempDir(t: { after: (fn: () => void) => void }, prefix = "cairn-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A small real PNG: a coloured shape on a background, optionally with a text label. */
export async function drawPng(options: {
  background?: string;
  shape?: "circle" | "square" | "stripes";
  color?: string;
  label?: string;
  size?: number;
}): Promise<Buffer> {
  const size = options.size ?? 96;
  const color = options.color ?? "#d33";
  const shapes = {
    circle: `<circle cx="${size / 2}" cy="${size / 2}" r="${size / 3}" fill="${color}"/>`,
    square: `<rect x="${size / 5}" y="${size / 5}" width="${(size * 3) / 5}" height="${(size * 3) / 5}" fill="${color}"/>`,
    stripes: Array.from(
      { length: 6 },
      (_, i) => `<rect x="0" y="${(i * size) / 6}" width="${size}" height="${size / 12}" fill="${color}"/>`,
    ).join(""),
  };
  const label = options.label
    ? `<text x="50%" y="90%" font-size="${size / 8}" text-anchor="middle" font-family="sans-serif">${options.label}</text>`
    : "";
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}"><rect width="100%" height="100%" fill="${options.background ?? "#fff"}"/>${shapes[options.shape ?? "circle"]}${label}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

export function writeFile(dir: string, name: string, data: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, data);
  return path;
}

/** Speakers and sentence words of `distinctSentence`; fixtures cycle through the speakers. */
export const people = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay"];
const things = ["bicycle", "camera", "kayak", "guitar", "telescope", "teapot", "tent", "violin", "drone", "lamp"];
const places = ["Lisbon", "Kyoto", "Oslo", "the market", "the harbour", "the library", "Porto", "the gym"];
const verbs = ["bought", "repaired", "lost", "borrowed", "painted", "sold", "found", "packed"];

/** Sentence `index` of a family where no two are alike, so exact top-k has no ties for an ANN to order differently. */
export function distinctSentence(index: number): string {
  const pick = <T>(items: readonly T[], salt: number) => items[(index * salt + salt) % items.length] as T;
  return `${pick(people, 7)} ${pick(verbs, 3)} the ${pick(things, 11)} near ${pick(places, 5)} on day ${index}`;
}

/** A one-speaker session (Ana) on day `day` of 2024: the shape the routing tests write their topics in. */
export function daySession(key: string, day: number, texts: readonly string[]) {
  return {
    session: key,
    time: new Date(Date.UTC(2024, 0, 1 + day)).toISOString(),
    turns: texts.map((text) => ({ speaker: "Ana", text })),
  };
}

/** Eight unrelated two-turn topics, each with a word no other topic uses. */
export const distinctTopics = [
  ["We rented a kayak on Lake Bled.", "The kayak was orange."],
  ["My sister's wedding is in Porto in October.", "The reception is at a vineyard."],
  ["I started learning the cello this spring.", "My teacher is called Mr Varga."],
  ["Our corgi Biscuit hates the vacuum cleaner.", "Biscuit sleeps under the desk."],
  ["The quarterly report is due on Friday.", "Finance wants the tables in euros."],
  ["I planted tomatoes and basil on the balcony.", "The basil died in the heat."],
  ["The plumber fixed the boiler on Tuesday.", "The boiler had a cracked valve."],
  ["We watched a lunar eclipse from the dunes.", "The eclipse turned the moon copper."],
] as const;
