import path from "node:path";
import { z } from "zod";
import { InputError } from "../../core/errors.ts";
import type { ImageInput, SessionInput, TurnInput } from "../../ingest/session-input.ts";
import type { BenchDataset, BenchHistory, BenchQuestion } from "../dataset.ts";
import { captionOnlyImage } from "./caption-only-image.ts";
import { parseLocomoDate } from "./locomo-date.ts";
import { QuirkCounter } from "./quirk-counter.ts";
import { checkLimit, datasetFolder, fieldOf, type LoadOptions, parseWith, readJsonFile } from "./read-data.ts";
import { isoAt, sessionStarts, turnSpacingMs } from "./timeline.ts";
import { normaliseTurnId, splitEvidence } from "./turn-ids.ts";

/** LoCoMo's numeric QA categories, named as the official scorer (`task_eval/evaluation.py`) treats them. */
export const locomoCategories: Readonly<Record<number, string>> = Object.freeze({
  1: "multi-hop",
  2: "temporal",
  3: "open-domain",
  4: "single-hop",
  5: "adversarial",
});

/** What an adversarial (category 5) question expects: its `adversarial_answer` is the trap, not the answer. */
export const locomoNotMentioned = "Not mentioned in the conversation";

const fileName = "locomo10.json";

const sampleSchema = z.object({
  sample_id: z.string().min(1),
  conversation: z.record(z.unknown()),
  qa: z.array(z.unknown()),
});

const turnSchema = z.object({
  speaker: z.string().min(1),
  dia_id: z.string().min(1),
  text: z.string(),
  img_url: z.array(z.string()).optional(),
  blip_caption: z.string().optional(),
  /**
   * The web-search string LoCoMo's authors used to fetch the picture. No real user's image carries one, so it never
   * reaches the write path (it used to be appended to the caption, which made image turns easier to find than a
   * deployment could make them); only its presence is counted.
   */
  query: z.string().optional(),
});

const answerSchema = z.union([z.string(), z.number()]).nullish();
const questionSchema = z.object({
  question: z.string().min(1),
  answer: answerSchema,
  adversarial_answer: answerSchema,
  category: z.number().int(),
  evidence: z.array(z.string()),
});

/**
 * Loads LoCoMo (`<dataDir>/locomo/locomo10.json`): one history per conversation, sessions in date order with their
 * dated start times (turns 1 s apart), shared images as caption-only images (the pixels were never released), and
 * the QA with turn/session/image gold in LoCoMo's own `D<session>:<turn>` ids.
 *
 * Decisions: image ids are the ids of the turns that shared them (one image per turn), so gold images are the gold
 * turns that carry one; category-5 questions expect "not mentioned" (`answer` when upstream gives one).
 *
 * @example const dataset = await loadLocomo(resolveDataDir(), { limit: 2 });
 */
export async function loadLocomo(dataDir: string, options: LoadOptions = {}): Promise<BenchDataset> {
  const limit = checkLimit(options.limit);
  const folder = await datasetFolder(dataDir, "locomo", [fileName]);
  const file = path.join(folder, fileName);
  const samples = parseWith(z.array(z.unknown()).min(1), await readJsonFile(file), file, "");
  const quirks = new QuirkCounter();
  const histories: BenchHistory[] = [];
  const seen = new Set<string>();
  for (const [index, sample] of samples.slice(0, limit).entries()) {
    const history = locomoHistory(sample, file, `[${index}]`, quirks);
    if (seen.has(history.id)) throw new InputError(fieldOf(file, `[${index}].sample_id`), `duplicate "${history.id}"`);
    seen.add(history.id);
    histories.push(history);
  }
  return { name: "locomo", histories, notes: quirks.notes() };
}

interface TurnRecord {
  readonly session: string;
  readonly hasImage: boolean;
}

interface DatedSession {
  readonly number: number;
  readonly key: string;
  readonly start: number;
  readonly turns: readonly unknown[];
}

function locomoHistory(raw: unknown, file: string, where: string, quirks: QuirkCounter): BenchHistory {
  const sample = parseWith(sampleSchema, raw, file, where);
  const dated = datedSessions(sample.conversation, file, `${where}.conversation`, quirks);
  const turnIndex = new Map<string, TurnRecord>();
  const built: { id: string; start: number; turns: Omit<TurnInput, "time">[] }[] = [];
  for (const session of dated) {
    const sessionId = `D${session.number}`;
    const turns: Omit<TurnInput, "time">[] = [];
    session.turns.forEach((rawTurn, index) => {
      const turnWhere = `${where}.conversation.${session.key}[${index}]`;
      const turn = parseWith(turnSchema, rawTurn, file, turnWhere);
      const { id, repairs } = normaliseTurnId(turn.dia_id);
      for (const repair of repairs) quirks.add(`turn dia_ids normalised (${repair})`);
      if (turnIndex.has(id)) throw new InputError(fieldOf(file, `${turnWhere}.dia_id`), `duplicate turn id "${id}"`);
      if (!id.startsWith(`${sessionId}:`)) quirks.add("turns whose dia_id names another session (kept)");
      const image = locomoImage(turn, quirks);
      if (turn.text.trim() === "" && image === undefined) {
        quirks.add("turns without text or image (dropped)");
        return;
      }
      turnIndex.set(id, { session: sessionId, hasImage: image !== undefined });
      turns.push({
        speaker: turn.speaker,
        text: turn.text,
        ...(image ? { images: [image] } : {}),
        metadata: image ? { datasetTurnId: id, datasetImageIds: [id], captionOnlyImage: true } : { datasetTurnId: id },
      });
    });
    if (turns.length === 0) {
      quirks.add("sessions without turns (skipped)");
      continue;
    }
    built.push({ id: sessionId, start: session.start, turns });
  }
  if (built.length === 0) throw new InputError(fieldOf(file, `${where}.conversation`), "no session has any turn");
  const { starts, shifted } = sessionStarts(built.map((session) => ({ ...session, turnCount: session.turns.length })));
  quirks.add("sessions starting before the previous one ended (moved just after it)", shifted);
  const sessions: SessionInput[] = built.map((session, index) => {
    const start = starts[index] ?? session.start;
    return {
      session: session.id,
      time: isoAt(start),
      source: "locomo",
      turns: session.turns.map((turn, turnIndexInSession) => ({
        ...turn,
        time: isoAt(start + turnIndexInSession * turnSpacingMs),
      })),
    };
  });
  const questions = sample.qa.map((rawQuestion, index) =>
    locomoQuestion(rawQuestion, `${sample.sample_id}:q${index + 1}`, turnIndex, file, `${where}.qa[${index}]`, quirks),
  );
  return { id: sample.sample_id, sessions, questions };
}

/** `session_<n>` lists with their `session_<n>_date_time`, ordered by date (then number). */
function datedSessions(
  conversation: Record<string, unknown>,
  file: string,
  where: string,
  quirks: QuirkCounter,
): DatedSession[] {
  const sessions: DatedSession[] = [];
  for (const key of Object.keys(conversation)) {
    const dateOnly = /^session_(\d+)_date_time$/.exec(key);
    if (dateOnly) {
      if (!(`session_${dateOnly[1]}` in conversation)) quirks.add("session dates without a session list (ignored)");
      continue;
    }
    const match = /^session_(\d+)$/.exec(key);
    if (!match) continue;
    const turns = parseWith(z.array(z.unknown()), conversation[key], file, `${where}.${key}`);
    const dateKey = `${key}_date_time`;
    const dateText = conversation[dateKey];
    if (typeof dateText !== "string") {
      throw new InputError(fieldOf(file, `${where}.${dateKey}`), "missing: every session list needs its date");
    }
    const start = parseLocomoDate(dateText);
    if (start === undefined) {
      throw new InputError(
        fieldOf(file, `${where}.${dateKey}`),
        `unrecognised date "${dateText}" (expected e.g. "1:56 pm on 8 May, 2023")`,
      );
    }
    sessions.push({ number: Number(match[1]), key, start, turns });
  }
  if (sessions.length === 0) throw new InputError(fieldOf(file, where), "no session_<n> lists");
  sessions.sort((a, b) => a.number - b.number);
  let latest = Number.NEGATIVE_INFINITY;
  for (const session of sessions) {
    if (session.start < latest) quirks.add("sessions dated before an earlier-numbered session (ordered by date)");
    latest = Math.max(latest, session.start);
  }
  return sessions.sort((a, b) => a.start - b.start || a.number - b.number);
}

function locomoImage(turn: z.infer<typeof turnSchema>, quirks: QuirkCounter): ImageInput | undefined {
  if (turn.blip_caption === undefined && turn.img_url === undefined) return undefined;
  quirks.add("image turns stored as caption-only images (no pixels released upstream)");
  const caption = turn.blip_caption?.trim() ?? "";
  if (caption === "") quirks.add("image turns without blip_caption");
  // blip_caption stands in for a captioner: a deployment captions the pixels itself (image readers); LoCoMo released
  // only BLIP's caption, so the caption is the image's only text. The `query` field is dropped (see turnSchema).
  if (turn.query?.trim())
    quirks.add("image turns whose web-search query was dropped (not something a user's image has)");
  const url = turn.img_url?.[0];
  let unavailable: string;
  if (url === undefined || url.trim() === "") {
    quirks.add("image turns without img_url");
    unavailable = "locomo image without url";
  } else if (url.startsWith("data:")) {
    quirks.add("image turns whose img_url is an inline data: URL (not decoded, kept caption-only)");
    unavailable = `locomo inline data: URL image (${url.length} characters, not decoded)`;
  } else {
    unavailable = url;
  }
  return captionOnlyImage(unavailable, caption);
}

function locomoQuestion(
  raw: unknown,
  id: string,
  turnIndex: ReadonlyMap<string, TurnRecord>,
  file: string,
  where: string,
  quirks: QuirkCounter,
): BenchQuestion {
  const question = parseWith(questionSchema, raw, file, where);
  const category = locomoCategories[question.category];
  if (category === undefined) {
    throw new InputError(fieldOf(file, `${where}.category`), `unknown category ${question.category} (expected 1-5)`);
  }
  let answer: string | undefined;
  if (question.category === 5) {
    if (question.answer !== undefined && question.answer !== null) {
      quirks.add("adversarial questions that also carry an explicit answer (used)");
      answer = String(question.answer);
    } else {
      quirks.add(`adversarial questions answered "${locomoNotMentioned}" (adversarial_answer is the trap)`);
      answer = locomoNotMentioned;
    }
  } else {
    const given = question.answer ?? question.adversarial_answer;
    if (given === undefined || given === null) quirks.add("questions without an answer");
    if (typeof given === "number") quirks.add("numeric answers turned into text");
    answer = given === undefined || given === null ? undefined : String(given);
  }
  const turns: string[] = [];
  for (const evidence of question.evidence) {
    const parts = splitEvidence(evidence);
    if (parts.length > 1) quirks.add("evidence strings holding several ids (split on ';'/whitespace)");
    for (const part of parts) {
      const { id: turnId, repairs } = normaliseTurnId(part);
      for (const repair of repairs) quirks.add(`evidence ids normalised (${repair})`);
      if (!turnIndex.has(turnId)) {
        quirks.add("evidence ids that match no turn (dropped)");
      } else if (turns.includes(turnId)) {
        quirks.add("evidence ids repeated within a question (deduplicated)");
      } else {
        turns.push(turnId);
      }
    }
  }
  if (question.evidence.every((evidence) => evidence.trim() === "")) {
    quirks.add("questions with no evidence (gold left empty)");
  } else if (turns.length === 0) {
    quirks.add("questions whose every evidence id is unresolvable (gold left empty)");
  }
  const sessions = [...new Set(turns.map((turnId) => turnIndex.get(turnId)?.session ?? ""))];
  const images = turns.filter((turnId) => turnIndex.get(turnId)?.hasImage);
  return {
    id,
    text: question.question,
    category,
    ...(answer === undefined ? {} : { answer }),
    gold: { turns, sessions, images },
  };
}
