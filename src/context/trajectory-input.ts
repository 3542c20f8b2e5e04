import { readFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { z } from "zod";
import { InputError } from "../core/errors.ts";
import type { Artifact, ImageKind, Trajectory, TrajectoryImage, TrajectoryMessage } from "./trajectory.ts";

/** Bounds on an untrusted trajectory, checked before anything is decoded. */
export const trajectoryLimits = Object.freeze({
  maxMessages: 100_000,
  maxTextChars: 1_000_000,
  maxImagesPerMessage: 64,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagePixels: 40_000_000,
  maxTableCells: 20_000,
});

const imageKind = z.enum(["image", "screenshot", "crop", "document"]);
const imageSchema = z.union([
  z
    .object({
      path: z.string().min(1),
      caption: z.string().optional(),
      kind: imageKind.optional(),
      id: z.string().min(1).optional(),
    })
    .strict(),
  z
    .object({
      data: z.string().min(1),
      mediaType: z.string().optional(),
      caption: z.string().optional(),
      kind: imageKind.optional(),
      id: z.string().min(1).optional(),
    })
    .strict(),
]);
const cell = z.union([z.string(), z.number()]);
const artifactSchema = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("table"),
      id: z.string().min(1).optional(),
      title: z.string().optional(),
      columns: z.array(z.string()).min(1),
      rows: z.array(z.array(cell)),
    })
    .strict(),
  z
    .object({
      kind: z.literal("chart"),
      id: z.string().min(1).optional(),
      title: z.string().optional(),
      chart: z.enum(["bar", "line"]),
      labels: z.array(z.string()).min(1).max(200),
      series: z
        .array(z.object({ name: z.string(), values: z.array(z.number()) }).strict())
        .min(1)
        .max(12),
    })
    .strict(),
]);
const openAiPart = z.union([
  z.object({ type: z.literal("text"), text: z.string() }).strict(),
  z
    .object({
      type: z.literal("image_url"),
      image_url: z.object({ url: z.string(), detail: z.enum(["low", "high", "auto"]).optional() }).strict(),
    })
    .strict(),
]);
const toolCallSchema = z.union([
  z.object({ id: z.string().min(1), name: z.string().min(1), arguments: z.string() }).strict(),
  z
    .object({
      id: z.string().min(1),
      type: z.literal("function"),
      function: z.object({ name: z.string().min(1), arguments: z.string() }).strict(),
    })
    .strict(),
]);
const messageSchema = z
  .object({
    id: z.string().min(1).max(200).optional(),
    role: z.enum(["system", "user", "assistant", "tool"]),
    name: z.string().min(1).max(200).optional(),
    text: z.string().max(trajectoryLimits.maxTextChars).optional(),
    content: z
      .union([z.string().max(trajectoryLimits.maxTextChars), z.array(openAiPart)])
      .nullable()
      .optional(),
    images: z.array(imageSchema).max(trajectoryLimits.maxImagesPerMessage).optional(),
    artifacts: z.array(artifactSchema).max(32).optional(),
    toolCalls: z.array(toolCallSchema).optional(),
    tool_calls: z.array(toolCallSchema).optional(),
    toolCallId: z.string().optional(),
    tool_call_id: z.string().optional(),
    time: z.string().optional(),
    metadata: z.record(z.unknown()).optional(),
  })
  .strict();

export interface TrajectoryInputOptions {
  readonly id?: string;
  /** Folder that relative image paths are read from; without it, image paths are refused (HTTP input). */
  readonly baseDir?: string;
}

/**
 * Validates and loads an untrusted trajectory: messages in our form or OpenAI's (`content` parts with data-URL
 * images, `tool_calls`), images decoded to learn their size. Throws `InputError` naming the first bad field.
 *
 * @example await loadTrajectory([{ role: "user", text: "hi", images: [{ path: "a.png" }] }], { baseDir: "." })
 */
export async function loadTrajectory(
  values: readonly unknown[],
  options: TrajectoryInputOptions = {},
): Promise<Trajectory> {
  if (values.length > trajectoryLimits.maxMessages) {
    throw new InputError("trajectory", `at most ${trajectoryLimits.maxMessages} messages, got ${values.length}`);
  }
  const messages: TrajectoryMessage[] = [];
  const seen = new Set<string>();
  for (const [index, value] of values.entries()) {
    const field = `messages[${index}]`;
    const parsed = messageSchema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("") ?? "";
      throw new InputError(`${field}${where}`, issue?.message ?? "invalid message");
    }
    const input = parsed.data;
    const id = input.id ?? `m${index}`;
    if (seen.has(id)) throw new InputError(`${field}.id`, `duplicate message id "${id}"`);
    seen.add(id);
    const texts: string[] = [];
    if (input.text) texts.push(input.text);
    const imageInputs: z.infer<typeof imageSchema>[] = [...(input.images ?? [])];
    if (typeof input.content === "string") texts.push(input.content);
    else
      for (const part of input.content ?? []) {
        if (part.type === "text") texts.push(part.text);
        else imageInputs.push({ data: part.image_url.url });
      }
    const images: TrajectoryImage[] = [];
    for (const [imageIndex, image] of imageInputs.entries()) {
      images.push(await loadImage(image, `${id}#img${imageIndex}`, `${field}.images[${imageIndex}]`, options));
    }
    const artifacts: Artifact[] = (input.artifacts ?? []).map((artifact, artifactIndex) => {
      const artifactId = artifact.id ?? `${artifact.kind}${artifactIndex}`;
      if (artifact.kind === "table") {
        const cells = artifact.rows.reduce((sum, row) => sum + row.length, artifact.columns.length);
        if (cells > trajectoryLimits.maxTableCells) {
          throw new InputError(
            `${field}.artifacts[${artifactIndex}]`,
            `at most ${trajectoryLimits.maxTableCells} cells`,
          );
        }
        return {
          kind: "table",
          id: artifactId,
          columns: artifact.columns,
          rows: artifact.rows,
          ...(artifact.title ? { title: artifact.title } : {}),
        };
      }
      return {
        kind: "chart",
        id: artifactId,
        chart: artifact.chart,
        labels: artifact.labels,
        series: artifact.series,
        ...(artifact.title ? { title: artifact.title } : {}),
      };
    });
    const toolCalls = [...(input.toolCalls ?? []), ...(input.tool_calls ?? [])].map((call) =>
      "function" in call ? { id: call.id, name: call.function.name, arguments: call.function.arguments } : call,
    );
    const toolCallId = input.toolCallId ?? input.tool_call_id;
    if (input.role === "tool" && toolCallId === undefined)
      throw new InputError(`${field}.toolCallId`, "a tool message names the call it answers");
    messages.push({
      id,
      role: input.role,
      text: texts.join("\n"),
      images,
      artifacts,
      toolCalls,
      ...(input.name ? { name: input.name } : {}),
      ...(toolCallId ? { toolCallId } : {}),
      ...(input.time ? { time: input.time } : {}),
      ...(input.metadata ? { metadata: input.metadata } : {}),
    });
  }
  return { id: options.id ?? "trajectory", messages };
}

async function loadImage(
  image: z.infer<typeof imageSchema>,
  defaultId: string,
  field: string,
  options: TrajectoryInputOptions,
): Promise<TrajectoryImage> {
  let data: Uint8Array;
  if ("path" in image) {
    if (options.baseDir === undefined)
      throw new InputError(`${field}.path`, "image paths are not accepted here; send the bytes as data");
    const resolved = path.resolve(options.baseDir, image.path);
    try {
      data = new Uint8Array(await readFile(resolved));
    } catch (error) {
      throw new InputError(`${field}.path`, `cannot read ${image.path}: ${(error as Error).message}`);
    }
  } else {
    const match = /^data:([^;,]+)?(;base64)?,(.*)$/s.exec(image.data);
    if (image.data.startsWith("http://") || image.data.startsWith("https://")) {
      throw new InputError(`${field}`, "remote image URLs are not fetched; send the bytes as a data URL or base64");
    }
    const payload = match ? (match[3] ?? "") : image.data;
    if (match && !match[2]) throw new InputError(field, "only base64 data URLs are accepted");
    data = new Uint8Array(Buffer.from(payload, "base64"));
  }
  if (data.length === 0) throw new InputError(field, "empty image");
  if (data.length > trajectoryLimits.maxImageBytes)
    throw new InputError(field, `image larger than ${trajectoryLimits.maxImageBytes} bytes`);
  let width: number;
  let height: number;
  let format: string;
  try {
    const metadata = await sharp(data, { limitInputPixels: trajectoryLimits.maxImagePixels }).metadata();
    width = metadata.width ?? 0;
    height = metadata.height ?? 0;
    format = metadata.format ?? "";
  } catch (error) {
    throw new InputError(field, `not a readable image: ${(error as Error).message}`);
  }
  if (width * height > trajectoryLimits.maxImagePixels || width <= 0 || height <= 0) {
    throw new InputError(field, `image of ${width}×${height} pixels is refused`);
  }
  const mediaType = mediaTypes[format];
  if (mediaType === undefined)
    throw new InputError(field, `image format ${format || "unknown"} is not one chat APIs take (png, jpeg, webp, gif)`);
  const kind: ImageKind = image.kind ?? "image";
  return {
    id: image.id ?? defaultId,
    data,
    mediaType,
    width,
    height,
    kind,
    ...(image.caption ? { caption: image.caption } : {}),
  };
}

const mediaTypes: Readonly<Record<string, string>> = {
  png: "image/png",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
};
