import { readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { InputError } from "../../core/errors.ts";
import type { ImageInput, SessionInput, TurnInput } from "../../ingest/session-input.ts";
import type { BenchDataset, BenchHistory, BenchQuestion } from "../dataset.ts";
import { captionOnlyImage } from "./caption-only-image.ts";
import { QuirkCounter } from "./quirk-counter.ts";
import { checkLimit, datasetFolder, fieldOf, type LoadOptions, parseWith, readJsonFile } from "./read-data.ts";
import { isoAt, sessionStarts, turnSpacingMs } from "./timeline.ts";
import { normaliseTurnId, sessionOfTurnId, splitEvidence } from "./turn-ids.ts";

/** Mem-Gallery's task codes (the `point` of a QA, used as the category) and their names from the benchmark. */
export const memGalleryTasks: Readonly<Record<string, string>> = Object.freeze({
  FR: "Factual Retrieval",
  MR: "Multi-entity Reasoning",
  TR: "Temporal Reasoning",
  VR: "Visual-centric Reasoning",
  TTL: "Test-time Learning",
  VS: "Visual-centric Search",
  CD: "Conflict Detection",
  KR: "Knowledge Resolution",
  AR: "Answer Refusal",
});

const questionsKey = "human-annotated QAs";
const oneOrMany = z.union([z.string().transform((value) => [value]), z.array(z.string())]);

const fileSchema = z.object({
  character_profile: z.object({ name: z.string().optional() }).optional(),
  multi_session_dialogues: z.array(z.unknown()).min(1),
  [questionsKey]: z.array(z.unknown()),
});

const sessionSchema = z.object({
  session_id: z.string().min(1),
  date: z.string(),
  dialogues: z.array(z.unknown()),
});

const roundSchema = z.object({
  round: z.string().min(1),
  user: z.string().nullish(),
  assistant: z.string().nullish(),
  image_id: oneOrMany.optional(),
  input_image: oneOrMany.optional(),
  image_caption: oneOrMany.optional(),
});

const questionSchema = z.object({
  point: z.string().min(1),
  question: z.string().min(1),
  answer: z.union([z.string(), z.number()]).nullish(),
  session_id: oneOrMany.nullish(),
  clue: oneOrMany.nullish(),
  question_image: z.string().nullish(),
  image_caption: z.string().nullish(),
});

/**
 * Loads Mem-Gallery (`<dataDir>/mem-gallery/dialog/*.json`): one history per dialog file, each round split into a
 * user turn (with the round's images, caption-only: upstream images are Git LFS pointers) and an assistant turn,
 * both carrying the round id as `datasetTurnId`; task codes (`FR`, `VS`, ...) as categories.
 *
 * Gold: turns = `clue` round ids; sessions = `session_id` ∪ the clue rounds' sessions; images = for VS the image
 * ids named in the answer, else the images of the clue rounds. Questions with an empty `clue` (AR abstention) keep
 * all gold empty. A query image has no pixels either: its caption is appended to the question text.
 *
 * @example const dataset = await loadMemGallery(resolveDataDir());
 */
export async function loadMemGallery(dataDir: string, options: LoadOptions = {}): Promise<BenchDataset> {
  const limit = checkLimit(options.limit);
  const folder = await datasetFolder(dataDir, "mem-gallery", ["dialog"]);
  const dialogDir = path.join(folder, "dialog");
  const names = (await readdir(dialogDir)).filter((name) => name.endsWith(".json")).sort();
  if (names.length === 0) throw new InputError(dialogDir, "holds no .json dialog file");
  const quirks = new QuirkCounter();
  const histories: BenchHistory[] = [];
  for (const name of names.slice(0, limit)) {
    const file = path.join(dialogDir, name);
    histories.push(memGalleryHistory(await readJsonFile(file), path.basename(name, ".json"), file, quirks));
  }
  return { name: "mem-gallery", histories, notes: quirks.notes() };
}

interface RoundRecord {
  readonly session: string;
  readonly images: readonly string[];
}

function memGalleryHistory(raw: unknown, id: string, file: string, quirks: QuirkCounter): BenchHistory {
  const data = parseWith(fileSchema, raw, file, "");
  let user = data.character_profile?.name?.trim() ?? "";
  if (user === "") {
    quirks.add("histories without character_profile.name (user speaker named 'user')");
    user = "user";
  }
  const rounds = new Map<string, RoundRecord>();
  /** Image ids by their numbers (`D1:IMG_001` and `D1:IMG_1` are one image), to the id as the file writes it. */
  const images = new Map<string, string>();
  const parsed = data.multi_session_dialogues.map((rawSession, index) =>
    parseWith(sessionSchema, rawSession, file, `multi_session_dialogues[${index}]`),
  );
  const dated = parsed.map((session, index) => {
    const start = /^\d{4}-\d{2}-\d{2}$/.test(session.date) ? Date.parse(`${session.date}T00:00:00Z`) : Number.NaN;
    if (Number.isNaN(start)) {
      throw new InputError(
        fieldOf(file, `multi_session_dialogues[${index}].date`),
        `"${session.date}" is not a YYYY-MM-DD date`,
      );
    }
    return { session, index, start };
  });
  dated.forEach((entry, index) => {
    if (index > 0 && entry.start < (dated[index - 1]?.start ?? entry.start)) {
      quirks.add("sessions listed out of date order (ordered by date)");
    }
  });
  dated.sort((a, b) => a.start - b.start || a.index - b.index);

  const seenSessions = new Set<string>();
  const built: { id: string; start: number; turns: Omit<TurnInput, "time">[] }[] = [];
  for (const { session, index, start } of dated) {
    const where = `multi_session_dialogues[${index}]`;
    if (seenSessions.has(session.session_id)) {
      throw new InputError(fieldOf(file, `${where}.session_id`), `duplicate session "${session.session_id}"`);
    }
    seenSessions.add(session.session_id);
    const turns: Omit<TurnInput, "time">[] = [];
    session.dialogues.forEach((rawRound, roundIndex) => {
      const roundWhere = `${where}.dialogues[${roundIndex}]`;
      const round = parseWith(roundSchema, rawRound, file, roundWhere);
      const { id: roundId, repairs } = normaliseTurnId(round.round);
      for (const repair of repairs) quirks.add(`round ids normalised (${repair})`);
      if (rounds.has(roundId))
        throw new InputError(fieldOf(file, `${roundWhere}.round`), `duplicate round "${roundId}"`);
      if (sessionOfTurnId(roundId) !== session.session_id) quirks.add("rounds whose id names another session (kept)");
      const roundImages = roundImageInputs(round, file, roundWhere, quirks);
      for (const image of roundImages) {
        const key = imageKey(image.id);
        if (images.has(key))
          throw new InputError(fieldOf(file, `${roundWhere}.image_id`), `duplicate image "${image.id}"`);
        images.set(key, image.id);
      }
      const imageIds = roundImages.map((image) => image.id);
      const userText = round.user ?? "";
      if (userText.trim() !== "" || roundImages.length > 0) {
        turns.push({
          speaker: user,
          role: "user",
          text: userText,
          ...(roundImages.length > 0 ? { images: roundImages.map((image) => image.input) } : {}),
          metadata:
            roundImages.length > 0
              ? { datasetTurnId: roundId, datasetImageIds: imageIds, captionOnlyImage: true }
              : { datasetTurnId: roundId },
        });
      } else {
        quirks.add("rounds without user text or image (user turn dropped)");
      }
      const assistantText = round.assistant ?? "";
      if (assistantText.trim() !== "") {
        turns.push({
          speaker: "assistant",
          role: "assistant",
          text: assistantText,
          metadata: { datasetTurnId: roundId },
        });
      } else {
        quirks.add("rounds without assistant text (assistant turn dropped)");
      }
      if (userText.trim() !== "" || roundImages.length > 0 || assistantText.trim() !== "") {
        rounds.set(roundId, { session: session.session_id, images: imageIds });
      }
    });
    if (turns.length === 0) {
      quirks.add("sessions without turns (skipped)");
      continue;
    }
    built.push({ id: session.session_id, start, turns });
  }
  if (built.length === 0) throw new InputError(fieldOf(file, "multi_session_dialogues"), "no session has any turn");
  const { starts, shifted } = sessionStarts(built.map((session) => ({ ...session, turnCount: session.turns.length })));
  quirks.add("sessions sharing a date with the previous one (started just after it)", shifted);
  const sessions: SessionInput[] = built.map((session, index) => {
    const start = starts[index] ?? session.start;
    return {
      session: session.id,
      time: isoAt(start),
      source: "mem-gallery",
      turns: session.turns.map((turn, turnIndex) => ({ ...turn, time: isoAt(start + turnIndex * turnSpacingMs) })),
    };
  });
  // Sessions skipped for having no turn cannot be gold.
  const replayed = new Set(built.map((session) => session.id));
  const questions = data[questionsKey].map((rawQuestion, index) =>
    memGalleryQuestion(rawQuestion, `${id}:q${index + 1}`, { rounds, images, sessions: replayed }, file, index, quirks),
  );
  return { id, sessions, questions };
}

function roundImageInputs(
  round: z.infer<typeof roundSchema>,
  file: string,
  where: string,
  quirks: QuirkCounter,
): { id: string; input: ImageInput }[] {
  const ids = round.image_id ?? [];
  const captions = round.image_caption ?? [];
  const paths = round.input_image ?? [];
  if (ids.length === 0) {
    if (captions.length > 0 || paths.length > 0)
      quirks.add("rounds with image captions or paths but no image_id (ignored)");
    return [];
  }
  if (captions.length !== ids.length) {
    throw new InputError(
      fieldOf(file, `${where}.image_caption`),
      `holds ${captions.length} captions for ${ids.length} image ids`,
    );
  }
  return ids.map((rawId, index) => {
    const id = rawId.trim();
    if (!/^D\d+:IMG_\d+$/i.test(id)) {
      throw new InputError(fieldOf(file, `${where}.image_id[${index}]`), `"${rawId}" is not a D<s>:IMG_<n> image id`);
    }
    const caption = captions[index] ?? "";
    if (caption.trim() === "") quirks.add("images without caption");
    quirks.add("images stored as caption-only images (Git LFS pointers upstream)");
    const location = paths[index]?.trim() || `mem-gallery image ${id} without a path`;
    return { id, input: captionOnlyImage(location, caption) };
  });
}

function imageKey(id: string): string {
  const match = /^D0*(\d+):IMG_0*(\d+)$/i.exec(id.trim());
  return match ? `${match[1]}:${match[2]}` : id.trim();
}

interface HistoryIndex {
  readonly rounds: ReadonlyMap<string, RoundRecord>;
  readonly images: ReadonlyMap<string, string>;
  readonly sessions: ReadonlySet<string>;
}

function memGalleryQuestion(
  raw: unknown,
  id: string,
  index: HistoryIndex,
  file: string,
  position: number,
  quirks: QuirkCounter,
): BenchQuestion {
  const where = `${questionsKey}[${position}]`;
  const question = parseWith(questionSchema, raw, file, where);
  const turns: string[] = [];
  if (question.clue === undefined || question.clue === null)
    quirks.add("questions without a clue list (empty turn gold)");
  for (const clue of question.clue ?? []) {
    const parts = splitEvidence(clue);
    if (parts.length > 1) quirks.add("clue strings holding several round ids (split)");
    for (const part of parts) {
      const { id: roundId, repairs } = normaliseTurnId(part);
      for (const repair of repairs) quirks.add(`clue ids normalised (${repair})`);
      if (!index.rounds.has(roundId)) quirks.add("clue ids that match no round (dropped)");
      else if (!turns.includes(roundId)) turns.push(roundId);
    }
  }
  const clueImages = [...new Set(turns.flatMap((roundId) => index.rounds.get(roundId)?.images ?? []))];
  let sessions: string[] = [];
  let images: string[] = [];
  if (turns.length === 0) {
    quirks.add("questions with an empty clue (all gold left empty; session_id not used)");
  } else {
    const clueSessions = turns.map((roundId) => index.rounds.get(roundId)?.session ?? "");
    if (question.session_id === undefined || question.session_id === null) {
      quirks.add("questions without a session_id list (sessions taken from the clue rounds)");
    }
    const declared = (question.session_id ?? []).map((session) => session.trim());
    for (const session of declared) {
      if (!index.sessions.has(session)) quirks.add("session_id entries that match no session (dropped)");
    }
    const known = declared.filter((session) => index.sessions.has(session));
    sessions = [...new Set([...known, ...clueSessions])];
    if (question.session_id && sessions.length !== new Set(known).size) {
      quirks.add("session_id lists missing a clue round's session (union used)");
    }
    images = clueImages;
  }
  const answer = question.answer === undefined || question.answer === null ? undefined : String(question.answer);
  if (question.point === "VS") {
    const named = [...(answer ?? "").matchAll(/D\d+:IMG_\d+/gi)].map((match) => match[0]);
    const resolved = [...new Set(named.map((imageId) => index.images.get(imageKey(imageId))))].filter(
      (imageId): imageId is string => imageId !== undefined,
    );
    quirks.add("VS answer image ids that match no image (dropped)", named.length - resolved.length);
    if (resolved.length > 0) {
      images = resolved;
    } else {
      quirks.add("VS answers naming no known image (gold images taken from the clue rounds)");
    }
  }
  let text = question.question;
  if (question.question_image || question.image_caption) {
    const caption = question.image_caption?.trim() ?? "";
    if (caption === "") {
      quirks.add("query images without a caption (question kept without it)");
    } else {
      quirks.add("query images given as their caption appended to the question (no pixels upstream)");
      text = `${text}\n[query image: ${caption}]`;
    }
  }
  if (!(question.point in memGalleryTasks)) quirks.add(`questions of an unknown task type "${question.point}" (kept)`);
  return {
    id,
    text,
    category: question.point,
    ...(answer === undefined ? {} : { answer }),
    gold: { turns, sessions, images },
  };
}
