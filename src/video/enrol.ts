import sharp from "sharp";
import { InputError } from "../core/errors.ts";
import { normalise } from "../core/vectors.ts";
import type { ScopedStore } from "../store/store.ts";
import type { VideoItem } from "../store/video-records.ts";
import type { Detector } from "./perception/detector.ts";
import { sharpness } from "./perception/frame-crops.ts";
import { faceProblems } from "./tracks.ts";
import type { IdentityConfig } from "./video-config.ts";

export interface EnrolContext {
  readonly scoped: ScopedStore;
  readonly detector: Detector;
  readonly identity: IdentityConfig;
  readonly addSession: (input: unknown) => Promise<{ rawNodeIds: readonly string[] }>;
  readonly newId: (prefix: string) => string;
  readonly now: () => number;
}

export interface EnrolPhoto {
  /** Where it came from, for provenance (a file name). */
  readonly origin: string;
  readonly data: Uint8Array;
}

/**
 * Enrols an entity's gallery from portrait photos: each photo must show exactly one face that is
 * safe to identify with (size, score, sharpness), else nothing is written. The photos become raw
 * nodes (so a forget of a photo removes the slot drawn from it); the slots are marked enrolled. An
 * entity is created, with `name`, when `entityId` is not given. Audited.
 */
export async function enrolEntity(
  context: EnrolContext,
  target: { readonly entityId?: string; readonly name?: string },
  photos: readonly EnrolPhoto[],
): Promise<{ entityId: string; slots: number }> {
  if (photos.length === 0) throw new InputError("photos", "give at least one photo");
  const existing = target.entityId
    ? (await context.scoped.readVideoItems({ ids: [target.entityId], kinds: ["entity"] }))[0]
    : undefined;
  if (target.entityId && !existing) throw new InputError("entity", `entity ${target.entityId} not found`);
  if (!target.entityId && !target.name?.trim())
    throw new InputError("name", "name the new entity, or give an entity id");
  const descriptors: Float32Array[] = [];
  for (const [index, photo] of photos.entries()) {
    const decoded = await sharp(photo.data)
      .rotate()
      .removeAlpha()
      .resize({ width: 1024, height: 1024, fit: "inside", withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true })
      .catch((error: unknown) => {
        throw new InputError(`photos[${index}]`, `not a readable image (${photo.origin}): ${String(error)}`);
      });
    const frame = {
      index: 0,
      timeMs: 0,
      width: decoded.info.width,
      height: decoded.info.height,
      rgb: new Uint8Array(decoded.data.buffer, decoded.data.byteOffset, decoded.data.byteLength),
    };
    const [detections] = await context.detector.detect([frame]);
    const faces = detections?.faces ?? [];
    if (faces.length !== 1) {
      throw new InputError(
        `photos[${index}]`,
        `${photo.origin} shows ${faces.length} faces; enrolment needs exactly one`,
      );
    }
    const face = faces[0];
    if (!face) throw new InputError(`photos[${index}]`, "no face");
    const problems = faceProblems(face, sharpness(frame, face.box), context.identity);
    if (problems.length > 0)
      throw new InputError(`photos[${index}]`, `${photo.origin}: unsafe face (${problems.join("; ")})`);
    descriptors.push(normalise(Float32Array.from(face.descriptor)));
  }
  const entityId = existing?.id ?? context.newId("vent");
  const now = context.now();
  const { rawNodeIds } = await context.addSession({
    session: `enrol:${entityId}:${now}`,
    time: new Date(now).toISOString(),
    source: "enrolment",
    turns: photos.map((photo) => ({
      speaker: "user",
      role: "enrolment",
      text: `portrait of ${target.name?.trim() || existing?.text || entityId} (${photo.origin})`,
      images: [{ data: photo.data, caption: `portrait of ${target.name?.trim() || existing?.text || entityId}` }],
      metadata: { video: { kind: "enrolment", entity: entityId } },
    })),
  });
  const put: VideoItem[] = descriptors.map((vector, index) => ({
    id: context.newId("vslot"),
    kind: "slot",
    stream: null,
    entityId,
    startMs: now,
    endMs: now,
    text: "",
    data: { modality: "face", enrolled: true, origin: photos[index]?.origin ?? null },
    vector,
    sources: [rawNodeIds[index] ?? ""],
  }));
  const name = target.name?.trim();
  const entity: VideoItem = existing
    ? { ...existing, text: name || existing.text }
    : {
        id: entityId,
        kind: "entity",
        stream: null,
        entityId: null,
        startMs: now,
        endMs: now,
        text: name ?? "",
        data: { kind: "person", status: "active", created: "enrolled by user" },
        vector: null,
        sources: [],
      };
  await context.scoped.commitVideo({
    put: [entity, ...put],
    remove: [],
    audits: [
      {
        action: "video.entity.enrol",
        subject: entityId,
        details: {
          entity: entityId,
          name: name ?? null,
          photos: photos.map((photo) => photo.origin),
          slots: put.length,
          by: "user",
        },
      },
    ],
  });
  return { entityId, slots: put.length };
}
