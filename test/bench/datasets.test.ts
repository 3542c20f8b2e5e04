import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { BenchDataset } from "../../src/bench/dataset.ts";
import { isCaptionOnlyImage } from "../../src/bench/datasets/caption-only-image.ts";
import {
  citedTurns,
  defaultDataDir,
  loadDataset,
  loadLcmp,
  loadLocomo,
  loadMemGallery,
  locomoNotMentioned,
  resolveDataDir,
} from "../../src/bench/datasets/index.ts";
import { parseLocomoDate } from "../../src/bench/datasets/locomo-date.ts";
import { InputError } from "../../src/core/errors.ts";
import { defaultIngestLimits } from "../../src/ingest/limits.ts";
import { parseSessionInput, type SessionInput } from "../../src/ingest/session-input.ts";
import { locomoFixture, writeLcmpFixture, writeLocomoFixture, writeMemGalleryFixture } from "./dataset-fixtures.ts";

/** Every session passes the write path's own validation, caption-only images included. */
function assertSessionValid(session: SessionInput, where: string): void {
  parseSessionInput(session, defaultIngestLimits, `${where}: `);
  for (const turn of session.turns) {
    if (turn.images?.some(isCaptionOnlyImage)) {
      assert.equal(turn.metadata?.captionOnlyImage, true, `${where}: captionOnlyImage flag`);
    }
  }
}

/** The invariants every loaded dataset keeps, whatever its source. */
function assertWellFormed(dataset: BenchDataset): void {
  for (const history of dataset.histories) {
    const turnIds = new Set<string>();
    const imageIds = new Set<string>();
    const sessionIds = new Set<string>();
    let previousTime = Number.NEGATIVE_INFINITY;
    for (const session of history.sessions) {
      assertSessionValid(session, `${history.id}/${session.session}`);
      assert.ok(!sessionIds.has(session.session), `${history.id}: session ${session.session} twice`);
      sessionIds.add(session.session);
      assert.ok(Date.parse(session.time) > previousTime, `${history.id}/${session.session} starts after the last turn`);
      for (const turn of session.turns) {
        const time = Date.parse(turn.time ?? "");
        assert.ok(time > previousTime, `${history.id}/${session.session}: turn times strictly increase`);
        assert.ok(time >= Date.parse(session.time), `${history.id}/${session.session}: turn before its session`);
        previousTime = time;
        const turnId = turn.metadata?.datasetTurnId;
        assert.equal(typeof turnId, "string", `${history.id}/${session.session}: every turn has a datasetTurnId`);
        turnIds.add(turnId as string);
        const turnImageIds = (turn.metadata?.datasetImageIds ?? []) as string[];
        assert.equal(turnImageIds.length, turn.images?.length ?? 0, "one dataset image id per image");
        for (const imageId of turnImageIds) imageIds.add(imageId);
      }
    }
    const questionIds = new Set<string>();
    for (const question of history.questions) {
      assert.ok(!questionIds.has(question.id), `question id ${question.id} twice`);
      questionIds.add(question.id);
      for (const turnId of question.gold.turns) assert.ok(turnIds.has(turnId), `${question.id}: gold turn ${turnId}`);
      for (const session of question.gold.sessions) assert.ok(sessionIds.has(session), `${question.id}: ${session}`);
      for (const imageId of question.gold.images) assert.ok(imageIds.has(imageId), `${question.id}: image ${imageId}`);
      if (question.imagePath !== undefined) assert.ok(path.isAbsolute(question.imagePath));
    }
  }
}

/** The count a note reports (`"<description>: <n>"`), 0 when the loader never saw that quirk. */
function noteCount(dataset: BenchDataset, description: string): number {
  const note = dataset.notes.find((candidate) => candidate.startsWith(`${description}: `));
  return note === undefined ? 0 : Number(note.slice(description.length + 2));
}

async function rejectsWithField(promise: Promise<unknown>, field: RegExp, reason?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof InputError, `expected InputError, got ${String(error)}`);
    assert.match(error.field, field);
    if (reason) assert.match(error.reason, reason);
    return true;
  });
}

let scratch: string;
before(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), "cairn-datasets-"));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function freshDir(name: string): Promise<string> {
  const dir = path.join(scratch, name);
  await rm(dir, { recursive: true, force: true });
  return dir;
}

describe("LoCoMo loader (generated fixture)", () => {
  test("maps conversations, dated sessions, turns, caption-only images and gold", async () => {
    const dataDir = await freshDir("locomo-ok");
    await writeLocomoFixture(dataDir);
    const dataset = await loadLocomo(dataDir);
    assertWellFormed(dataset);
    assert.equal(dataset.name, "locomo");
    assert.deepEqual(
      dataset.histories.map((history) => history.id),
      ["conv-a", "conv-b"],
    );
    const [first, second] = dataset.histories;
    assert.ok(first && second);
    assert.deepEqual(
      first.sessions.map((session) => [session.session, session.time, session.turns.length]),
      [
        ["D1", "2023-05-08T13:56:00.000Z", 3],
        ["D2", "2023-05-09T10:00:00.000Z", 2],
      ],
    );
    assert.deepEqual(first.sessions[0]?.turns[0], {
      speaker: "Ana",
      text: "I adopted a dog named Rex last week.",
      metadata: { datasetTurnId: "D1:1" },
      time: "2023-05-08T13:56:00.000Z",
    });
    // The fixture's image carries LoCoMo's web-search `query` ("red bicycle"): it must not reach the write path.
    assert.deepEqual(first.sessions[0]?.turns[1], {
      speaker: "Ben",
      text: "Look at my new bike!",
      images: [{ unavailable: "https://example.invalid/bike.jpg", caption: "a photo of a red bicycle" }],
      metadata: { datasetTurnId: "D1:2", datasetImageIds: ["D1:2"], captionOnlyImage: true },
      time: "2023-05-08T13:56:01.000Z",
    });
    assert.deepEqual(first.sessions[1]?.turns[0]?.images, [
      { unavailable: "locomo image without url", caption: "a photo of a lake at dusk" },
    ]);
    // Dated before session 1, so replayed first.
    assert.deepEqual(
      second.sessions.map((session) => session.session),
      ["D2", "D1"],
    );

    const byId = new Map(first.questions.map((question) => [question.id, question]));
    assert.deepEqual(
      first.questions.map((question) => question.category),
      ["multi-hop", "temporal", "single-hop", "open-domain", "adversarial", "single-hop"],
    );
    assert.deepEqual(byId.get("conv-a:q1")?.gold, { turns: ["D1:1", "D2:2"], sessions: ["D1", "D2"], images: [] });
    assert.deepEqual(byId.get("conv-a:q2")?.gold, { turns: ["D1:2"], sessions: ["D1"], images: ["D1:2"] });
    assert.deepEqual(byId.get("conv-a:q3")?.gold, { turns: ["D1:3"], sessions: ["D1"], images: [] });
    assert.deepEqual(byId.get("conv-a:q4")?.gold, { turns: [], sessions: [], images: [] });
    assert.deepEqual(byId.get("conv-a:q5")?.gold, { turns: ["D2:1"], sessions: ["D2"], images: ["D2:1"] });
    assert.equal(byId.get("conv-a:q5")?.answer, locomoNotMentioned);
    assert.equal(byId.get("conv-a:q6")?.answer, "2023");
    assert.deepEqual(byId.get("conv-a:q6")?.gold.turns, ["D1:1", "D1:3"]);
    assert.equal(byId.get("conv-a:q1")?.text, "What did Ana adopt and where does it like to go?");

    assert.equal(noteCount(dataset, "session dates without a session list (ignored)"), 1);
    assert.equal(noteCount(dataset, "evidence strings holding several ids (split on ';'/whitespace)"), 2);
    assert.equal(noteCount(dataset, "evidence ids normalised (zero-padded)"), 1);
    assert.equal(noteCount(dataset, "evidence ids normalised (stray colon)"), 1);
    assert.equal(noteCount(dataset, "evidence ids that match no turn (dropped)"), 1);
    assert.equal(noteCount(dataset, "questions with no evidence (gold left empty)"), 1);
    assert.equal(noteCount(dataset, "image turns stored as caption-only images (no pixels released upstream)"), 2);
    assert.equal(noteCount(dataset, "image turns without img_url"), 1);
    assert.equal(
      noteCount(dataset, "image turns whose web-search query was dropped (not something a user's image has)"),
      1,
    );
    assert.equal(noteCount(dataset, "numeric answers turned into text"), 1);
    assert.equal(noteCount(dataset, "sessions dated before an earlier-numbered session (ordered by date)"), 1);
  });

  test("limit, and a data folder that is the dataset's own folder", async () => {
    const dataDir = await freshDir("locomo-limit");
    await writeLocomoFixture(dataDir);
    const limited = await loadLocomo(dataDir, { limit: 1 });
    assert.deepEqual(
      limited.histories.map((history) => history.id),
      ["conv-a"],
    );
    const direct = await loadLocomo(path.join(dataDir, "locomo"), { limit: 1 });
    assert.deepEqual(direct.histories, limited.histories);
    await rejectsWithField(loadLocomo(dataDir, { limit: 0 }), /^limit$/);
  });

  test("malformed data is an InputError naming the file and the field", async () => {
    const dataDir = await freshDir("locomo-bad");
    const file = /locomo[/\\]locomo10\.json: /;
    const broken = (edit: (data: typeof locomoFixture) => void) => {
      const data = structuredClone(locomoFixture);
      edit(data);
      return data;
    };
    await writeLocomoFixture(
      dataDir,
      broken((data) => {
        (data[0]?.qa[0] as Record<string, unknown>).evidence = "D1:1";
      }),
    );
    await rejectsWithField(loadLocomo(dataDir), new RegExp(`${file.source}\\[0\\]\\.qa\\[0\\]\\.evidence$`), /array/);
    await writeLocomoFixture(
      dataDir,
      broken((data) => {
        (data[0]?.conversation as Record<string, unknown>).session_2_date_time = "sometime in spring";
      }),
    );
    await rejectsWithField(
      loadLocomo(dataDir),
      /\[0\]\.conversation\.session_2_date_time$/,
      /unrecognised date "sometime in spring"/,
    );
    await writeLocomoFixture(
      dataDir,
      broken((data) => {
        (data[1]?.qa[0] as Record<string, unknown>).category = 7;
      }),
    );
    await rejectsWithField(loadLocomo(dataDir), /\[1\]\.qa\[0\]\.category$/, /unknown category 7/);
    await writeLocomoFixture(
      dataDir,
      broken((data) => {
        (data[0]?.conversation.session_1[0] as Record<string, unknown>).text = 42;
      }),
    );
    await rejectsWithField(loadLocomo(dataDir), /\[0\]\.conversation\.session_1\[0\]\.text$/);
    await writeFile(path.join(dataDir, "locomo", "locomo10.json"), "[{ not json");
    await rejectsWithField(loadLocomo(dataDir), /locomo10\.json$/, /not valid JSON/);
    await rejectsWithField(loadLocomo(path.join(dataDir, "nowhere")), /locomo10\.json$/, /not found/);
  });

  test("dates: LoCoMo's style and the variants a re-export might use", () => {
    const iso = (text: string) => {
      const value = parseLocomoDate(text);
      return value === undefined ? undefined : new Date(value).toISOString();
    };
    assert.equal(iso("1:56 pm on 8 May, 2023"), "2023-05-08T13:56:00.000Z");
    assert.equal(iso("12:06 am on 11 November, 2022"), "2022-11-11T00:06:00.000Z");
    assert.equal(iso("12:30 pm on 1 Jan, 2023"), "2023-01-01T12:30:00.000Z");
    assert.equal(iso("9:00 a.m. on 3rd Sept 2021"), "2021-09-03T09:00:00.000Z");
    assert.equal(iso("May 8, 2023, 1:56 PM"), "2023-05-08T13:56:00.000Z");
    assert.equal(iso("13:56 on 8 May 2023"), "2023-05-08T13:56:00.000Z");
    assert.equal(iso("8 May 2023"), "2023-05-08T00:00:00.000Z");
    assert.equal(iso("2023-05-08T10:00:00Z"), "2023-05-08T10:00:00.000Z");
    assert.equal(iso("1:56 pm on 31 February, 2023"), undefined);
    assert.equal(iso("13:56 pm on 8 May, 2023"), undefined);
    assert.equal(iso("someday"), undefined);
  });
});

describe("Mem-Gallery loader (generated fixture)", () => {
  test("maps rounds to user and assistant turns, caption-only images and gold per task type", async () => {
    const dataDir = await freshDir("mem-gallery-ok");
    await writeMemGalleryFixture(dataDir);
    const dataset = await loadMemGallery(dataDir);
    assertWellFormed(dataset);
    assert.equal(dataset.name, "mem-gallery");
    assert.deepEqual(
      dataset.histories.map((history) => history.id),
      ["Baking_Life", "Greetings"],
    );
    const history = dataset.histories[0];
    assert.ok(history);
    assert.deepEqual(
      history.sessions.map((session) => [session.session, session.time, session.turns.length]),
      [
        ["D1", "2024-06-17T00:00:00.000Z", 6],
        // Same calendar date as D1: starts right after D1's last turn.
        ["D2", "2024-06-17T00:00:06.000Z", 4],
      ],
    );
    assert.deepEqual(history.sessions[0]?.turns.slice(2, 4), [
      {
        speaker: "Julia Park",
        role: "user",
        text: "Here is my first loaf.",
        images: [
          {
            unavailable: "../image/Baking/D1_IMG_001.jpg",
            caption: "A round sourdough loaf with a dark crust on a wooden board.",
          },
        ],
        metadata: { datasetTurnId: "D1:2", datasetImageIds: ["D1:IMG_001"], captionOnlyImage: true },
        time: "2024-06-17T00:00:02.000Z",
      },
      {
        speaker: "assistant",
        role: "assistant",
        text: "It has a great crust.",
        metadata: { datasetTurnId: "D1:2" },
        time: "2024-06-17T00:00:03.000Z",
      },
    ]);
    assert.deepEqual(history.sessions[0]?.turns[4]?.metadata?.datasetImageIds, ["D1:IMG_002", "D1:IMG_003"]);

    const [vs, vsSeveral, vsCount, ar, ttl, fr, mr] = history.questions;
    assert.deepEqual(
      history.questions.map((question) => question.category),
      ["VS", "VS", "VS", "AR", "TTL", "FR", "MR"],
    );
    assert.deepEqual(vs?.gold, { turns: ["D1:2"], sessions: ["D1"], images: ["D1:IMG_001"] });
    // D1:IMG_2 is D1:IMG_002; D1:IMG_009 does not exist.
    assert.deepEqual(vsSeveral?.gold.images, ["D1:IMG_002", "D1:IMG_003"]);
    // An answer that names no image ("2"): the clue round's images.
    assert.deepEqual(vsCount?.gold, { turns: ["D1:3"], sessions: ["D1"], images: ["D1:IMG_002", "D1:IMG_003"] });
    assert.deepEqual(ar?.gold, { turns: [], sessions: [], images: [] });
    assert.equal(ar?.answer, "Not mentioned.");
    assert.equal(ttl?.text, "What is in the picture?\n[query image: An oven thermometer showing 250 degrees.]");
    assert.equal(ttl?.imagePath, undefined);
    assert.deepEqual(ttl?.gold, { turns: ["D2:1"], sessions: ["D2"], images: [] });
    // No session_id list: the clue rounds' sessions.
    assert.deepEqual(fr?.gold, { turns: ["D1:1", "D2:2"], sessions: ["D1", "D2"], images: [] });
    assert.deepEqual(mr?.gold, { turns: ["D1:1"], sessions: ["D1"], images: [] });
    assert.equal(history.questions[0]?.id, "Baking_Life:q1");

    assert.equal(noteCount(dataset, "images stored as caption-only images (Git LFS pointers upstream)"), 3);
    assert.equal(noteCount(dataset, "sessions sharing a date with the previous one (started just after it)"), 1);
    assert.equal(noteCount(dataset, "VS answer image ids that match no image (dropped)"), 1);
    assert.equal(noteCount(dataset, "VS answers naming no known image (gold images taken from the clue rounds)"), 1);
    assert.equal(noteCount(dataset, "questions with an empty clue (all gold left empty; session_id not used)"), 1);
    assert.equal(noteCount(dataset, "questions without a session_id list (sessions taken from the clue rounds)"), 1);
    assert.equal(noteCount(dataset, "clue strings holding several round ids (split)"), 1);
    assert.equal(noteCount(dataset, "clue ids that match no round (dropped)"), 1);
    assert.equal(
      noteCount(dataset, "query images given as their caption appended to the question (no pixels upstream)"),
      1,
    );

    const limited = await loadMemGallery(dataDir, { limit: 1 });
    assert.deepEqual(
      limited.histories.map((entry) => entry.id),
      ["Baking_Life"],
    );
  });

  test("malformed data is an InputError naming the file and the field", async () => {
    const dataDir = await freshDir("mem-gallery-bad");
    await writeMemGalleryFixture(dataDir);
    const file = path.join(dataDir, "mem-gallery", "dialog", "Baking_Life.json");
    await writeFile(
      file,
      JSON.stringify({
        character_profile: { name: "X" },
        multi_session_dialogues: [{ session_id: "D1", date: "June 17", dialogues: [] }],
        "human-annotated QAs": [],
      }),
    );
    await rejectsWithField(
      loadMemGallery(dataDir),
      /Baking_Life\.json: multi_session_dialogues\[0\]\.date$/,
      /not a YYYY-MM-DD date/,
    );
    await writeFile(
      file,
      JSON.stringify({
        multi_session_dialogues: [
          {
            session_id: "D1",
            date: "2024-01-01",
            dialogues: [{ round: "D1:1", user: "x", assistant: "y", image_id: ["D1:IMG_001"], image_caption: [] }],
          },
        ],
        "human-annotated QAs": [],
      }),
    );
    await rejectsWithField(loadMemGallery(dataDir), /multi_session_dialogues\[0\]\.dialogues\[0\]\.image_caption$/);
    await writeFile(file, JSON.stringify({ multi_session_dialogues: [] }));
    await rejectsWithField(loadMemGallery(dataDir), /Baking_Life\.json: multi_session_dialogues$/);
  });
});

describe("LCMP loader (generated fixture)", () => {
  test("pools every concept into one history with real image paths and derived gold", async () => {
    const dataDir = await freshDir("lcmp-ok");
    await writeLcmpFixture(dataDir);
    const dataset = await loadLcmp(dataDir);
    assertWellFormed(dataset);
    assert.equal(dataset.name, "lcmp");
    assert.equal(dataset.histories.length, 1);
    const history = dataset.histories[0];
    assert.ok(history);
    const baseDir = path.join(dataDir, "lcmp");
    assert.equal(history.baseDir, baseDir);
    assert.deepEqual(
      history.sessions.map((session) => [session.session, session.time, session.turns.length]),
      [
        ["mug_1", "2025-01-01T00:00:00.000Z", 6],
        ["cat_1", "2025-01-02T00:00:00.000Z", 2],
      ],
    );
    assert.deepEqual(history.sessions[0]?.turns.slice(0, 2), [
      {
        role: "user",
        text: "This is my favourite mug, I call it Big Red. [IMAGE] My sister gave it to me.",
        time: "2025-01-01T00:00:00.000Z",
        images: [{ path: "concept_obj/mug_1/img/turn_1_big_red.png" }],
        metadata: { datasetTurnId: "mug_1:1", datasetImageIds: ["mug_1:turn_1_big_red"], datasetLogType: "knowledge" },
      },
      {
        role: "assistant",
        text: "Noted: Big Red is a gift from your sister.",
        time: "2025-01-01T00:00:01.000Z",
        metadata: { datasetTurnId: "mug_1:1" },
      },
    ]);
    for (const session of history.sessions) {
      for (const turn of session.turns) {
        for (const image of turn.images ?? []) {
          assert.ok("path" in image && existsSync(path.join(baseDir, image.path)), "history images exist");
        }
      }
    }

    const byId = new Map(history.questions.map((question) => [question.id, question]));
    assert.deepEqual([...byId.keys()], ["mug_1:easy:1", "mug_1:easy:2", "mug_1:hard:1", "cat_1:easy:1"]);
    const paired = byId.get("mug_1:easy:1");
    assert.equal(paired?.imagePath, path.join(baseDir, "concept_obj", "mug_1", "img", "sq_1_gift.png"));
    assert.ok(paired?.imagePath && existsSync(paired.imagePath));
    assert.equal(paired?.category, "Long Term");
    assert.equal(paired?.answer, "Your sister gave it to you.");
    // Its image_prompt equals history turn 1's: an image-to-image pair.
    assert.deepEqual(paired?.gold, { turns: ["mug_1:1"], sessions: ["mug_1"], images: ["mug_1:turn_1_big_red"] });
    assert.deepEqual(byId.get("mug_1:easy:2")?.gold, { turns: [], sessions: ["mug_1"], images: [] });
    // Cited in prose as "Turn 1, turn 2", "turns 1 & 2", "Turn 3" and "just like in turn 3"; Turn 99 does not exist.
    assert.deepEqual(byId.get("mug_1:hard:1")?.gold, {
      turns: ["mug_1:1", "mug_1:2", "mug_1:3"],
      sessions: ["mug_1"],
      images: ["mug_1:turn_1_big_red", "mug_1:turn_3_chip"],
    });
    assert.deepEqual(byId.get("cat_1:easy:1")?.gold, { turns: [], sessions: ["cat_1"], images: [] });

    assert.equal(noteCount(dataset, "history images (real PNG files)"), 3);
    assert.equal(noteCount(dataset, "questions with turn-level gold"), 2);
    assert.equal(noteCount(dataset, "questions with concept-level gold only"), 2);
    assert.equal(noteCount(dataset, "questions with turn gold from an equal image_prompt (image-to-image pairs)"), 1);
    assert.equal(noteCount(dataset, "questions with turn gold from turns cited in prose"), 1);
    assert.equal(noteCount(dataset, "turn numbers cited in prose that do not exist (dropped)"), 1);
    assert.equal(noteCount(dataset, "questions whose MCQ answer is not one of its options"), 1);
    assert.equal(noteCount(dataset, "concepts without hard_question.yaml"), 1);

    const limited = await loadLcmp(dataDir, { limit: 1 });
    assert.deepEqual(
      limited.histories[0]?.sessions.map((session) => session.session),
      ["mug_1"],
    );
  });

  test("malformed data is an InputError naming the file and the field or line", async () => {
    const dataDir = await freshDir("lcmp-bad");
    await writeLcmpFixture(dataDir, { catEasy: "- id: 1\n  type: Long Term\n  question: Name?\n   options: oops\n" });
    await rejectsWithField(loadLcmp(dataDir), /cat_1[/\\]easy_question\.yaml: line \d+$/, /not valid YAML/);
    await writeLcmpFixture(dataDir, { catEasy: "- id: 1\n  type: Long Term\n" });
    await rejectsWithField(loadLcmp(dataDir), /cat_1[/\\]easy_question\.yaml: \[0\]\.question$/, /Required/);
    await writeLcmpFixture(dataDir);
    await unlink(path.join(dataDir, "lcmp", "concept_obj", "mug_1", "img", "turn_3_chip.png"));
    await rejectsWithField(
      loadLcmp(dataDir),
      /mug_1[/\\]history\.yaml: \[2\]\.image_id$/,
      /turn_3_chip\.png not found/,
    );
  });

  test("turn citations in prose", () => {
    assert.deepEqual(citedTurns("long-term information from Turn 1, Turn 5"), [1, 5]);
    assert.deepEqual(citedTurns("short-term events in turns 9, 10, 11"), [9, 10, 11]);
    assert.deepEqual(citedTurns("(turn 3 & 9) and Turn 4 and Turn 6"), [3, 9, 4, 6]);
    assert.deepEqual(citedTurns("from Turns 4-6"), [4, 5, 6]);
    assert.deepEqual(citedTurns("nothing to see, she returns 30 soon"), []);
  });
});

describe("dataset selection", () => {
  test("loadDataset dispatches by name and refuses unknown names", async () => {
    const dataDir = await freshDir("dispatch");
    await writeLocomoFixture(dataDir);
    await writeMemGalleryFixture(dataDir);
    await writeLcmpFixture(dataDir);
    assert.equal((await loadDataset("locomo", dataDir, { limit: 1 })).histories.length, 1);
    assert.equal((await loadDataset("mem-gallery", dataDir)).name, "mem-gallery");
    assert.equal((await loadDataset("lcmp", dataDir)).name, "lcmp");
    await rejectsWithField(loadDataset("dreambooth" as "lcmp", dataDir), /^dataset$/, /unknown dataset "dreambooth"/);
  });

  test("resolveDataDir: flag, then CAIRN_DATA, then ../shared/data next to the repository", async () => {
    const dataDir = await freshDir("resolve");
    await writeLocomoFixture(dataDir);
    const other = path.join(dataDir, "locomo");
    assert.equal(resolveDataDir(dataDir, {}), dataDir);
    assert.equal(resolveDataDir(undefined, { CAIRN_DATA: dataDir }), dataDir);
    assert.equal(resolveDataDir(other, { CAIRN_DATA: dataDir }), other);
    assert.throws(
      () => resolveDataDir(path.join(dataDir, "missing"), {}),
      (error: unknown) => error instanceof InputError && error.field === "--data",
    );
    assert.throws(
      () => resolveDataDir(undefined, { CAIRN_DATA: path.join(dataDir, "missing") }),
      (error: unknown) => error instanceof InputError && error.field === "CAIRN_DATA",
    );
    const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
    assert.equal(defaultDataDir, path.resolve(repositoryRoot, "../shared/data"));
    if (existsSync(defaultDataDir)) {
      assert.equal(resolveDataDir(undefined, {}), defaultDataDir);
    } else {
      assert.throws(
        () => resolveDataDir(undefined, {}),
        (error: unknown) => error instanceof InputError && /CAIRN_DATA/.test(error.reason),
      );
    }
  });
});

/** The real third-party data, when this machine has it (CAIRN_DATA, else ../shared/data). */
const realDataDir = process.env.CAIRN_DATA?.trim() ? path.resolve(process.env.CAIRN_DATA) : defaultDataDir;
const absentReason = `real data not found at ${realDataDir} (set CAIRN_DATA to the folder holding locomo/, mem-gallery/, lcmp/)`;

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

describe("real datasets (facts from each SOURCE.md)", () => {
  test("LoCoMo", async (t) => {
    if (!existsSync(path.join(realDataDir, "locomo", "locomo10.json"))) {
      t.skip(absentReason);
      return;
    }
    const dataset = await loadLocomo(realDataDir);
    assertWellFormed(dataset);
    const sessions = dataset.histories.flatMap((history) => history.sessions);
    const turns = sessions.flatMap((session) => session.turns);
    const questions = dataset.histories.flatMap((history) => history.questions);
    assert.equal(dataset.histories.length, 10);
    assert.deepEqual(
      dataset.histories.map((history) => history.id),
      ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47", "conv-48", "conv-49", "conv-50"],
    );
    assert.equal(sessions.length, 272);
    assert.equal(turns.length, 5_882);
    assert.equal(questions.length, 1_986);
    assert.deepEqual(
      countBy(questions, (question) => question.category),
      { "multi-hop": 282, temporal: 321, "open-domain": 96, "single-hop": 841, adversarial: 446 },
    );
    assert.equal(turns.filter((turn) => turn.images?.length).length, 1_226);
    assert.equal(noteCount(dataset, "image turns without img_url"), 316);
    assert.equal(noteCount(dataset, "session dates without a session list (ignored)"), 16);
    assert.equal(noteCount(dataset, "questions with no evidence (gold left empty)"), 4);
    assert.equal(questions.filter((question) => question.gold.turns.length === 0).length, 4);
    assert.equal(noteCount(dataset, "evidence strings holding several ids (split on ';'/whitespace)"), 4);
    // D10:19 and D in conv-42, D4:36 in conv-47; D30:05 and D:11:26 are repaired instead.
    assert.equal(noteCount(dataset, "evidence ids that match no turn (dropped)"), 3);
    assert.equal(noteCount(dataset, "evidence ids normalised (zero-padded)"), 1);
    assert.equal(noteCount(dataset, "evidence ids normalised (stray colon)"), 1);
    // SOURCE.md counts 860 on the raw ids; the repaired D30:5 is an image turn too.
    assert.equal(questions.filter((question) => question.gold.images.length > 0).length, 861);
    assert.equal(questions.filter((question) => question.answer === locomoNotMentioned).length, 444);
  });

  test("Mem-Gallery", async (t) => {
    if (!existsSync(path.join(realDataDir, "mem-gallery", "dialog"))) {
      t.skip(absentReason);
      return;
    }
    const dataset = await loadMemGallery(realDataDir);
    assertWellFormed(dataset);
    const sessions = dataset.histories.flatMap((history) => history.sessions);
    const turns = sessions.flatMap((session) => session.turns);
    const questions = dataset.histories.flatMap((history) => history.questions);
    assert.equal(dataset.histories.length, 14);
    for (const history of dataset.histories) {
      assert.ok(history.sessions.length >= 9 && history.sessions.length <= 18, `${history.id}: 9-18 sessions`);
    }
    assert.equal(sessions.length, 169);
    assert.equal(turns.length, 2 * 2_734);
    assert.equal(
      turns.reduce((sum, turn) => sum + (turn.images?.length ?? 0), 0),
      704,
    );
    assert.equal(questions.length, 1_196);
    // Of the 14 development files (SOURCE.md's per-type counts cover all 20).
    assert.deepEqual(
      countBy(questions, (question) => question.category),
      { TTL: 233, VS: 212, FR: 158, MR: 144, AR: 128, VR: 122, TR: 87, KR: 58, CD: 54 },
    );
    assert.equal(
      questions.reduce((sum, question) => sum + question.gold.turns.length, 0),
      2_720,
    );
    assert.equal(noteCount(dataset, "clue ids that match no round (dropped)"), 0);
    assert.equal(questions.filter((question) => question.gold.turns.length === 0).length, 128);
    assert.ok(questions.filter((question) => question.gold.turns.length === 0).every((q) => q.category === "AR"));
    assert.equal(questions.filter((question) => question.text.includes("\n[query image: ")).length, 331);
    assert.equal(questions.filter((question) => question.gold.images.length > 0).length, 790);
    assert.equal(noteCount(dataset, "VS answers naming no known image (gold images taken from the clue rounds)"), 1);
  });

  test("LCMP", async (t) => {
    if (!existsSync(path.join(realDataDir, "lcmp", "concept_obj"))) {
      t.skip(absentReason);
      return;
    }
    const dataset = await loadLcmp(realDataDir);
    assertWellFormed(dataset);
    assert.equal(dataset.histories.length, 1);
    const history = dataset.histories[0];
    assert.ok(history);
    assert.equal(history.sessions.length, 30);
    const turns = history.sessions.flatMap((session) => session.turns);
    assert.equal(new Set(turns.map((turn) => turn.metadata?.datasetTurnId)).size, 400);
    assert.equal(
      turns.reduce((sum, turn) => sum + (turn.images?.length ?? 0), 0),
      253,
    );
    assert.equal(history.questions.length, 420);
    assert.equal(history.questions.filter((question) => question.id.includes(":easy:")).length, 240);
    assert.equal(history.questions.filter((question) => question.id.includes(":hard:")).length, 180);
    const categories = countBy(history.questions, (question) => question.category);
    assert.equal(categories["Long Term"], 135);
    assert.equal(categories["Short Term"], 105);
    assert.ok(history.questions.every((question) => question.imagePath && existsSync(question.imagePath)));
    assert.ok(history.questions.every((question) => question.gold.sessions.length === 1));
    assert.equal(noteCount(dataset, "questions with turn gold from an equal image_prompt (image-to-image pairs)"), 73);
    // SOURCE.md's 102 counts only capitalised "Turn N" in ideal answers and key points; lower-case "turn N" (16 more)
    // and citations in the question's own image prompt ("just like in turn 9", 4 more) cite turns as well.
    assert.equal(noteCount(dataset, "questions with turn-level gold"), 122);
    assert.equal(history.questions.filter((question) => question.gold.turns.length > 0).length, 122);
    assert.equal(noteCount(dataset, "turn numbers cited in prose that do not exist (dropped)"), 0);
  });
});
