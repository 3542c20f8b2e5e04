import { contentWords, extractEntities } from "../core/text.ts";
import type { RawNode } from "../store/records.ts";
import { words } from "./compilation-unit.ts";
import type { CompilationUnit, Modality, Opportunity, OpportunityKind } from "./opportunity.ts";

/** Words that mark a change of state (an update over time). */
const stateCue =
  /\b(now|no longer|anymore|any more|moved|switched|changed|started|stopped|new|instead|these days|finally|upgraded|replaced)\b/i;
/** Words that mark a correction of an earlier statement. */
const correctionCue =
  /\b(actually|correction|i was wrong|i meant|turns out|changed my mind|not anymore|rather than|mistake)\b/i;
/** Words that mark a preference. */
const preferenceCue =
  /\b(i (?:really |truly |absolutely )?(?:love|like|prefer|enjoy|adore|hate|dislike|can't stand)|my fav(?:ou)?rite|allergic)\b/i;

/** The cues' own words: they say what kind of opportunity a turn is, never what it is about. */
const cueWords = new Set(
  [stateCue, correctionCue, preferenceCue].flatMap((cue) =>
    contentWords(cue.source.replace(/\\b|\(\?:|[()|?\\]/g, " ")),
  ),
);

/** Words that say a picture exists ("[IMAGE]" markers, "photo"), not what it shows. */
const mediaWords = new Set(["image", "images", "photo", "photos", "picture", "pictures", "pic", "img"]);

/** Topic words an opportunity keeps. */
const topicWords = 5;

/**
 * The deterministic analyser: scans the anchor session's turns, against the rest of the unit, for
 * places a later question would need specific evidence (PMMC Ω_t): a visual attribute in an image,
 * a later naming of something shown earlier, a state update, a correction, a preference. At most
 * `limit` opportunities, taken round-robin over the kinds so one kind cannot crowd out the others.
 */
export function findOpportunities(unit: CompilationUnit, limit: number): Opportunity[] {
  const byKind = new Map<OpportunityKind, Opportunity[]>();
  const add = (opportunity: Opportunity) =>
    byKind.set(opportunity.kind, [...(byKind.get(opportunity.kind) ?? []), opportunity]);
  const anchorTurns = unit.nodes.filter((node) => node.sessionId === unit.anchor.id);
  const frequency = documentFrequency(unit.nodes);
  for (const node of anchorTurns) {
    const earlier = unit.nodes.filter((other) => other.id !== node.id && before(other, node));
    const entities = extractEntities(node.text).filter((entity) => unit.entities.has(entity));
    if (node.images.length > 0 && imageWords(node).length > 0) {
      add(opportunity(frequency, "visual-attribute", [node], ["image"], entities, node));
    }
    const shown = mostRelated(
      node,
      earlier.filter((other) => other.images.length > 0 && other.sessionId !== node.sessionId),
    );
    if (entities.length > 0 && shown && node.images.length === 0) {
      add(opportunity(frequency, "later-naming", [shown, node], ["text", "image"], entities.slice(0, 1), node, shown));
    }
    const previous = mostRelated(node, earlier, 2);
    if (previous && correctionCue.test(node.text)) {
      add(
        opportunity(
          frequency,
          "conflict",
          [previous, node],
          modalitiesOf([previous, node]),
          entities.slice(0, 1),
          node,
          previous,
        ),
      );
    } else if (previous && stateCue.test(node.text)) {
      add(
        opportunity(
          frequency,
          "state-update",
          [previous, node],
          modalitiesOf([previous, node]),
          entities.slice(0, 1),
          node,
          previous,
        ),
      );
    }
    if (preferenceCue.test(node.text))
      add(opportunity(frequency, "preference", [node], ["text"], entities.slice(0, 1), node));
  }
  const out: Opportunity[] = [];
  const queues = [...byKind.values()];
  for (let round = 0; out.length < limit && queues.some((queue) => queue.length > round); round++) {
    for (const queue of queues) {
      const next = queue[round];
      if (next && out.length < limit) out.push(next);
    }
  }
  return out;
}

function before(a: RawNode, b: RawNode): boolean {
  const [ta, tb] = [Date.parse(a.time), Date.parse(b.time)];
  return ta < tb || (ta === tb && a.sessionId === b.sessionId && a.turn < b.turn);
}

/** The earlier raw node sharing the most content words (and entities) with `node`, if it shares at least `minShared`. */
function mostRelated(node: RawNode, candidates: readonly RawNode[], minShared = 1): RawNode | undefined {
  const mine = new Set(words(node));
  const entities = new Set(extractEntities(node.text));
  let best: { node: RawNode; shared: number } | undefined;
  for (const candidate of candidates) {
    const shared =
      new Set(words(candidate).filter((word) => mine.has(word))).size +
      2 * extractEntities(candidate.text).filter((entity) => entities.has(entity)).length;
    if (shared >= minShared && (!best || shared >= best.shared)) best = { node: candidate, shared };
  }
  return best?.node;
}

function imageWords(node: RawNode): string[] {
  return [
    ...new Set(contentWords(node.images.map((image) => `${image.caption ?? ""} ${image.derivedText ?? ""}`).join(" "))),
  ];
}

function modalitiesOf(nodes: readonly RawNode[]): Modality[] {
  return nodes.some((node) => node.images.length > 0) ? ["text", "image"] : ["text"];
}

/** In how many of the unit's raw nodes each word occurs: rare words say which turn a question is about. */
function documentFrequency(nodes: readonly RawNode[]): Frequency {
  const counts = new Map<string, number>();
  for (const node of nodes) for (const word of new Set(words(node))) counts.set(word, (counts.get(word) ?? 0) + 1);
  return { counts, nodes: nodes.length };
}

interface Frequency {
  readonly counts: ReadonlyMap<string, number>;
  readonly nodes: number;
}

function opportunity(
  frequency: Frequency,
  kind: OpportunityKind,
  evidence: readonly RawNode[],
  modalities: readonly Modality[],
  entities: readonly string[],
  anchor: RawNode,
  related?: RawNode,
): Opportunity {
  const relatedWords = new Set(related ? words(related) : []);
  const entityWords = new Set(entities.flatMap((entity) => contentWords(entity)));
  const common = Math.max(2, Math.ceil(frequency.nodes / 3));
  // What a later question would name: the turn's entities first, then the words it shares with the
  // related turn (what links the two), then words the unit repeats but does not say everywhere. A word
  // said once in the unit (often an adverb or a one-off adjective: "actually", "tempted") comes last,
  // and the analyser's own cue words ("now", "actually", "love") never name a topic.
  const salience = (word: string) => {
    const df = frequency.counts.get(word) ?? 0;
    return (
      (entityWords.has(word) ? 4 : 0) +
      (relatedWords.has(word) ? 2 : 0) +
      (df >= 2 && df <= common ? 1 : 0) -
      (df > common ? 1 : 0)
    );
  };
  const topic = [...new Set(contentWords(anchor.text))]
    .filter((word) => !cueWords.has(word) && !mediaWords.has(word))
    .sort((a, b) => salience(b) - salience(a) || b.length - a.length);
  const byRarity = (list: readonly string[]) =>
    [...list].sort((a, b) => (frequency.counts.get(a) ?? 0) - (frequency.counts.get(b) ?? 0));
  return {
    kind,
    evidence: evidence.map((node) => node.id),
    sessions: [...new Set(evidence.map((node) => node.sessionKey))],
    modalities,
    entities,
    topic: topic.slice(0, topicWords),
    imageWords: byRarity([...new Set(evidence.flatMap(imageWords))]).slice(0, topicWords),
    speaker: anchor.speaker,
  };
}
