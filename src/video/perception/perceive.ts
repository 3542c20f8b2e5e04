import sharp from "sharp";
import { normalise } from "../../core/vectors.ts";
import { embedImages } from "../../models/model-calls.ts";
import type { Models } from "../../models/provider.ts";
import type { Frame } from "../gateway.ts";
import { faceProblems, type PersonSighting, pairFacesWithPeople, personProblems } from "../tracks.ts";
import type { IdentityConfig, PerceptionConfig } from "../video-config.ts";
import type { Box, Detector, ObjectDetection } from "./detector.ts";
import { colourHistogram, cropRgb, type RgbImage, sharpness } from "./frame-crops.ts";

/** What perception saw in a segment's frames: person sightings per frame and the other objects. */
export interface SegmentPerception {
  readonly frames: readonly Frame[];
  readonly sightings: readonly (readonly PersonSighting[])[];
  readonly objects: readonly (readonly ObjectDetection[])[];
  /** Per frame, how many of each label (people included) the detector saw at `countScore` or more. */
  readonly counts: readonly Readonly<Record<string, number>>[];
}

/** Frames of a segment spread evenly, first and last included: perception's frame-level budget. */
export function pickFrames<T>(frames: readonly T[], count: number): T[] {
  if (frames.length <= count) return [...frames];
  if (count <= 1) return frames.slice(0, 1);
  return Array.from({ length: count }, (_, i) => frames[Math.round((i * (frames.length - 1)) / (count - 1))] as T);
}

/**
 * Runs the detector over the frames, checks every face and person box for safety, and gives each
 * safe-sized person box an appearance vector: the image model's features of the crop (when the
 * models have an image embedder) joined with its clothing colours, each half of the unit vector.
 */
export async function perceive(
  frames: readonly Frame[],
  context: { detector: Detector; models: Models; identity: IdentityConfig; perception: PerceptionConfig },
): Promise<SegmentPerception> {
  const detections = await context.detector.detect(frames);
  const paired = detections.map((detection) => pairFacesWithPeople(detection, context.identity.minPersonScore));
  const crops: { frame: number; sighting: number; image: RgbImage }[] = [];
  paired.forEach((sightings, frameIndex) => {
    const frame = frames[frameIndex];
    if (!frame) return;
    sightings.forEach((sighting, index) => {
      if (sighting.personScore === null) return;
      const image = cropRgb(frame, sighting.box);
      if (image) crops.push({ frame: frameIndex, sighting: index, image });
    });
  });
  const features = await appearanceFeatures(
    crops.map((crop) => crop.image),
    context.models,
  );
  const appearanceOf = new Map(crops.map((crop, index) => [`${crop.frame}:${crop.sighting}`, features[index] ?? null]));
  const sightings = paired.map((frameSightings, frameIndex) => {
    const frame = frames[frameIndex];
    return frameSightings.map((sighting, index): PersonSighting => {
      const face = sighting.face;
      const faceSharpness = face && frame ? sharpness(frame, face.box) : 0;
      const appearance = appearanceOf.get(`${frameIndex}:${index}`) ?? null;
      return {
        frame: frameIndex,
        timeMs: frame?.timeMs ?? 0,
        box: sighting.box,
        personScore: sighting.personScore,
        face: face
          ? {
              ...face,
              descriptor: normalise(Float32Array.from(face.descriptor)),
              sharpness: faceSharpness,
              unsafe: faceProblems(face, faceSharpness, context.identity),
            }
          : null,
        appearance: appearance
          ? { vector: appearance, unsafe: personProblems(sighting.box, sighting.personScore, context.identity, frame) }
          : null,
      };
    });
  });
  const objects = detections.map((detection) =>
    detection.objects.filter(
      (object) => object.label !== "person" && object.score >= context.perception.minObjectScore,
    ),
  );
  const counts = detections.map((detection) => {
    const inFrame: Record<string, number> = {};
    for (const object of detection.objects)
      if (object.score >= context.perception.countScore) inFrame[object.label] = (inFrame[object.label] ?? 0) + 1;
    return inFrame;
  });
  return { frames, sightings, objects, counts };
}

async function appearanceFeatures(images: readonly RgbImage[], models: Models): Promise<(Float32Array | null)[]> {
  if (images.length === 0) return [];
  const colours = images.map(colourHistogram);
  let learned: (Float32Array | undefined)[] = [];
  if (models.image) {
    const encoded = await Promise.all(images.map((image) => encodeJpeg(image)));
    learned = await embedImages(models.image, encoded);
  }
  return colours.map((colour, index) => {
    const features = learned[index];
    if (!features) return colour;
    const joined = new Float32Array(features.length + colour.length);
    joined.set(features.map((value) => value * Math.SQRT1_2));
    joined.set(
      colour.map((value) => value * Math.SQRT1_2),
      features.length,
    );
    return normalise(joined);
  });
}

export async function encodeJpeg(image: RgbImage, quality = 85): Promise<Uint8Array> {
  const data = await sharp(Buffer.from(image.rgb.buffer, image.rgb.byteOffset, image.rgb.byteLength), {
    raw: { width: image.width, height: image.height, channels: 3 },
  })
    .jpeg({ quality })
    .toBuffer();
  return new Uint8Array(data);
}

/** A face box grown to show the head (a tight face box cuts off hair and chin). */
export function headBox(box: Box): Box {
  const grow = 0.35;
  return [box[0] - box[2] * grow, box[1] - box[3] * grow, box[2] * (1 + 2 * grow), box[3] * (1 + 2 * grow)];
}
