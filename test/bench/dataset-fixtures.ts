import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

/**
 * Small datasets in each upstream format, written to a temp folder by the tests. Each reproduces the quirks the
 * real files have (several ids in one evidence string, unresolvable and zero-padded ids, empty gold, a session date
 * without a session list, same-date sessions, images without pixels, turn citations in prose...).
 */

/** A valid 1x1 PNG. */
const onePixelPng = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

export const locomoFixture = [
  {
    sample_id: "conv-a",
    conversation: {
      speaker_a: "Ana",
      speaker_b: "Ben",
      session_1_date_time: "1:56 pm on 8 May, 2023",
      session_1: [
        { speaker: "Ana", dia_id: "D1:1", text: "I adopted a dog named Rex last week." },
        {
          speaker: "Ben",
          dia_id: "D1:2",
          text: "Look at my new bike!",
          img_url: ["https://example.invalid/bike.jpg"],
          blip_caption: "a photo of a red bicycle",
          query: "red bicycle",
          "re-download": true,
        },
        { speaker: "Ana", dia_id: "D1:3", text: "Nice! I am painting again too." },
      ],
      session_2_date_time: "10:00 am on 9 May, 2023",
      session_2: [
        { speaker: "Ben", dia_id: "D2:1", text: "Here is the lake.", blip_caption: "a photo of a lake at dusk" },
        { speaker: "Ana", dia_id: "D2:2", text: "Rex loves lakes." },
      ],
      // A date without its session list, as 16 of LoCoMo's are.
      session_3_date_time: "12:06 am on 1 June, 2023",
    },
    qa: [
      {
        question: "What did Ana adopt and where does it like to go?",
        answer: "a dog; lakes",
        evidence: ["D1:1; D2:2"],
        category: 1,
      },
      { question: "When did Ben show his bike?", answer: "8 May 2023", evidence: ["D1:02"], category: 2 },
      { question: "What is Ana doing again?", answer: "painting", evidence: ["D9:9", "D1:3"], category: 4 },
      { question: "Would Ana like cats?", answer: "probably", evidence: [], category: 3 },
      {
        question: "What did Ana photograph at the lake?",
        adversarial_answer: "a lake",
        evidence: ["D:2:1"],
        category: 5,
      },
      { question: "Which year?", answer: 2023, evidence: ["D1:1 D1:3"], category: 4 },
    ],
    observation: {},
    session_summary: {},
    event_summary: {},
  },
  {
    sample_id: "conv-b",
    conversation: {
      speaker_a: "Cy",
      speaker_b: "Di",
      session_1_date_time: "9:00 am on 3 March, 2022",
      session_1: [{ speaker: "Cy", dia_id: "D1:1", text: "Hello." }],
      // Numbered after session 1 but dated before it: replayed first.
      session_2_date_time: "9:00 am on 1 March, 2022",
      session_2: [{ speaker: "Di", dia_id: "D2:1", text: "Earlier hello." }],
    },
    qa: [{ question: "Who said hello?", answer: "Cy", evidence: ["D1:1"], category: 4 }],
  },
];

export const memGalleryFixture = {
  character_profile: {
    name: "Julia Park",
    persona_summary: "A baker.",
    traits: ["curious"],
    conversation_style: "brief",
  },
  multi_session_dialogues: [
    {
      session_id: "D1",
      date: "2024-06-17",
      dialogues: [
        { round: "D1:1", user: "I started baking sourdough.", assistant: "Lovely, sourdough takes patience." },
        {
          round: "D1:2",
          user: "Here is my first loaf.",
          assistant: "It has a great crust.",
          image_id: ["D1:IMG_001"],
          input_image: ["../image/Baking/D1_IMG_001.jpg"],
          image_caption: ["A round sourdough loaf with a dark crust on a wooden board."],
        },
        {
          round: "D1:3",
          user: "And two cakes.",
          assistant: "Both look delicious.",
          image_id: ["D1:IMG_002", "D1:IMG_003"],
          input_image: ["../image/Baking/D1_IMG_002.jpg", "../image/Baking/D1_IMG_003.jpg"],
          image_caption: ["A chocolate layer cake.", "A lemon drizzle cake on a plate."],
        },
      ],
    },
    {
      // Same calendar date as D1: replayed right after it.
      session_id: "D2",
      date: "2024-06-17",
      dialogues: [
        { round: "D2:1", user: "My oven runs hot.", assistant: "Try lowering it by 10 degrees." },
        { round: "D2:2", user: "The starter is called Bubbles.", assistant: "A fine name." },
      ],
    },
  ],
  "human-annotated QAs": [
    { point: "VS", question: "Which image shows bread?", answer: "D1:IMG_001", session_id: ["D1"], clue: ["D1:2"] },
    {
      point: "VS",
      question: "Which images show cakes?",
      answer: "D1:IMG_2, D1:IMG_003, D1:IMG_009",
      session_id: ["D1"],
      clue: ["D1:3"],
    },
    { point: "VS", question: "How many cakes were shown?", answer: "2", session_id: ["D1"], clue: ["D1:3"] },
    { point: "AR", question: "Did Julia mention croissants?", answer: "Not mentioned.", session_id: ["D1"], clue: [] },
    {
      point: "TTL",
      question: "What is in the picture?",
      question_image: "../image/Baking/QA_IMG_001.png",
      image_caption: "An oven thermometer showing 250 degrees.",
      answer: "an oven thermometer",
      session_id: ["D2"],
      clue: ["D2:1"],
    },
    {
      point: "FR",
      question: "What is the starter called and what was baked first?",
      answer: "Bubbles; sourdough",
      clue: ["D1:1", "D2:2"],
    },
    { point: "MR", question: "What did Julia bake?", answer: "sourdough", session_id: ["D1"], clue: ["D1:1, D1:9"] },
  ],
};

export const memGallerySecondFixture = {
  character_profile: { name: "Omar" },
  multi_session_dialogues: [
    { session_id: "D1", date: "2024-01-02", dialogues: [{ round: "D1:1", user: "Hi.", assistant: "Hello." }] },
  ],
  "human-annotated QAs": [
    { point: "FR", question: "Who greeted?", answer: "Omar", session_id: ["D1"], clue: ["D1:1"] },
  ],
};

/** PyYAML's dump style: indentless sequences, plain scalars folded over lines, single quotes when needed. */
const mugHistory = `- turn: 1
  log_type: knowledge
  user_input: This is my favourite mug, I call it Big Red. [IMAGE] My sister gave it
    to me.
  assistant_response: 'Noted: Big Red is a gift from your sister.'
  image_prompt: A red ceramic mug on a wooden desk.
  image_id: turn_1_big_red
- turn: 2
  log_type: knowledge
  user_input: I only drink green tea from it.
  assistant_response: Got it, green tea only.
  image_prompt: null
  image_id: null
- turn: 3
  log_type: event
  user_input: Oh no, I chipped it this morning. [IMAGE]
  assistant_response: I'm sorry to hear that Big Red got chipped.
  image_prompt: A close-up of a small chip on the rim of a red mug.
  image_id: turn_3_chip
`;

/** The hand-written style: quoted scalars, indented sequences, nested evaluation criteria. */
const mugEasy = `- id: 1
  type: Long Term
  question: "Look at this [IMAGE]. Who gave me this mug again?"
  image_prompt: "A red ceramic mug on a wooden desk."
  evaluation_criteria:
    ideal_answer: "Your sister gave it to you."
    key_points:
      - "correctly mention the sister."
  options:
    - "Your sister"
    - "Your boss"
  answer: "Your sister"
  image_id: sq_1_gift

- id: 2
  type: Short Term
  question: "What happened to it recently? [IMAGE]"
  image_prompt: "The mug on a shelf."
  evaluation_criteria:
    ideal_answer: "You chipped it."
    key_points:
      - "mention the chip."
  options:
    - "It was chipped."
    - "It was lost."
  answer: "It broke in half."
  image_id: sq_2_recent
`;

const mugHard = `- id: 1
  type: Causal Inference
  question: "Should I throw it away? [IMAGE]"
  image_prompt: "A chipped mug next to a new mug, just like in turn 3."
  evaluation_criteria:
    ideal_answer: "Keep it: it was a gift (long-term information from Turn 1, turn 2)."
    key_points:
    - Its origin as a gift matters (long-term knowledge from turns 1 & 2).
    - The chip is recent (short-term event from Turn 3); Turn 99 does not exist.
  options:
  - Keep it
  - Throw it away
  answer: Keep it
  image_id: cq_1_keep
`;

const catHistory = `- turn: 1
  log_type: knowledge
  user_input: "Meet Smokey, my grey cat. [IMAGE]"
  assistant_response: "Hello Smokey!"
  image_prompt: "A grey cat on a sofa."
  image_id: turn_1_smokey
`;

const catEasy = `- id: 1
  type: Long Term
  question: "What is his name? [IMAGE]"
  image_prompt: "A grey cat asleep in the sun."
  evaluation_criteria:
    ideal_answer: "Smokey."
    key_points: []
  options:
    - Smokey
    - Rex
  answer: Smokey
  image_id: sq_1_name
`;

export async function writeLocomoFixture(dataDir: string, data: unknown = locomoFixture): Promise<void> {
  await mkdir(path.join(dataDir, "locomo"), { recursive: true });
  await writeFile(path.join(dataDir, "locomo", "locomo10.json"), JSON.stringify(data));
}

export async function writeMemGalleryFixture(dataDir: string): Promise<void> {
  const dialog = path.join(dataDir, "mem-gallery", "dialog");
  await mkdir(dialog, { recursive: true });
  await writeFile(path.join(dialog, "Baking_Life.json"), JSON.stringify(memGalleryFixture));
  await writeFile(path.join(dialog, "Greetings.json"), JSON.stringify(memGallerySecondFixture));
  await writeFile(path.join(dialog, "README.txt"), "not a dialog");
}

export async function writeLcmpFixture(dataDir: string, options: { catEasy?: string } = {}): Promise<void> {
  const root = path.join(dataDir, "lcmp");
  const mug = path.join(root, "concept_obj", "mug_1");
  const cat = path.join(root, "concept_pet", "cat_1");
  for (const folder of [mug, cat]) await mkdir(path.join(folder, "img"), { recursive: true });
  await writeFile(path.join(mug, "history.yaml"), mugHistory);
  await writeFile(path.join(mug, "easy_question.yaml"), mugEasy);
  await writeFile(path.join(mug, "hard_question.yaml"), mugHard);
  await writeFile(path.join(mug, "profile.yaml"), "secret: never read\n\tbroken: on purpose\n");
  for (const image of ["turn_1_big_red", "turn_3_chip", "sq_1_gift", "sq_2_recent", "cq_1_keep"]) {
    await writeFile(path.join(mug, "img", `${image}.png`), onePixelPng);
  }
  await writeFile(path.join(cat, "history.yaml"), catHistory);
  await writeFile(path.join(cat, "easy_question.yaml"), options.catEasy ?? catEasy);
  for (const image of ["turn_1_smokey", "sq_1_name"])
    await writeFile(path.join(cat, "img", `${image}.png`), onePixelPng);
  // Not a concept: no history.yaml.
  await mkdir(path.join(root, "concept_obj", "notes"), { recursive: true });
}
