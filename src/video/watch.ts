import { basename } from "node:path";
import { embedTexts } from "../models/model-calls.ts";
import type { Models } from "../models/provider.ts";
import type { ScopedStore } from "../store/store.ts";
import type { VideoItem, VideoWrite } from "../store/video-records.ts";
import { gateSegment } from "./gate.ts";
import { describeSource, type Frame, openVideoStream, type VideoSource, type VideoStream } from "./gateway.ts";
import type { Detector, ObjectDetection } from "./perception/detector.ts";
import { cropRgb } from "./perception/frame-crops.ts";
import { encodeJpeg, headBox, perceive, pickFrames, type SegmentPerception } from "./perception/perceive.ts";
import type { DeliveryResult, VideoNotification } from "./procedural/deliveries.ts";
import { decide, policyFor, type RuleMemory } from "./procedural/notifier.ts";
import { focusLabels, ruleApplies } from "./procedural/rules.ts";
import { arrivalSignals, type CountCarry, countSignals } from "./procedural/signals.ts";
import { type Decision, type PendingResolution, resolveSegment, type TrackedTarget } from "./resolver.ts";
import { type Segment, Segmenter } from "./segmenter.ts";
import { consolidateEntities, consolidateSource } from "./semantic/consolidate.ts";
import { linkTracks, type TrackEvidence, trackEvidence } from "./tracks.ts";
import type { VideoConfig } from "./video-config.ts";
import { Galleries } from "./video-entities.ts";
import { formatMediaTime, sourceOf } from "./video-text.ts";
import { VoiceActivity } from "./voice-activity.ts";
import {
  applySegment,
  type ClosedEvent,
  capWords,
  chapterDue,
  closeEvent,
  emptyWorkingState,
  renameEntity,
  takeChapter,
  type WorkingState,
} from "./working-state.ts";

/** What the pipeline needs from the memory it writes into (the facade passes these in). */
export interface WatchContext {
  readonly scoped: ScopedStore;
  readonly models: Models;
  readonly detector: Detector;
  readonly config: VideoConfig;
  /** `Memory.addSession` for this scope: key frames and crops become raw nodes every channel searches. */
  readonly addSession: (
    input: unknown,
    options: { readImages: boolean },
  ) => Promise<{ rawNodeIds: readonly string[]; warnings: readonly string[] }>;
  readonly newId: (prefix: string) => string;
  readonly now: () => number;
  /** Delivers a notification the notifier decided to send (webhooks, live listeners); none when absent. */
  readonly deliver?: (notification: Omit<VideoNotification, "scope">) => Promise<DeliveryResult[]>;
}

export interface WatchOptions {
  /** Name of the stream in memory (default: the file name, or `stdin`/the URL, with the start time). */
  readonly stream?: string;
  /** Wall-clock time of the stream's first frame (RFC 3339); default now. */
  readonly startTime?: string;
  /** Called after every segment, analysed or skipped. */
  readonly onSegment?: (report: SegmentReport) => void;
}

export interface SegmentReport {
  readonly index: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly analysed: boolean;
  readonly gate: string;
  readonly people: number;
  readonly decisions: readonly { outcome: string; entityId: string | null; reason: string }[];
  readonly objects: readonly string[];
  /** The notifier's decisions in this segment (sent, suppressed, cleared). */
  readonly notifications: readonly { rule: string; outcome: string; reason: string; atMs: number }[];
  readonly latencyMs: number;
}

export interface WatchResult {
  readonly stream: string;
  readonly source: string;
  readonly frames: number;
  readonly mediaMs: number;
  readonly wallMs: number;
  readonly segments: number;
  readonly analysed: number;
  /** Segments the gate skipped, with why: static and silent. */
  readonly skipped: readonly { index: number; startMs: number; endMs: number; reason: string }[];
  readonly entities: readonly string[];
  readonly outcomes: Readonly<Record<string, number>>;
  readonly chapters: number;
  readonly stopped: boolean;
  readonly warnings: readonly string[];
}

/** A running watch: `done` settles when the source ends; `stop()` ends it early and commits what was seen. */
export interface VideoWatch {
  readonly stream: string;
  readonly done: Promise<WatchResult>;
  stop(): Promise<WatchResult>;
}

/**
 * Opens the source (a bad one is a typed error and nothing is written) and starts the pipeline:
 * frames → segments → gate → perception → one resolver → raw nodes, galleries and episodes.
 */
export async function startWatch(
  context: WatchContext,
  source: VideoSource,
  options: WatchOptions = {},
): Promise<VideoWatch> {
  const video = await openVideoStream(source, context.config.gateway);
  const startMs = options.startTime ? Date.parse(options.startTime) : context.now();
  const label = describeSource(source);
  const stream =
    options.stream ??
    `${source.kind === "file" ? basename(label) : label}@${new Date(startMs).toISOString().replace(/\.\d+Z$/, "Z")}`;
  const galleries = await Galleries.load(context.scoped);
  const pipeline = new StreamPipeline(context, video, {
    stream,
    label,
    startMs,
    onSegment: options.onSegment,
    galleries,
  });
  const done = pipeline.run();
  return {
    stream,
    done,
    async stop() {
      pipeline.stop();
      return done;
    },
  };
}

class StreamPipeline {
  readonly #context: WatchContext;
  readonly #video: VideoStream;
  readonly #stream: string;
  readonly #label: string;
  readonly #startMs: number;
  readonly #onSegment: ((report: SegmentReport) => void) | undefined;
  readonly #galleries: Galleries;
  #state: WorkingState = emptyWorkingState;
  #analysed = 0;
  #segments = 0;
  #frames = 0;
  #mediaMs = 0;
  #chapters = 0;
  #stopped = false;
  readonly #skipped: { index: number; startMs: number; endMs: number; reason: string }[] = [];
  readonly #entities = new Set<string>();
  readonly #outcomes: Record<string, number> = {};
  readonly #warnings: string[] = [];
  #countCarry: ReadonlyMap<string, CountCarry> = new Map();
  #notifyMemory: ReadonlyMap<string, RuleMemory> = new Map();
  readonly #present = new Set<string>();

  constructor(
    context: WatchContext,
    video: VideoStream,
    options: {
      stream: string;
      label: string;
      startMs: number;
      onSegment?: (report: SegmentReport) => void;
      galleries: Galleries;
    },
  ) {
    this.#context = context;
    this.#video = video;
    this.#stream = options.stream;
    this.#label = options.label;
    this.#startMs = options.startMs;
    this.#onSegment = options.onSegment;
    this.#galleries = options.galleries;
  }

  stop(): void {
    this.#stopped = true;
    this.#video.stop();
  }

  async run(): Promise<WatchResult> {
    const started = performance.now();
    const { config } = this.#context;
    const segmenter = new Segmenter({ fps: this.#video.fps, config: config.segmenter });
    const voice = new VoiceActivity(config.voice);
    const frameMs = 1000 / this.#video.fps;
    try {
      await this.#restoreNotifier();
      for await (const frame of this.#video.frames()) {
        this.#frames += 1;
        this.#mediaMs = frame.timeMs + frameMs;
        const audio = await this.#video.audio(frame.timeMs, frame.timeMs + frameMs);
        let voiced = 0;
        let status = audio.status;
        try {
          voiced = voice.voicedMs(audio.samples);
        } catch {
          status = "failed";
        }
        const segment = segmenter.push(frame, { voicedMs: voiced, audio: status });
        if (segment) await this.#segment(segment);
      }
    } finally {
      // Stopping, or the end of the source: what was seen is committed.
      const last = segmenter.flush();
      if (last) await this.#segment(last);
      await this.#finish();
    }
    return {
      stream: this.#stream,
      source: this.#label,
      frames: this.#frames,
      mediaMs: Math.round(this.#mediaMs),
      wallMs: Math.round(performance.now() - started),
      segments: this.#segments,
      analysed: this.#analysed,
      skipped: this.#skipped,
      entities: [...this.#entities],
      outcomes: this.#outcomes,
      chapters: this.#chapters,
      stopped: this.#stopped,
      warnings: this.#warnings,
    };
  }

  /**
   * The notifier's record of what this source recently sent, as the last watch of it left it: a
   * restarted watch stays inside the cooldown and does not repeat a condition still decided as
   * holding (perception starts from that state, so a condition gone is cleared and re-armed). The
   * budget is per event, and a restarted watch starts a new one.
   */
  async #restoreNotifier(): Promise<void> {
    const saved = await this.#context.scoped.readNotifierState(sourceOf(this.#stream));
    this.#notifyMemory = new Map(
      saved.map((rule) => [
        rule.ruleId,
        { holding: rule.holding, lastSentMs: rule.lastSentMs, event: -1, sentInEvent: rule.sentInEvent },
      ]),
    );
    this.#countCarry = new Map(
      saved.filter((rule) => rule.holding).map((rule) => [rule.ruleId, { holding: true, against: 0, sinceMs: null }]),
    );
    for (const rule of saved) if (rule.holding) this.#present.add(rule.ruleId);
  }

  async #segment(segment: Segment): Promise<void> {
    const started = performance.now();
    const { config } = this.#context;
    this.#segments += 1;
    const firstOfEvent = segment.index === 0 || segment.startedBy === "scene";
    const gate = gateSegment(segment, { firstOfEvent }, config.gate);
    this.#video.releaseAudio(segment.endMs);
    if (!gate.analyse) {
      this.#skipped.push({ index: segment.index, startMs: segment.startMs, endMs: segment.endMs, reason: gate.reason });
      await this.#closeEvent(segment.endMs);
      this.#onSegment?.({
        index: segment.index,
        startMs: segment.startMs,
        endMs: segment.endMs,
        analysed: false,
        gate: gate.reason,
        people: 0,
        decisions: [],
        objects: [],
        notifications: [],
        latencyMs: performance.now() - started,
      });
      return;
    }
    // Procedural memory shapes perception: a rule counting objects makes it read more of the segment.
    const rules = (await this.#context.scoped.readVideoItems({ kinds: ["rule"] })).filter((rule) =>
      ruleApplies(rule, this.#stream),
    );
    const focus = focusLabels(rules);
    const frames = pickFrames(
      segment.frames.map((entry) => entry.frame),
      focus.length > 0
        ? Math.max(config.perception.framesPerSegment, config.notify.focusFramesPerSegment)
        : config.perception.framesPerSegment,
    );
    const perception = await perceive(frames, {
      detector: this.#context.detector,
      models: this.#context.models,
      identity: config.identity,
      perception: config.perception,
    });
    const tracks = linkTracks(perception.sightings, config.identity).map(trackEvidence);
    const objects = objectCounts(perception.objects);
    const report = await this.#commitSegment(segment, gate.reason, perception, tracks);
    const notifications = await this.#notify(rules, segment, perception, report);
    this.#onSegment?.({
      index: segment.index,
      startMs: segment.startMs,
      endMs: segment.endMs,
      analysed: true,
      gate: gate.reason,
      people: tracks.length,
      decisions: report.decisions.map((decision) => ({
        outcome: decision.outcome,
        entityId: decision.entityId,
        reason: decision.reason,
      })),
      objects: [...objects.keys()],
      notifications,
      latencyMs: performance.now() - started,
    });
    if (tracks.length === 0 && segment.voicedMs < config.gate.speechMs) await this.#closeEvent(segment.endMs);
  }

  async #commitSegment(
    segment: Segment,
    gateReason: string,
    perception: SegmentPerception,
    tracks: readonly TrackEvidence[],
  ): Promise<{ decisions: readonly Decision[]; keyFrames: readonly string[]; entities: readonly string[] }> {
    const { config, newId } = this.#context;
    const analysedIndex = this.#analysed;
    this.#analysed += 1;
    const resolution = resolveSegment({
      segment: analysedIndex,
      tracks,
      galleries: this.#galleries.list(),
      targets: this.#state.targets,
      pending: this.#state.pending,
      config: config.identity,
      newId: (kind) => newId(kind === "entity" ? "vent" : "vpend"),
    });
    const { decisions } = resolution;

    // Raw evidence first: key frames (read by OCR here) and one crop per track.
    const keyFrames = chooseKeyFrames(perception, config.perception.keyFramesPerSegment);
    const objects = objectCounts(perception.objects);
    const ocr = await this.#readKeyFrames(keyFrames.map((index) => perception.frames[index]).filter(isFrame));
    const names = (id: string | null) => (id ? this.#galleries.label(id) : "unidentified person");
    const decisionText = (decision: Decision) =>
      decision.entityId ? names(decision.entityId) : `${decision.outcome} person (${decision.reason})`;
    const turns: unknown[] = [];
    const turnKinds: ({ kind: "key"; frame: number } | { kind: "crop"; track: number })[] = [];
    for (const [position, frameIndex] of keyFrames.entries()) {
      const frame = perception.frames[frameIndex];
      if (!frame) continue;
      const present = tracks
        .map((track, index) => (track.frames.includes(frameIndex) ? decisions[index] : undefined))
        .filter((decision): decision is Decision => decision !== undefined);
      const seenObjects = [...new Set((perception.objects[frameIndex] ?? []).map((object) => object.label))];
      const text = ocr[position] ?? "";
      const caption = [
        `key frame ${formatMediaTime(frame.timeMs)} of ${this.#label}`,
        present.length ? `people: ${present.map(decisionText).join(", ")}` : "no people",
        seenObjects.length ? `objects: ${seenObjects.join(", ")}` : "",
        text ? `text: ${text}` : "",
      ]
        .filter(Boolean)
        .join("; ");
      turns.push({
        speaker: "camera",
        role: "observation",
        text: caption,
        time: iso(this.#startMs + frame.timeMs),
        images: [{ data: await encodeJpeg(frame), mediaType: "image/jpeg", caption: caption.slice(0, 3900) }],
        metadata: { video: { stream: this.#stream, segment: segment.index, kind: "key-frame", frameMs: frame.timeMs } },
      });
      turnKinds.push({ kind: "key", frame: frameIndex });
    }
    for (const [index, track] of tracks.entries()) {
      const sighting = track.representative;
      const frame = perception.frames[sighting.frame];
      const decision = decisions[index];
      const box = sighting.face && sighting.face.unsafe.length === 0 ? headBox(sighting.face.box) : sighting.box;
      const crop = frame ? cropRgb(frame, box) : null;
      if (!frame || !crop || !decision) continue;
      const text = `${decision.entityId ? names(decision.entityId) : "unidentified person"} at ${formatMediaTime(frame.timeMs)} of ${this.#label} (${decision.outcome}: ${decision.reason})`;
      turns.push({
        speaker: "camera",
        role: "observation",
        text,
        time: iso(this.#startMs + frame.timeMs),
        images: [{ data: await encodeJpeg(crop), mediaType: "image/jpeg", caption: text.slice(0, 3900) }],
        metadata: {
          video: {
            stream: this.#stream,
            segment: segment.index,
            kind: "crop",
            track: track.trackId,
            frameMs: frame.timeMs,
          },
        },
      });
      turnKinds.push({ kind: "crop", track: index });
    }
    let rawNodeIds: readonly string[] = [];
    if (turns.length > 0) {
      const added = await this.#context.addSession(
        {
          session: `video:${this.#stream}#${segment.index}`,
          time: iso(this.#startMs + segment.startMs),
          source: `video:${this.#stream}`,
          turns,
        },
        { readImages: false },
      );
      rawNodeIds = added.rawNodeIds;
      this.#warnings.push(...added.warnings);
    }
    const cropNode = new Map<number, string>();
    const keyNodes: string[] = [];
    turnKinds.forEach((turn, position) => {
      const id = rawNodeIds[position];
      if (!id) return;
      if (turn.kind === "crop") cropNode.set(turn.track, id);
      else keyNodes.push(id);
    });

    // Then what was decided about identity, and the episodes, in one atomic video write.
    const put: VideoItem[] = [];
    const audits: VideoWrite["audits"][number][] = [];
    const span = { startMs: this.#startMs + segment.startMs, endMs: this.#startMs + segment.endMs };
    for (const merge of resolution.merges) {
      const moved = await this.#galleries.mergeItems(this.#context.scoped, merge.from, merge.into, merge.reason);
      put.push(...moved);
      audits.push({ action: "video.entity.merge", subject: merge.from, details: { ...merge, stream: this.#stream } });
      this.#state = renameEntity(this.#state, merge.from, merge.into);
    }
    const perEntity = new Map<string, number[]>();
    const unresolved: number[] = [];
    decisions.forEach((decision, index) => {
      this.#outcomes[decision.outcome] = (this.#outcomes[decision.outcome] ?? 0) + 1;
      const track = tracks[index];
      const crop = cropNode.get(index);
      audits.push({
        action: "video.identity",
        subject: decision.entityId ?? decision.pendingId ?? decision.trackId,
        details: {
          stream: this.#stream,
          segment: segment.index,
          track: decision.trackId,
          outcome: decision.outcome,
          entity: decision.entityId,
          modality: decision.modality,
          candidates: decision.candidates.map((candidate) => ({ ...candidate, score: round(candidate.score) })),
          reason: decision.reason,
          unsafe: track?.unsafe ?? [],
        },
      });
      if ((decision.outcome === "match" || decision.outcome === "new") && decision.entityId && track) {
        if (decision.outcome === "new")
          put.push(this.#galleries.newEntity(decision.entityId, span.startMs, decision.reason));
        // Only safe evidence reaches here with vectors (unsafe tracks have none): it may extend the gallery.
        if (crop)
          put.push(
            ...this.#galleries.extend(decision.entityId, track, crop, this.#stream, span, config.identity, newId),
          );
        perEntity.set(decision.entityId, [...(perEntity.get(decision.entityId) ?? []), index]);
        this.#entities.add(decision.entityId);
      } else {
        unresolved.push(index);
      }
    });

    // Entity level: one observation per entity in this segment; pending and unsafe evidence is shown unidentified.
    const observationIds: string[] = [];
    const observationTexts: string[] = [];
    const observationItems: VideoItem[] = [];
    const nearby = [...objects.keys()];
    for (const [entityId, indices] of perEntity) {
      const id = newId("vobs");
      const sightings = indices.flatMap((index) => tracks[index]?.frames ?? []);
      const faceSeen = indices.some((index) => (tracks[index]?.faces.length ?? 0) > 0);
      const moved = segment.motion >= config.gate.staticMotion * 2;
      const text = `${names(entityId)} in ${this.#label} ${formatMediaTime(segment.startMs)}–${formatMediaTime(segment.endMs)}: ${faceSeen ? "face visible" : "seen without a clear face"}; seen in ${new Set(sightings).size} of ${perception.frames.length} frames while the scene was ${moved ? "moving" : "still"}${nearby.length ? `; near ${nearby.join(", ")}` : ""}.`;
      observationIds.push(id);
      observationTexts.push(text);
      observationItems.push({
        id,
        kind: "observation",
        stream: this.#stream,
        entityId,
        ...span,
        text,
        data: {
          segment: segment.index,
          frames: sightings.length,
          seenAtMs: [...new Set(sightings)].map((frame) => perception.frames[frame]?.timeMs ?? 0),
          faceVisible: faceSeen,
          moving: moved,
          objects: nearby,
          decisions: indices.map((index) => decisions[index]?.outcome),
          keyFrames: keyNodes,
          crops: indices.map((index) => cropNode.get(index)).filter(Boolean),
        },
        vector: null,
        sources: [
          ...new Set([...indices.map((index) => cropNode.get(index)), ...keyNodes].filter((id): id is string => !!id)),
        ],
      });
    }
    for (const index of unresolved) {
      const decision = decisions[index];
      if (!decision) continue;
      const id = decision.pendingId ? `vobs_${decision.pendingId}` : newId("vobs");
      const text = `${decision.outcome === "pending" ? "A person (identity pending)" : "An unidentified person"} in ${this.#label} ${formatMediaTime(segment.startMs)}–${formatMediaTime(segment.endMs)}: ${decision.reason}.`;
      observationIds.push(id);
      observationTexts.push(text);
      const crop = cropNode.get(index);
      observationItems.push({
        id,
        kind: "observation",
        stream: this.#stream,
        entityId: null,
        ...span,
        text,
        data: {
          segment: segment.index,
          outcome: decision.outcome,
          pendingId: decision.pendingId ?? null,
          keyFrames: keyNodes,
        },
        vector: null,
        sources: [...new Set([crop, ...keyNodes].filter((id): id is string => !!id))],
      });
    }
    // Pending evidence settled in this segment: its observation gets its entity.
    const settled = await this.#settle(resolution.resolved, span);
    put.push(...settled.put);
    audits.push(...settled.audits);

    // Trace level: one summary per segment, linking its observations.
    const people = [...perEntity.keys()].map(names);
    const traceText = capWords(
      `${formatMediaTime(segment.startMs)}–${formatMediaTime(segment.endMs)} ${this.#label}: ${people.length ? people.join(", ") : "no identified people"}${unresolved.length ? ` and ${unresolved.length} unidentified` : ""}${nearby.length ? `; objects: ${[...objects].map(([label, count]) => (count > 1 ? `${label} ×${count}` : label)).join(", ")}` : ""}${segment.voicedMs > 0 ? `; voice ${Math.round(segment.voicedMs / 100) / 10} s` : ""}${ocr.some(Boolean) ? `; text read: ${ocr.filter(Boolean).join(" / ")}` : ""}.`,
      120,
    );
    const traceId = newId("vtrace");
    const vectors = await embedTexts(this.#context.models.text, [...observationTexts, traceText]);
    put.push(...observationItems.map((item, index) => ({ ...item, vector: vectors[index] ?? null })));
    put.push({
      id: traceId,
      kind: "trace",
      stream: this.#stream,
      entityId: null,
      ...span,
      text: traceText,
      data: {
        segment: segment.index,
        gate: gateReason,
        observations: observationIds,
        entities: [...perEntity.keys()],
        objects: Object.fromEntries(objects),
        counts: perception.frames.map((frame, index) => ({ ms: frame.timeMs, ...perception.counts[index] })),
        voicedMs: segment.voicedMs,
        audio: segment.audio,
        keyFrames: keyNodes,
        skippedBefore: this.#skipped.filter((skip) => skip.index === segment.index - 1).length,
      },
      vector: vectors[observationTexts.length] ?? null,
      sources: [...rawNodeIds],
    });
    await this.#context.scoped.commitVideo({ put, remove: [...settled.remove], audits });
    this.#galleries.commit(put);

    // Semantic memory: every N observations of an entity, its facts are consolidated from its history.
    const semantic = await consolidateEntities(
      { ...this.#context, config: config.semantic },
      { entityIds: [...perEntity.keys()], observationIds },
    );
    this.#warnings.push(...semantic.warnings);
    if (semantic.write.put.length + semantic.write.remove.length + semantic.write.audits.length > 0)
      await this.#context.scoped.commitVideo(semantic.write);
    // And every N segments of the source, what holds about the place it watches (scene facts).
    const scene = await consolidateSource(
      { ...this.#context, config: config.semantic },
      { stream: this.#stream, traceId },
    );
    await this.#context.scoped.commitVideo(scene.write);

    // Working memory: bounded, updated only after the write succeeded.
    const targets: TrackedTarget[] = [...perEntity].map(([entityId, indices]) => {
      const track = indices.map((index) => tracks[index]).find((found) => found?.face) ?? tracks[indices[0] ?? 0];
      const latest = indices
        .map((index) => tracks[index]?.last)
        .filter((sighting) => sighting !== undefined)
        .sort((a, b) => b.timeMs - a.timeMs)[0];
      return {
        entityId,
        face: track?.face ?? null,
        appearance: track?.appearance ?? null,
        lastSegment: analysedIndex,
        ...(latest
          ? {
              lastBox: latest.box,
              lastSeenMs: latest.timeMs,
              framesAfter: Math.max(0, perception.frames.length - 1 - latest.frame),
            }
          : {}),
      };
    });
    this.#state = applySegment(
      this.#state,
      {
        segment: analysedIndex,
        startMs: span.startMs,
        endMs: span.endMs,
        summary: traceText,
        traceId,
        entities: [...perEntity.keys()],
        targets,
        pending: resolution.pending,
      },
      config.working,
    );
    return { decisions, keyFrames: keyNodes, entities: [...perEntity.keys()] };
  }

  /**
   * Rules → signals → the deterministic notifier → the notification log (and deliveries for what it
   * decided to send). Every decision is recorded, with the key frames of the segment as evidence.
   */
  async #notify(
    rules: readonly VideoItem[],
    segment: Segment,
    perception: SegmentPerception,
    report: { keyFrames: readonly string[]; entities: readonly string[] },
  ): Promise<SegmentReport["notifications"]> {
    if (rules.length === 0) return [];
    const { config, newId } = this.#context;
    const counted = countSignals(
      rules,
      perception.frames.map((frame, index) => ({
        timeMs: this.#startMs + frame.timeMs,
        counts: perception.counts[index] ?? {},
      })),
      this.#countCarry,
      { frames: config.notify.signalFrames },
    );
    this.#countCarry = counted.carry;
    const arrivals = arrivalSignals(
      rules,
      report.entities.map((id) => ({
        id,
        name: this.#galleries.list().find((entity) => entity.id === id)?.name ?? "",
      })),
      this.#present,
      this.#startMs + segment.startMs,
    );
    for (const signal of arrivals) {
      if (signal.holds) this.#present.add(signal.ruleId);
      else this.#present.delete(signal.ruleId);
    }
    const event = this.#state.event?.index ?? this.#state.nextEvent;
    const { decisions, memory } = decide(
      this.#notifyMemory,
      [...counted.signals, ...arrivals],
      policyFor(config.notify, this.#stream),
      event,
    );
    const changed = [...memory].filter(([ruleId, state]) => {
      const before = this.#notifyMemory.get(ruleId);
      return (
        !before ||
        before.holding !== state.holding ||
        before.lastSentMs !== state.lastSentMs ||
        before.sentInEvent !== state.sentInEvent ||
        before.event !== state.event
      );
    });
    this.#notifyMemory = memory;
    // What was recently sent is saved with the decisions that changed it, in one write.
    const notifier = {
      stream: sourceOf(this.#stream),
      rules: changed.map(([ruleId, state]) => ({ ruleId, ...state })),
    };
    if (decisions.length === 0) {
      if (changed.length > 0) await this.#context.scoped.commitVideo({ put: [], remove: [], audits: [], notifier });
      return [];
    }
    const byId = new Map(rules.map((rule) => [rule.id, rule]));
    const put: VideoItem[] = [];
    const audits: VideoWrite["audits"][number][] = [];
    for (const decision of decisions) {
      const rule = byId.get(decision.signal.ruleId);
      if (!rule) continue;
      const id = newId("vnote");
      const at = decision.signal.atMs;
      const text = `${rule.text}: ${decision.signal.detail} at ${formatMediaTime(at - this.#startMs)} of ${this.#label}`;
      const deliveries =
        decision.outcome === "send" && this.#context.deliver
          ? await this.#context.deliver({
              id,
              ruleId: rule.id,
              rule: rule.text,
              stream: this.#stream,
              at: iso(at),
              text,
              value: decision.signal.value,
              evidence: report.keyFrames,
            })
          : [];
      put.push({
        id,
        kind: "notification",
        stream: this.#stream,
        entityId: null,
        startMs: at,
        endMs: at,
        text,
        data: {
          rule: rule.id,
          outcome: decision.outcome,
          reason: decision.reason,
          holds: decision.signal.holds,
          change: decision.signal.change,
          value: decision.signal.value,
          segment: segment.index,
          event,
          deliveries,
          keyFrames: report.keyFrames,
        },
        vector: null,
        sources: [...report.keyFrames],
      });
      audits.push({
        action: "video.notify",
        subject: id,
        details: {
          rule: rule.id,
          stream: this.#stream,
          outcome: decision.outcome,
          reason: decision.reason,
          value: decision.signal.value,
          at: iso(at),
          deliveries: deliveries.map((delivery) => ({ channel: delivery.channel, ok: delivery.ok })),
        },
      });
    }
    await this.#context.scoped.commitVideo({ put, remove: [], audits, notifier });
    return decisions.map((decision) => ({
      rule: decision.signal.ruleId,
      outcome: decision.outcome,
      reason: decision.reason,
      atMs: decision.signal.atMs - this.#startMs,
    }));
  }

  /**
   * What settled pending evidence changes: a new entity if needed, and the pending observation gets its
   * entity — or, when that entity already has an observation of the same segment (another track of
   * the same person there), joins it, so each entity keeps one observation per segment.
   */
  async #settle(
    resolved: readonly PendingResolution[],
    span: { startMs: number; endMs: number },
  ): Promise<Pick<VideoWrite, "put" | "remove" | "audits">> {
    if (resolved.length === 0) return { put: [], remove: [], audits: [] };
    const put: VideoItem[] = [];
    const remove: string[] = [];
    const audits: VideoWrite["audits"][number][] = [];
    const observations = await this.#context.scoped.readVideoItems({
      ids: resolved.map((resolution) => `vobs_${resolution.pendingId}`),
    });
    for (const resolution of resolved) {
      this.#outcomes[`pending→${resolution.outcome}`] = (this.#outcomes[`pending→${resolution.outcome}`] ?? 0) + 1;
      if (resolution.outcome === "new")
        put.push(this.#galleries.newEntity(resolution.entityId, span.startMs, resolution.reason));
      const observation = observations.find((item) => item.id === `vobs_${resolution.pendingId}`);
      if (observation) {
        const sibling =
          resolution.outcome === "match"
            ? (
                await this.#context.scoped.readVideoItems({
                  kinds: ["observation"],
                  entityIds: [resolution.entityId],
                  stream: this.#stream,
                  // A segment's items share its start time: its sibling is among them.
                  startsAt: [observation.startMs],
                })
              ).find((item) => item.data.segment === observation.data.segment)
            : undefined;
        if (sibling) {
          put.push({
            ...sibling,
            sources: [...new Set([...sibling.sources, ...observation.sources])],
            data: { ...sibling.data, joined: [...stringsOf(sibling.data.joined), observation.id] },
          });
          remove.push(observation.id);
        } else {
          put.push({
            ...observation,
            entityId: resolution.entityId,
            data: { ...observation.data, outcome: resolution.outcome, settled: resolution.reason },
          });
        }
      }
      this.#entities.add(resolution.entityId);
      audits.push({
        action: "video.identity.settled",
        subject: resolution.entityId,
        details: { stream: this.#stream, pending: resolution.pendingId, ...resolution },
      });
    }
    return { put, remove, audits };
  }

  async #readKeyFrames(frames: readonly Frame[]): Promise<string[]> {
    const readers = this.#context.models.imageReaders.filter((reader) => reader.produces === "ocr");
    const texts: string[] = [];
    for (const frame of frames) {
      const parts: string[] = [];
      for (const reader of readers) {
        try {
          const text = (await reader.readImage(await encodeJpeg(frame, 92))).trim();
          if (text) parts.push(text.replace(/\s+/g, " "));
        } catch (error) {
          this.#warnings.push(`OCR by ${reader.id} failed: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      texts.push(parts.join(" "));
    }
    return texts;
  }

  async #closeEvent(atMs: number): Promise<void> {
    this.#state = closeEvent(this.#state);
    if (chapterDue(this.#state, this.#startMs + atMs, this.#context.config.chapters)) await this.#writeChapter();
  }

  async #writeChapter(): Promise<void> {
    const { events, state } = takeChapter(this.#state);
    this.#state = state;
    if (events.length === 0) return;
    await writeChapter(this.#context, this.#stream, events);
    this.#chapters += 1;
  }

  async #finish(): Promise<void> {
    // Pending evidence is settled when the stream ends; the open event closes into a last chapter.
    if (this.#state.pending.length > 0) {
      const resolution = resolveSegment({
        segment: this.#analysed,
        tracks: [],
        galleries: this.#galleries.list(),
        targets: [],
        pending: this.#state.pending,
        config: this.#context.config.identity,
        newId: (kind) => this.#context.newId(kind === "entity" ? "vent" : "vpend"),
        final: true,
      });
      const settled = await this.#settle(resolution.resolved, {
        startMs: this.#startMs + this.#mediaMs,
        endMs: this.#startMs + this.#mediaMs,
      });
      await this.#context.scoped.commitVideo(settled);
      this.#galleries.commit(settled.put);
      this.#state = { ...this.#state, pending: [] };
    }
    this.#state = closeEvent(this.#state);
    await this.#writeChapter();
  }
}

/** Schema level: a chapter over closed events, linking their traces; its sources are theirs. */
async function writeChapter(context: WatchContext, stream: string, events: readonly ClosedEvent[]): Promise<void> {
  const traceIds = events.flatMap((event) => event.traces);
  const traces = await context.scoped.readVideoItems({ ids: traceIds });
  const sources = [...new Set(traces.flatMap((trace) => trace.sources))];
  const entities = [...new Set(events.flatMap((event) => event.entities))];
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) return;
  const text = capWords(
    events
      .map(
        (event, index) =>
          `Event ${index + 1} (${traces.filter((t) => event.traces.includes(t.id)).length} segments): ${event.summary}`,
      )
      .join(" "),
    context.config.working.summaryWords * 2,
  );
  const [vector] = await embedTexts(context.models.text, [text]);
  const id = context.newId("vchap");
  await context.scoped.commitVideo({
    put: [
      {
        id,
        kind: "chapter",
        stream,
        entityId: null,
        startMs: first.startMs,
        endMs: last.endMs,
        text,
        data: { events: events.length, traces: traceIds, entities },
        vector: vector ?? null,
        sources,
      },
    ],
    remove: [],
    audits: [
      { action: "video.chapter", subject: id, details: { stream, events: events.length, traces: traceIds.length } },
    ],
  });
}

function chooseKeyFrames(perception: SegmentPerception, count: number): number[] {
  const scored = perception.frames.map((_, index) => {
    const sightings = perception.sightings[index] ?? [];
    const faces = sightings.filter((sighting) => sighting.face).length;
    return { index, score: faces * 2 + sightings.length + (perception.objects[index]?.length ?? 0) * 0.5 };
  });
  const best = scored
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, Math.max(1, count))
    .map((entry) => entry.index);
  return best.sort((a, b) => a - b);
}

function objectCounts(objects: readonly (readonly ObjectDetection[])[]): Map<string, number> {
  // The most seen in any one frame: a bottle seen in four frames is one bottle.
  const counts = new Map<string, number>();
  for (const frame of objects) {
    const inFrame = new Map<string, number>();
    for (const object of frame) inFrame.set(object.label, (inFrame.get(object.label) ?? 0) + 1);
    for (const [label, count] of inFrame) counts.set(label, Math.max(counts.get(label) ?? 0, count));
  }
  return counts;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === "string") : [];
}

function isFrame(frame: Frame | undefined): frame is Frame {
  return frame !== undefined;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const round = (value: number) => Math.round(value * 1000) / 1000;
