import sharp from "sharp";
import { monthNames } from "../../src/core/time.ts";
import type { SessionInput, TurnInput } from "../../src/ingest/session-input.ts";
import { Random } from "./random.ts";

/**
 * A synthetic but realistic conversational corpus: people talk about trips, pets, meals, purchases
 * and plans, with dates, places and objects that recur across sessions, so BM25 sees common words
 * and embeddings see real lexical neighbourhoods (never lorem ipsum, whose uniform vocabulary makes
 * every query look alike).
 */

const people = [
  "Ana",
  "Bruno",
  "Chloe",
  "Dmitri",
  "Elena",
  "Farid",
  "Grace",
  "Hiro",
  "Ines",
  "Jonas",
  "Kemal",
  "Lucia",
  "Mateo",
  "Nadia",
  "Oscar",
  "Priya",
  "Quentin",
  "Rosa",
  "Samir",
  "Tessa",
  "Umar",
  "Vera",
  "Wen",
  "Yusuf",
  "Zoe",
  "Aiko",
  "Bilal",
  "Carmen",
  "Diego",
  "Esther",
  "Felix",
  "Greta",
  "Hamid",
  "Ingrid",
  "Jamal",
  "Kira",
];
const places = [
  "Lisbon",
  "Porto",
  "Kyoto",
  "Oslo",
  "the lake house",
  "the farmers market",
  "Central Park",
  "the library",
  "Barcelona",
  "the gym",
  "Grandma's place",
  "the office",
  "the beach in Nazaré",
  "Edinburgh",
  "the museum",
  "the climbing wall",
  "the bakery on Elm Street",
  "Berlin",
  "the vet clinic",
  "the community garden",
  "Marrakesh",
  "the train station",
  "Vancouver",
  "the old harbour",
  "the ski resort",
  "the night market",
  "Reykjavik",
  "the concert hall",
  "the hardware store",
  "Mexico City",
  "the campsite",
  "the dentist",
];
const objects = [
  "bicycle",
  "camera",
  "backpack",
  "guitar",
  "laptop",
  "umbrella",
  "notebook",
  "kayak",
  "tent",
  "scarf",
  "coffee grinder",
  "telescope",
  "sourdough starter",
  "watch",
  "sketchbook",
  "drone",
  "skateboard",
  "lamp",
  "hiking boots",
  "teapot",
  "violin",
  "e-reader",
  "tripod",
  "yoga mat",
  "fountain pen",
  "headphones",
  "sewing machine",
  "chess set",
  "rain jacket",
  "bread knife",
  "microscope",
  "pottery wheel",
];
const colours = ["red", "blue", "green", "yellow", "black", "white", "orange", "purple", "silver", "brown"];
const adjectives = ["new", "old", "second-hand", "tiny", "heavy", "vintage", "cheap", "expensive", "broken", "shiny"];
const activities = [
  "hiking",
  "baking bread",
  "learning Portuguese",
  "running a half marathon",
  "painting watercolours",
  "fixing the bike",
  "planting tomatoes",
  "practising guitar",
  "reading science fiction",
  "swimming laps",
  "cooking ramen",
  "birdwatching",
  "writing a novel",
  "building a bookshelf",
  "studying for the exam",
  "training the puppy",
  "knitting a sweater",
  "playing chess",
  "rock climbing",
  "visiting museums",
  "doing yoga",
  "brewing kombucha",
  "photographing sunsets",
  "restoring furniture",
  "volunteering at the shelter",
];
const pets = [
  "a corgi named Biscuit",
  "a grey cat called Miso",
  "two goldfish",
  "a parrot named Kiwi",
  "a rescue greyhound",
];
const foods = [
  "paella",
  "dumplings",
  "lentil soup",
  "tacos",
  "sushi",
  "banana bread",
  "pho",
  "lasagna",
  "falafel",
  "curry",
];
const weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const months = monthNames;
const feelings = ["excited", "exhausted", "nervous", "proud", "relieved", "frustrated", "happy", "surprised"];
const reactions = [
  "That sounds lovely.",
  "Oh nice!",
  "Wow, really?",
  "Ha, classic.",
  "No way.",
  "Good for you.",
  "Hmm.",
];
const relatives = ["sister", "brother", "mum", "dad", "cousin", "grandmother", "nephew", "aunt"];
/** Second sentences some turns carry, so that turns sharing a template still read differently. */
const asides: readonly ((s: Slots) => string)[] = [
  (s) => `Anyway, ${s.other} says hi.`,
  (s) => `It was ${s.number} degrees outside.`,
  (s) => `My ${s.relative} thinks I'm crazy.`,
  (s) => `We should do it again before ${s.month}.`,
  (s) => `I still have the receipt from ${s.place}.`,
  (s) => `Next time I'm bringing the ${s.colour} ${s.object}.`,
  (s) => `Honestly I felt ${s.feeling} the whole ${s.day}.`,
  (s) => `Remind me to tell you about the ${s.food}.`,
];

type Slots = {
  person: string;
  other: string;
  place: string;
  object: string;
  colour: string;
  adjective: string;
  activity: string;
  pet: string;
  food: string;
  day: string;
  month: string;
  feeling: string;
  reaction: string;
  relative: string;
  number: number;
};

const turnTemplates: readonly ((s: Slots) => string)[] = [
  (s) => `I finally went ${s.activity} at ${s.place} last ${s.day}, and honestly I felt ${s.feeling}.`,
  (s) => `${s.other} lent me a ${s.colour} ${s.object} for the weekend; I have to give it back by ${s.day}.`,
  (s) => `We are planning a trip to ${s.place} in ${s.month}, probably for ${s.number} days.`,
  (s) => `Did you know ${s.other} has ${s.pet}? We walked together near ${s.place}.`,
  (s) => `I bought a ${s.adjective} ${s.object} for ${s.number * 7} euros at ${s.place}.`,
  (s) => `My ${s.object} broke again, so I spent ${s.day} evening fixing it instead of ${s.activity}.`,
  (s) => `For dinner ${s.other} made ${s.food} and we talked about ${s.activity} until midnight.`,
  (s) => `I have been ${s.activity} every ${s.day} since ${s.month}; it is getting easier.`,
  (s) => `Remind me to call ${s.other} about the ${s.colour} ${s.object} before ${s.month}.`,
  (s) => `The best ${s.food} I ever had was at a small place near ${s.place}.`,
  (s) => `${s.other} and I met at ${s.place} on ${s.day} and took photos of the ${s.object}.`,
  (s) => `I'm ${s.feeling} because my ${s.adjective} ${s.object} finally arrived after ${s.number} weeks.`,
  (s) => `Next ${s.month} I want to try ${s.activity} with ${s.other}, maybe at ${s.place}.`,
  (s) => `${s.reaction} How long have you been ${s.activity}?`,
  (s) => `Did ${s.other} ever find the ${s.object} they lost at ${s.place}?`,
  (s) => `It rained all ${s.day}, so we stayed in, cooked ${s.food} and played chess.`,
  (s) => `My sister's birthday is on the ${s.number} of ${s.month}; I'm getting her a ${s.object}.`,
  (s) => `I moved the ${s.colour} ${s.object} to ${s.place} because there was no space at home.`,
  (s) => `We adopted ${s.pet} in ${s.month} and it has been chaos ever since.`,
  (s) => `The ${s.object} from ${s.place} cost more than I expected, about ${s.number * 12} dollars.`,
  (s) => `You mentioned ${s.activity} before; did you keep it up after ${s.month}?`,
  (s) => `${s.reaction} I signed up for a class at ${s.place} every ${s.day} at ${s.number} pm.`,
  (s) => `I left my ${s.object} in ${s.other}'s car after we drove back from ${s.place}.`,
  (s) => `Honestly ${s.food} and a long walk around ${s.place} fixed my whole week.`,
];

const queryTemplates: readonly ((s: Slots) => string)[] = [
  (s) => `when did I go ${s.activity} at ${s.place}`,
  (s) => `what did ${s.other} lend me`,
  (s) => `${s.colour} ${s.object}`,
  (s) => `trip to ${s.place} in ${s.month}`,
  (s) => `who has ${s.pet}`,
  (s) => `how much did the ${s.object} cost`,
  (s) => `what did ${s.other} cook for dinner`,
  (s) => `where did I leave my ${s.object}`,
  (s) => `best ${s.food} near ${s.place}`,
  (s) => `${s.activity} class on ${s.day}`,
  (s) => `birthday present for my ${s.relative}`,
  (s) => `the ${s.object} that broke`,
  (s) => `photos with ${s.other} at ${s.place}`,
  (s) => `what am I learning since ${s.month}`,
  (s) => `did I adopt ${s.pet}`,
  (s) => `plans with ${s.other} next ${s.month}`,
];

function slots(random: Random, theme: Partial<Slots>): Slots {
  // Themed slots recur within a session (0.6) so neighbouring turns share words, as real talk does.
  const themed = <K extends keyof Slots>(key: K, draw: () => Slots[K]): Slots[K] =>
    theme[key] !== undefined && random.chance(0.6) ? (theme[key] as Slots[K]) : draw();
  return {
    person: themed("person", () => random.pick(people)),
    other: themed("other", () => random.pick(people)),
    place: themed("place", () => random.pick(places)),
    object: themed("object", () => random.pick(objects)),
    colour: random.pick(colours),
    adjective: random.pick(adjectives),
    activity: themed("activity", () => random.pick(activities)),
    pet: random.pick(pets),
    food: random.pick(foods),
    day: random.pick(weekdays),
    month: random.pick(months),
    feeling: random.pick(feelings),
    reaction: random.pick(reactions),
    relative: random.pick(relatives),
    number: random.int(2, 30),
  };
}

export interface CorpusOptions {
  /** Raw nodes (turns) in total; the last session is cut to fit. */
  readonly rawNodes: number;
  readonly seed?: number;
  readonly turnsPerSession?: number;
  /** Share of turns carrying one small image. */
  readonly imageShare?: number;
  /** Distinct images in the pool; turns reuse them, as people re-share photos. */
  readonly imagePool?: number;
}

export const defaultImagePool = 48;

export interface CorpusImage {
  readonly data: Uint8Array;
  readonly caption: string;
}

/** Small real PNGs (coloured shapes), made once per run. */
export async function makeImagePool(count: number, seed = 7): Promise<CorpusImage[]> {
  const random = new Random(seed);
  const images: CorpusImage[] = [];
  for (let index = 0; index < count; index++) {
    const colour = random.pick(colours);
    const object = random.pick(objects);
    const x = random.int(8, 40);
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="#${(index * 2654435761).toString(16).slice(-6).padStart(6, "0")}"/><circle cx="${x}" cy="32" r="${random.int(6, 20)}" fill="${colour}"/></svg>`;
    const data = new Uint8Array(await sharp(Buffer.from(svg)).png().toBuffer());
    images.push({ data, caption: `photo of the ${colour} ${object} at ${random.pick(places)}` });
  }
  return images;
}

/**
 * Sessions of ~`turnsPerSession` turns between a user and a friend, a few hours apart from
 * 2023-01-01 on. Lazily generated so a 1M-node corpus never sits in memory at once.
 */
export function* generateSessions(options: CorpusOptions, images: readonly CorpusImage[]): Generator<SessionInput> {
  const random = new Random(options.seed ?? 42);
  const turnsPerSession = options.turnsPerSession ?? 20;
  const imageShare = options.imageShare ?? 0.05;
  const imagePool = options.imagePool ?? defaultImagePool;
  let remaining = options.rawNodes;
  let timeMs = Date.parse("2023-01-01T09:00:00Z");
  for (let index = 0; remaining > 0; index++) {
    const turnCount = Math.min(remaining, random.int(turnsPerSession - 4, turnsPerSession + 4));
    remaining -= turnCount;
    timeMs += random.int(2, 30) * 3_600_000;
    const user = random.pick(people);
    const friend = random.pick(people.filter((person) => person !== user));
    const theme = slots(random, {});
    const turns: TurnInput[] = [];
    for (let turn = 0; turn < turnCount; turn++) {
      const speaker = turn % 2 === 0 ? user : friend;
      const turnSlots = { ...slots(random, theme), other: turn % 2 === 0 ? friend : user };
      const main = random.pick(turnTemplates)(turnSlots);
      const text = random.chance(0.4) ? `${main} ${random.pick(asides)(slots(random, theme))}` : main;
      // Drawn the same way with or without a pool, so corpusTexts() sees the very same texts.
      const image = random.chance(imageShare) ? images[random.int(0, imagePool - 1)] : undefined;
      turns.push({
        speaker,
        role: turn % 2 === 0 ? "user" : "assistant",
        text,
        time: new Date(timeMs + turn * 45_000).toISOString(),
        ...(image ? { images: [{ data: image.data, caption: image.caption }] } : {}),
      });
    }
    yield { session: `s${index}`, time: new Date(timeMs).toISOString(), source: "bench", turns };
  }
}

/** Varied queries over the same vocabulary: questions, keyword fragments, names, common words. */
export function generateQueries(count: number, seed = 1234): string[] {
  const random = new Random(seed);
  return Array.from({ length: count }, () => random.pick(queryTemplates)(slots(random, {})));
}

/** Every turn's text, in ingest order: what the embedder's own batch throughput is measured on. */
export function corpusTexts(options: CorpusOptions): string[] {
  const texts: string[] = [];
  for (const session of generateSessions(options, [])) for (const turn of session.turns) texts.push(turn.text ?? "");
  return texts;
}
