import { readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { InputError } from "../../core/errors.ts";
import type { SessionInput, TurnInput } from "../../ingest/session-input.ts";
import type { BenchDataset, BenchQuestion } from "../dataset.ts";
import { QuirkCounter } from "./quirk-counter.ts";
import { checkLimit, datasetFolder, exists, fieldOf, type LoadOptions, parseWith, readYamlFile } from "./read-data.ts";
import { isoAt, turnSpacingMs } from "./timeline.ts";

/** The concept kinds, in the order their concepts are replayed. */
export const lcmpKinds = ["concept_obj", "concept_pet", "concept_person"] as const;

/** Pooled concepts are replayed one per day from this date (LCMP has no dates). */
const firstDay = Date.UTC(2025, 0, 1);
const dayMs = 86_400_000;

/** A YAML scalar read as text (an unquoted `Yes` or `42` is still the author's text). */
const text = z
  .union([z.string(), z.number(), z.boolean()], {
    errorMap: (_issue, context) => ({ message: context.data === undefined ? "Required" : "Expected text" }),
  })
  .transform(String);

const historyTurnSchema = z.object({
  turn: z.number().int().positive(),
  log_type: z.string().nullish(),
  user_input: text.nullish(),
  assistant_response: text.nullish(),
  image_prompt: text.nullish(),
  image_id: z.string().min(1).nullish(),
});

const questionSchema = z.object({
  id: z.union([z.number().int(), z.string().min(1)]),
  type: z.string().min(1),
  question: text,
  image_prompt: text.nullish(),
  image_id: z.string().min(1).nullish(),
  evaluation_criteria: z.object({ ideal_answer: text.nullish(), key_points: z.array(text).nullish() }).nullish(),
  options: z.array(text).nullish(),
  answer: text.nullish(),
});

/**
 * Loads LCMP (`<dataDir>/lcmp/concept_{obj,pet,person}/<concept>/`) as ONE history that pools every concept, so
 * retrieval has to find the right concept among 30. Each concept is one session (id = concept name, one synthetic
 * day apart: the data has no dates) of user/assistant turns; history images are the real PNG files, by path
 * relative to `baseDir` (the lcmp folder). Questions (easy and hard) come with their query image as `imagePath`.
 *
 * Gold: sessions = the question's concept (all questions); turns = history turns whose `image_prompt` equals the
 * question's (an image-to-image pair) plus turns cited in prose ("from Turn 1, Turn 5", "turns 9, 10") in the
 * ideal answer, key points or the question's image prompt; images = the images of those turns. Ids:
 * `<concept>:<turn>` for turns, `<concept>:<image_id>` for images. `answer` is the open-form `ideal_answer` (the
 * MCQ options have no place in `BenchQuestion`). `image_prompt` texts are never given to the system: they are how
 * the images were generated, not what a user would say. `profile.yaml` (the hidden ground truth) is never read.
 *
 * @example const dataset = await loadLcmp(resolveDataDir(), { limit: 5 }); // the first five concepts, pooled
 */
export async function loadLcmp(dataDir: string, options: LoadOptions = {}): Promise<BenchDataset> {
  const limit = checkLimit(options.limit);
  const folder = await datasetFolder(dataDir, "lcmp", lcmpKinds);
  const concepts = (await conceptFolders(folder)).slice(0, limit);
  if (concepts.length === 0) throw new InputError(folder, "holds no concept folder with a history.yaml");
  const quirks = new QuirkCounter();
  const sessions: SessionInput[] = [];
  const questions: BenchQuestion[] = [];
  const seenNames = new Set<string>();
  for (const [index, concept] of concepts.entries()) {
    if (seenNames.has(concept.name)) {
      throw new InputError(path.join(folder, concept.kind, concept.name), "concept name used by two kinds");
    }
    seenNames.add(concept.name);
    const loaded = await loadConcept(folder, concept, firstDay + index * dayMs, quirks);
    sessions.push(loaded.session);
    questions.push(...loaded.questions);
  }
  return {
    name: "lcmp",
    histories: [{ id: "lcmp", sessions, baseDir: folder, questions }],
    notes: quirks.notes(),
  };
}

interface ConceptFolder {
  readonly kind: string;
  readonly name: string;
}

async function conceptFolders(folder: string): Promise<ConceptFolder[]> {
  const kinds = (await readdir(folder, { withFileTypes: true }))
    .filter((entry) => entry.isDirectory() && entry.name.startsWith("concept_"))
    .map((entry) => entry.name)
    .sort((a, b) => kindRank(a) - kindRank(b) || a.localeCompare(b));
  const concepts: ConceptFolder[] = [];
  for (const kind of kinds) {
    const names = (await readdir(path.join(folder, kind), { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
    for (const name of names) {
      if (await exists(path.join(folder, kind, name, "history.yaml"))) concepts.push({ kind, name });
    }
  }
  return concepts;
}

function kindRank(kind: string): number {
  const rank = (lcmpKinds as readonly string[]).indexOf(kind);
  return rank === -1 ? lcmpKinds.length : rank;
}

interface HistoryTurnRecord {
  readonly imageId?: string;
  readonly prompt?: string;
}

async function loadConcept(
  folder: string,
  concept: ConceptFolder,
  start: number,
  quirks: QuirkCounter,
): Promise<{ session: SessionInput; questions: BenchQuestion[] }> {
  const relative = path.posix.join(concept.kind, concept.name);
  const conceptDir = path.join(folder, concept.kind, concept.name);
  const imageFiles = new Set(
    (await exists(path.join(conceptDir, "img"))) ? await readdir(path.join(conceptDir, "img")) : [],
  );
  const historyFile = path.join(conceptDir, "history.yaml");
  const rawTurns = parseWith(z.array(z.unknown()).min(1), await readYamlFile(historyFile), historyFile, "");
  const turnsByNumber = new Map<number, HistoryTurnRecord>();
  const turns: TurnInput[] = [];
  rawTurns.forEach((rawTurn, index) => {
    const turn = parseWith(historyTurnSchema, rawTurn, historyFile, `[${index}]`);
    if (turnsByNumber.has(turn.turn)) {
      throw new InputError(fieldOf(historyFile, `[${index}].turn`), `duplicate turn number ${turn.turn}`);
    }
    const turnId = `${concept.name}:${turn.turn}`;
    const imageId = turn.image_id?.trim() || undefined;
    if (imageId !== undefined) {
      if (!imageFiles.has(`${imageId}.png`)) {
        throw new InputError(fieldOf(historyFile, `[${index}].image_id`), `img/${imageId}.png not found`);
      }
      quirks.add("history images (real PNG files)");
      if (!(turn.user_input ?? "").includes("[IMAGE]")) quirks.add("history images whose text has no [IMAGE] marker");
    }
    const prompt = normaliseSpace(turn.image_prompt ?? "");
    turnsByNumber.set(turn.turn, { ...(imageId ? { imageId } : {}), ...(prompt ? { prompt } : {}) });
    const time = start + turns.length * turnSpacingMs;
    const userText = turn.user_input ?? "";
    if (userText.trim() !== "" || imageId !== undefined) {
      turns.push({
        role: "user",
        text: userText,
        time: isoAt(time),
        ...(imageId ? { images: [{ path: path.posix.join(relative, "img", `${imageId}.png`) }] } : {}),
        metadata: {
          datasetTurnId: turnId,
          ...(imageId ? { datasetImageIds: [`${concept.name}:${imageId}`] } : {}),
          ...(turn.log_type ? { datasetLogType: turn.log_type } : {}),
        },
      });
    } else {
      quirks.add("history turns without user text or image (user turn dropped)");
    }
    const assistantText = turn.assistant_response ?? "";
    if (assistantText.trim() !== "") {
      turns.push({
        role: "assistant",
        text: assistantText,
        time: isoAt(start + turns.length * turnSpacingMs),
        metadata: { datasetTurnId: turnId },
      });
    } else {
      quirks.add("history turns without assistant text (assistant turn dropped)");
    }
  });
  if (turns.length === 0) throw new InputError(historyFile, "no turn has text or an image");
  const session: SessionInput = { session: concept.name, time: isoAt(start), source: "lcmp", turns };
  const questions: BenchQuestion[] = [];
  const seenIds = new Set<string>();
  for (const level of ["easy", "hard"] as const) {
    const file = path.join(conceptDir, `${level}_question.yaml`);
    if (!(await exists(file))) {
      quirks.add(`concepts without ${level}_question.yaml`);
      continue;
    }
    const rawQuestions = parseWith(z.array(z.unknown()), await readYamlFile(file), file, "");
    rawQuestions.forEach((rawQuestion, index) => {
      const where = `[${index}]`;
      const question = parseWith(questionSchema, rawQuestion, file, where);
      const id = `${concept.name}:${level}:${question.id}`;
      if (seenIds.has(id)) throw new InputError(fieldOf(file, `${where}.id`), `duplicate question id ${question.id}`);
      seenIds.add(id);
      questions.push(
        lcmpQuestion(question, id, { concept, conceptDir, imageFiles, turnsByNumber }, file, where, quirks),
      );
    });
  }
  return { session, questions };
}

interface ConceptIndex {
  readonly concept: ConceptFolder;
  readonly conceptDir: string;
  readonly imageFiles: ReadonlySet<string>;
  readonly turnsByNumber: ReadonlyMap<number, HistoryTurnRecord>;
}

function lcmpQuestion(
  question: z.infer<typeof questionSchema>,
  id: string,
  index: ConceptIndex,
  file: string,
  where: string,
  quirks: QuirkCounter,
): BenchQuestion {
  const name = index.concept.name;
  const imageId = question.image_id?.trim() || undefined;
  if (imageId !== undefined && !index.imageFiles.has(`${imageId}.png`)) {
    throw new InputError(fieldOf(file, `${where}.image_id`), `img/${imageId}.png not found`);
  }
  if (imageId === undefined) quirks.add("questions without a query image");
  const prompt = normaliseSpace(question.image_prompt ?? "");
  const paired = prompt
    ? [...index.turnsByNumber].filter(([, turn]) => turn.prompt === prompt).map(([number]) => number)
    : [];
  const criteria = question.evaluation_criteria;
  const prose = [criteria?.ideal_answer ?? "", ...(criteria?.key_points ?? []), question.image_prompt ?? ""];
  const cited: number[] = [];
  for (const number of prose.flatMap(citedTurns)) {
    if (!index.turnsByNumber.has(number)) quirks.add("turn numbers cited in prose that do not exist (dropped)");
    else if (!cited.includes(number)) cited.push(number);
  }
  if (paired.length > 0) quirks.add("questions with turn gold from an equal image_prompt (image-to-image pairs)");
  if (cited.length > 0) quirks.add("questions with turn gold from turns cited in prose");
  const numbers = [...new Set([...paired, ...cited])].sort((a, b) => a - b);
  quirks.add(numbers.length > 0 ? "questions with turn-level gold" : "questions with concept-level gold only");
  const answer = criteria?.ideal_answer ?? question.answer ?? undefined;
  if (question.answer && question.options && !question.options.includes(question.answer)) {
    quirks.add("questions whose MCQ answer is not one of its options");
  }
  if (answer === undefined) quirks.add("questions without an answer");
  return {
    id,
    text: question.question,
    ...(imageId ? { imagePath: path.join(index.conceptDir, "img", `${imageId}.png`) } : {}),
    category: question.type,
    ...(answer === undefined ? {} : { answer }),
    gold: {
      turns: numbers.map((number) => `${name}:${number}`),
      sessions: [name],
      images: numbers.flatMap((number) => {
        const turnImage = index.turnsByNumber.get(number)?.imageId;
        return turnImage ? [`${name}:${turnImage}`] : [];
      }),
    },
  };
}

/**
 * Turn numbers cited in prose: "Turn 5", "turns 9, 10, 11", "Turn 1 and Turn 5", "turn 3 & 9", "Turns 4-6".
 * Case-insensitive: the LCMP authors write both "Turn" and "turn".
 */
export function citedTurns(prose: string): number[] {
  const numbers: number[] = [];
  const citation = /\bturns?\s+(\d+(?:\s*(?:,\s*and|,|&|and|to|-|–)\s*(?:turns?\s+)?\d+)*)/gi;
  for (const match of prose.matchAll(citation)) {
    const list = match[1] ?? "";
    let previous: number | undefined;
    let range = false;
    for (const token of list.matchAll(/\d+|-|–|\bto\b/g)) {
      const value = token[0];
      if (!/^\d+$/.test(value)) {
        range = true;
        continue;
      }
      const number = Number(value);
      if (range && previous !== undefined && number > previous && number - previous <= 50) {
        for (let between = previous + 1; between < number; between += 1) numbers.push(between);
      }
      numbers.push(number);
      previous = number;
      range = false;
    }
  }
  return numbers;
}

function normaliseSpace(value: string): string {
  return value.replace(/\s+/g, " ").trim();
}
