/**
 * The video memory on the real clips of ../shared/data/video (issue 13): identity targets, the table
 * video's identity precision/recall against frame labels, speed against real time, and per-segment
 * latency over a stream looped 10×. Every run uses the `local` profile (USE-lite text vectors,
 * MobileNetV2 image features, tesseract OCR) and `@vladmandic/human` for faces and objects.
 *
 *   npx tsx bench/video.ts                         # full run: bench/results/video.{json,md} + BENCHMARKS.md section
 *   npx tsx bench/video.ts --out /tmp/video-bench  # figures to a folder, BENCHMARKS.md untouched
 *   npx tsx bench/video.ts --only table,loop       # some parts only (implies nothing is written to BENCHMARKS.md)
 *
 * Data: --data DIR or CAIRN_DATA (the folder holding video/), default ../shared/data.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Memory, type SegmentReport, type WatchResult } from "../src/memory.ts";
import { createLocalModels } from "../src/models/local-provider.ts";
import type { Models } from "../src/models/provider.ts";
import { createLocalDetector } from "../src/video/perception/local-detector.ts";

const { values } = parseArgs({
  options: {
    data: { type: "string" },
    out: { type: "string" },
    only: { type: "string" },
    fps: { type: "string", default: "1" },
    loops: { type: "string", default: "10" },
  },
});

const dataDir = resolve(
  values.data ?? process.env.CAIRN_DATA ?? join(import.meta.dirname, "../../shared/data"),
  "video",
);
if (!existsSync(join(dataDir, "SOURCE.md"))) {
  console.error(`no clips at ${dataDir}: pass --data or set CAIRN_DATA to the shared data folder`);
  process.exit(2);
}
const fps = Number(values.fps);
const loops = Number(values.loops);
const parts = new Set((values.only ?? "identity,asl,table,loop,clips").split(","));
const full = values.out === undefined && values.only === undefined;
const out = resolve(values.out ?? join(import.meta.dirname, "results"));
mkdirSync(out, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "cairn-video-bench-"));

/**
 * Who is at the table, by media second, labelled by looking at the frames (ffmpeg -vf fps=0.5 contact
 * sheets with timestamps): six visitors, each from entering to leaving the picture. Boundaries are
 * ±2 s (the sheets' spacing).
 */
const tableVisitors = [
  { id: "V1", from: 6, to: 19, look: "woman, blonde ombre hair, long grey cardigan" },
  { id: "V2", from: 22, to: 45, look: "man, black hooded jacket and trousers" },
  { id: "V3", from: 50, to: 69, look: "woman, long blonde hair, black top and trousers" },
  { id: "V4", from: 74, to: 86, look: "man, black T-shirt, short dark hair, glasses" },
  { id: "V5", from: 92, to: 119, look: "woman, long dark hair, grey knit cardigan" },
  { id: "V6", from: 124, to: 135, look: "man, grey button shirt, jeans" },
] as const;

/**
 * The stage clip at 1 frame/s, labelled by looking at each frame: 0–1 s the wide shot of the performer
 * (with the backs of audience heads), 2–3 s a close-up of the pianist, 4–7 s close-ups of the
 * performer, 8–9 s the audience couple.
 */
const performerWide = { from: 0, to: 2 };
const performerCloseUps = { from: 4, to: 8 };

const scope = (user: string) => ({ tenant: "bench", user });
const results: Record<string, unknown> = {
  machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "", node: process.version, loadAtStart: loadavg()[0] },
  date: new Date().toISOString(),
  fps,
};

const models = await createLocalModels({ ocr: true });
const detector = createLocalDetector();
try {
  if (parts.has("identity")) results.identity = await identityRun(models);
  if (parts.has("asl")) results.asl = await aslRun(models);
  if (parts.has("table")) results.table = await tableRun(models);
  if (parts.has("loop")) results.loop = await loopRun(models);
  if (parts.has("clips")) results.clips = await clipsRun(models);
} finally {
  await detector.close();
  await models.close();
  rmSync(work, { recursive: true, force: true });
}

// The machine is shared: its load says how far the speed figures are from an idle machine's.
results.loadAtEnd = loadavg()[0];
writeFileSync(join(out, "video.json"), `${JSON.stringify(results, null, 2)}\n`);
const markdown = render(results);
writeFileSync(join(out, "video.md"), markdown);
console.log(markdown);
if (full) updateBenchmarksMd(markdown);

async function open(name: string): Promise<Memory> {
  return Memory.open({ path: join(work, name), models, video: { detector, config: { gateway: { fps } } } });
}

async function watchClip(memory: Memory, user: string, file: string, stream: string, reports?: SegmentReport[]) {
  const watch = await memory.watch(scope(user), join(dataDir, file), {
    stream,
    startTime: "2026-01-01T00:00:00Z",
    onSegment: (report) => reports?.push(report),
  });
  return watch.done;
}

/** The performer in the wide shot and the close-ups is one entity matching his enrolled portrait; the distractor matches nobody. */
async function identityRun(_models: Models) {
  const memory = await open("identity");
  try {
    const user = "stage";
    const photo = (name: string) => new Uint8Array(readFileSync(join(dataDir, "photos", name)));
    const lin = await memory.enrolEntity(scope(user), { name: "performer (portrait)" }, [
      { origin: "lin-manuel-miranda.png", data: photo("lin-manuel-miranda.png") },
    ]);
    const distractor = await memory.enrolEntity(scope(user), { name: "distractor (portrait)" }, [
      { origin: "biden.jpg", data: photo("biden.jpg") },
    ]);
    const reports: SegmentReport[] = [];
    const result = await watchClip(memory, user, "short_hamilton_clip.mp4", "stage", reports);
    const entities = await memory.listEntities(scope(user));
    const observations = await memory.searchVideo(scope(user), "person", { level: "observation", limit: 1000 });
    const seenIn = (hit: (typeof observations)[number], span: { from: number; to: number }) =>
      (Array.isArray(hit.item.data.seenAtMs) ? (hit.item.data.seenAtMs as number[]) : []).some(
        (ms) => ms >= span.from * 1000 && ms < span.to * 1000,
      );
    const identified = observations.filter((hit) => hit.item.entityId !== null);
    const wide = [...new Set(identified.filter((hit) => seenIn(hit, performerWide)).map((hit) => hit.item.entityId))];
    const closeUps = [
      ...new Set(identified.filter((hit) => seenIn(hit, performerCloseUps)).map((hit) => hit.item.entityId)),
    ];
    // The wide shot also shows the backs of audience heads (other people); the performer is the one with a face there.
    const portraitSeen = identified.filter((hit) => hit.item.entityId === lin.entityId);
    const portraitCoversBoth =
      portraitSeen.some((hit) => seenIn(hit, performerWide)) &&
      portraitSeen.some((hit) => seenIn(hit, performerCloseUps));
    return {
      wideShotEntities: wide,
      closeUpEntities: closeUps,
      result: summary(result),
      entities: entities.map((entity) => ({ id: entity.id, name: entity.name, observations: entity.observations })),
      performerIsOneEntity: portraitCoversBoth && closeUps.length === 1,
      performerMatchesPortrait: portraitCoversBoth && closeUps[0] === lin.entityId,
      otherEntitiesInWideShot: wide.filter((id) => id !== lin.entityId).length,
      distractorObservations: entities.find((entity) => entity.id === distractor.entityId)?.observations ?? 0,
      decisions: reports.flatMap((report) => report.decisions.map((decision) => ({ at: report.startMs, ...decision }))),
    };
  } finally {
    await memory.close();
  }
}

/** The three recordings of asl/, each a stream of its own, in one scope. */
async function aslRun(_models: Models) {
  const memory = await open("asl");
  try {
    const user = "asl";
    const runs = [];
    for (const file of ["again.mkv", "book.mkv", "sister.mkv"]) {
      const reports: SegmentReport[] = [];
      const result = await watchClip(memory, user, join("asl", file), file, reports);
      runs.push({ file, result: summary(result) });
    }
    const entities = await memory.listEntities(scope(user));
    return {
      runs,
      entities: entities.map((entity) => ({
        id: entity.id,
        streams: entity.sightings.map((sighting) => sighting.stream),
        observations: entity.observations,
      })),
      distinctEntitiesAcrossRecordings: entities.length,
    };
  } finally {
    await memory.close();
  }
}

/** One entity per visitor at the table: pairwise precision/recall of identity over observations. */
async function tableRun(_models: Models) {
  const memory = await open("table");
  try {
    const user = "table";
    const reports: SegmentReport[] = [];
    const result = await watchClip(memory, user, "one-by-one-person-detection.mp4", "table", reports);
    const observations = await memory.searchVideo(scope(user), "person", { level: "observation", limit: 10_000 });
    const start = Date.parse("2026-01-01T00:00:00Z");
    const labelled = observations.map((hit) => {
      const from = (hit.item.startMs - start) / 1000;
      const to = (hit.item.endMs - start) / 1000;
      const overlaps = tableVisitors
        .map((visitor) => ({ id: visitor.id, overlap: Math.min(to, visitor.to) - Math.max(from, visitor.from) }))
        .filter((entry) => entry.overlap > 0)
        .sort((a, b) => b.overlap - a.overlap);
      return { entity: hit.item.entityId, visitor: overlaps[0]?.id ?? null, from, to };
    });
    const scored = labelled.filter((entry) => entry.entity !== null && entry.visitor !== null);
    let samePredicted = 0;
    let sameTrue = 0;
    let both = 0;
    for (let i = 0; i < scored.length; i++) {
      for (let j = i + 1; j < scored.length; j++) {
        const a = scored[i];
        const b = scored[j];
        if (!a || !b) continue;
        const predicted = a.entity === b.entity;
        const truth = a.visitor === b.visitor;
        if (predicted) samePredicted += 1;
        if (truth) sameTrue += 1;
        if (predicted && truth) both += 1;
      }
    }
    const byEntity = new Map<string, Set<string>>();
    for (const entry of scored)
      byEntity.set(
        entry.entity as string,
        new Set([...(byEntity.get(entry.entity as string) ?? []), entry.visitor as string]),
      );
    const byVisitor = new Map<string, Set<string>>();
    for (const entry of scored)
      byVisitor.set(
        entry.visitor as string,
        new Set([...(byVisitor.get(entry.visitor as string) ?? []), entry.entity as string]),
      );
    const latencies = reports.filter((report) => report.analysed).map((report) => report.latencyMs);
    return {
      labels: tableVisitors,
      result: summary(result),
      realTimeFactor: round(result.mediaMs / result.wallMs),
      observations: labelled.length,
      unresolvedObservations: labelled.filter((entry) => entry.entity === null).length,
      outsideVisitorIntervals: labelled.filter((entry) => entry.visitor === null).length,
      pairwisePrecision: samePredicted ? round(both / samePredicted) : null,
      pairwiseRecall: sameTrue ? round(both / sameTrue) : null,
      entities: byEntity.size,
      entitiesSharedByVisitors: [...byEntity.values()].filter((visitors) => visitors.size > 1).length,
      entitiesPerVisitor: Object.fromEntries([...byVisitor].map(([visitor, entities]) => [visitor, entities.size])),
      segmentLatencyMs: { mean: round(mean(latencies)), p95: round(percentile(latencies, 0.95)) },
      decisions: reports.flatMap((report) => report.decisions.map((decision) => ({ at: report.startMs, ...decision }))),
      observationLabels: labelled,
    };
  } finally {
    await memory.close();
  }
}

/** The stage clip looped `loops` times as one stream: per-segment latency of the last pass vs the first. */
async function loopRun(_models: Models) {
  const looped = join(work, "looped.mkv");
  execFileSync("ffmpeg", [
    "-loglevel",
    "error",
    "-y",
    "-stream_loop",
    String(loops - 1),
    "-i",
    join(dataDir, "short_hamilton_clip.mp4"),
    "-c",
    "copy",
    looped,
  ]);
  const memory = await open("loop");
  try {
    const reports: SegmentReport[] = [];
    const watch = await memory.watch(scope("loop"), looped, {
      stream: "loop",
      startTime: "2026-01-01T00:00:00Z",
      onSegment: (report) => reports.push(report),
    });
    const result = await watch.done;
    const clipMs = result.mediaMs / loops;
    const pass = (index: number) =>
      reports
        .filter((report) => report.analysed && Math.floor(report.startMs / clipMs) === index)
        .map((report) => report.latencyMs);
    const first = pass(0);
    const last = pass(loops - 1);
    const passes = Array.from({ length: loops }, (_, index) => round(mean(pass(index))));
    // The first pass pays for loading the models; the comparison starts at the second pass.
    const second = pass(1);
    return {
      result: summary(result),
      passes,
      firstPassMeanMs: round(mean(first)),
      secondPassMeanMs: round(mean(second)),
      lastPassMeanMs: round(mean(last)),
      lastVsSecond: round(mean(last) / mean(second)),
      entities: (await memory.listEntities(scope("loop"))).length,
    };
  } finally {
    await memory.close();
  }
}

/** `cairn watch` on every other clip: what it makes of each. */
async function clipsRun(_models: Models) {
  const memory = await open("clips");
  try {
    const rows = [];
    for (const file of ["bottle-detection.mp4", "car-detection.mp4"]) {
      const reports: SegmentReport[] = [];
      const result = await watchClip(memory, file, file, file, reports);
      const objects = new Map<string, number>();
      for (const report of reports)
        for (const label of report.objects) objects.set(label, (objects.get(label) ?? 0) + 1);
      rows.push({ file, result: summary(result), objectsBySegments: Object.fromEntries(objects) });
    }
    return rows;
  } finally {
    await memory.close();
  }
}

function summary(result: WatchResult) {
  return {
    mediaS: round(result.mediaMs / 1000),
    wallS: round(result.wallMs / 1000),
    frames: result.frames,
    segments: result.segments,
    analysed: result.analysed,
    skipped: result.skipped.length,
    entities: result.entities.length,
    outcomes: result.outcomes,
    chapters: result.chapters,
    warnings: result.warnings.length,
  };
}

function render(data: Record<string, unknown>): string {
  const lines = [
    "## Video streams (issue 13)",
    "",
    `\`npx tsx bench/video.ts\` on the clips of \`../shared/data/video/\` at ${fps} frame/s, \`local\` profile (USE-lite, MobileNetV2, tesseract) with \`@vladmandic/human\` 3.3.6 (BlazeFace, FaceRes, CenterNet) on tfjs WASM; ${JSON.stringify(data.machine)}; 1-minute load average at the end ${String(data.loadAtEnd)}; ${String(data.date)}. Raw figures: \`bench/results/video.json\`.`,
    "",
  ];
  const identity = data.identity as Record<string, unknown> | undefined;
  if (identity) {
    lines.push(
      "**Stage clip, portraits enrolled first** (performer's and distractor's photos):",
      `performer one entity across the wide shot and the close-ups: ${identity.performerIsOneEntity}; it is his enrolled portrait's entity: ${identity.performerMatchesPortrait}; ` +
        `other people identified in the wide shot (audience seen from behind): ${identity.otherEntitiesInWideShot}; ` +
        `distractor's observations: ${identity.distractorObservations}; entities: ${JSON.stringify(identity.entities)}`,
      "",
    );
  }
  const asl = data.asl as Record<string, unknown> | undefined;
  if (asl) {
    lines.push(
      "**asl/ (three recordings, one stream each)**:",
      `entities across the three: ${asl.distinctEntitiesAcrossRecordings} — ${JSON.stringify(asl.entities)}`,
      "",
    );
  }
  const table = data.table as Record<string, unknown> | undefined;
  if (table) {
    lines.push(
      "**Table video (139 s, six visitors labelled by hand from 0.5 frame/s contact sheets)**:",
      `pairwise identity precision ${table.pairwisePrecision}, recall ${table.pairwiseRecall} over ${table.observations} observations ` +
        `(${table.unresolvedObservations} unresolved, ${table.outsideVisitorIntervals} outside any visitor's interval); ` +
        `${table.entities} entities, ${table.entitiesSharedByVisitors} shared by two or more visitors; entities per visitor ${JSON.stringify(table.entitiesPerVisitor)}; ` +
        `speed ${table.realTimeFactor}× real time (${JSON.stringify(table.result)}); segment latency ${JSON.stringify(table.segmentLatencyMs)} ms`,
      "",
    );
  }
  const loop = data.loop as Record<string, unknown> | undefined;
  if (loop) {
    lines.push(
      `**Stage clip looped ${loops}× as one stream**: mean analysed-segment latency per pass ${JSON.stringify(loop.passes)} ms; ` +
        `last pass / second pass ${loop.lastVsSecond} (the first pass loads the models); entities ${loop.entities}`,
      "",
    );
  }
  const clips = data.clips as { file: string; result: unknown; objectsBySegments: unknown }[] | undefined;
  if (clips) {
    for (const clip of clips)
      lines.push(
        `**${clip.file}**: ${JSON.stringify(clip.result)}; objects (segments seen in): ${JSON.stringify(clip.objectsBySegments)}`,
        "",
      );
  }
  return `${lines.join("\n")}\n`;
}

/** A full run replaces the video section (between its markers) in the hand-written part of BENCHMARKS.md. */
function updateBenchmarksMd(markdown: string): void {
  const path = join(import.meta.dirname, "../BENCHMARKS.md");
  const begin = "<!-- video:begin (bench/video.ts) -->";
  const end = "<!-- video:end -->";
  const current = readFileSync(path, "utf8");
  const section = `${begin}\n${markdown}${end}`;
  const next = current.includes(begin)
    ? current.replace(new RegExp(`${begin.replace(/[()]/g, "\\$&")}[\\s\\S]*?${end}`), section)
    : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(path, next);
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : Number.NaN;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
