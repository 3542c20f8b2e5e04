import type { Opportunity } from "./opportunity.ts";
import { programLimits } from "./program.ts";
import type { CompileRoles, PlanRequest } from "./roles.ts";

/** Raw nodes a first search step asks for; repairs widen it. */
const firstLimit = 12;

/**
 * The model-free Questioner and Planner. Questions are templates per opportunity kind, worded
 * from the evidence's own words (so a user asking about it later shares them); programs are one
 * rule per kind, and a repair answers the Doubter's diagnosis with a wider or extra branch.
 */
export const ruleRoles: CompileRoles = Object.freeze({
  id: "rules",
  async ask(opportunity: Opportunity): Promise<string[]> {
    return templateQuestions(opportunity);
  },
  async plan(request: PlanRequest): Promise<unknown> {
    return rulePlan(request);
  },
});

/** One generic program for every question (the `pmmc-fixed-pipeline` ablation); no repair changes it. */
export const fixedPipelineRoles: CompileRoles = Object.freeze({
  id: "fixed-pipeline",
  ask: ruleRoles.ask,
  async plan(request: PlanRequest): Promise<unknown> {
    const query = request.question;
    return {
      version: 1,
      output: "pixels",
      steps: [
        { id: "words", op: "lexical", query, limit: firstLimit },
        { id: "meaning", op: "dense", query, limit: firstLimit },
        { id: "images", op: "image-match", text: query, limit: firstLimit },
        { id: "fused", op: "union", inputs: ["words", "meaning", "images"] },
        { id: "around", op: "expand", input: "fused", window: 1 },
        { id: "best", op: "top-k", input: "around", k: 2 * firstLimit },
        { id: "pixels", op: "materialise", input: "best" },
      ],
    };
  },
});

/**
 * Questions per opportunity, worded from the evidence's own words, in the forms users ask (what /
 * which / when / who / did / show me), most specific first: the entity and the turn's topic words,
 * the image text's words for what was shown, the speaker's name. The compile settings keep the first
 * `questionsPerOpportunity`; each is planned and verified on its own, and all rest on the same evidence.
 */
export function templateQuestions(opportunity: Opportunity): string[] {
  const who = opportunity.speaker ?? "the user";
  const entity = opportunity.entities[0]?.replace(/^the\s+/, "");
  const entityWords = new Set(entity?.split(/\s+/));
  const topic =
    opportunity.topic
      .filter((word) => !entityWords.has(word))
      .slice(0, 2)
      .join(" ") ||
    entity ||
    "it";
  const subject = entity ? `${entity} ${topic === entity ? "" : topic}`.trim() : topic;
  const seen = opportunity.imageWords.slice(0, 2).join(" ") || topic;
  switch (opportunity.kind) {
    case "visual-attribute":
      return [
        `What does the ${seen} in the photo of the ${topic} look like?`,
        `What did ${who} show in the picture of the ${subject}?`,
        `Which ${seen} was in the image ${who} shared?`,
        `Show me the photo of the ${subject}.`,
        `When did ${who} share the picture of the ${seen}?`,
      ];
    case "later-naming":
      return [
        `What is ${entity}?`,
        `What did ${who} name the ${seen}?`,
        `Which ${seen} is called ${entity} (${topic})?`,
        `Why did ${who} call it ${entity}?`,
        `Show me ${entity}.`,
      ];
    case "state-update":
      return [
        `What is the ${subject} now?`,
        `How did the ${subject} change over time?`,
        `What was the ${subject} before?`,
        `When did ${who} change the ${topic}?`,
        `Did the ${subject} change?`,
      ];
    case "conflict":
      return [
        `What did ${who} correct about the ${subject}?`,
        `Which is right about the ${subject}?`,
        `Did ${who} change their mind about the ${topic}?`,
        `What did ${who} first say about the ${topic}?`,
      ];
    case "preference":
      return [
        `What does ${who} like about ${subject}?`,
        `What is ${who}'s favourite ${topic}?`,
        `Does ${who} enjoy ${subject}?`,
        `Which ${topic} does ${who} prefer?`,
      ];
  }
}

/** The rule per opportunity kind, then the repair for the Doubter's diagnosis. */
function rulePlan(request: PlanRequest): unknown {
  const { opportunity, attempt } = request;
  const limit = Math.min(programLimits.maxFanOut, firstLimit * (attempt + 1));
  const topic = opportunity.topic.join(" ") || request.question;
  const entity = opportunity.entities[0];
  const seen = opportunity.imageWords.join(" ") || topic;
  const steps: Record<string, unknown>[] = [];
  const branches: string[] = [];
  const branch = (...added: Record<string, unknown>[]) => {
    steps.push(...added);
    branches.push(String(added.at(-1)?.id));
  };
  const diagnosis = request.previous?.diagnosis.problem;
  const wantsImage = opportunity.modalities.includes("image") || diagnosis === "missing-modality";
  // A repair after missing evidence looks where the evidence was first: the same search narrowed
  // to the sessions the opportunity came from (the filter operator), ahead of the open searches.
  if (attempt > 0 && (diagnosis === "missing-evidence" || diagnosis === "missing-entity")) {
    branch(
      { id: "nearby", op: "lexical", query: `${topic} ${seen}`, limit: programLimits.maxFanOut },
      { id: "there", op: "filter", input: "nearby", sessions: [...opportunity.sessions] },
    );
  }
  switch (opportunity.kind) {
    case "visual-attribute":
      branch({ id: "seen", op: "image-match", text: seen, limit });
      branch({ id: "said", op: "lexical", query: topic, limit });
      break;
    case "later-naming":
      branch({ id: "named", op: "lexical", query: entity ? `${entity} ${topic}` : topic, limit });
      branch({ id: "shown", op: "image-match", text: `${seen} ${topic}`, limit });
      break;
    case "state-update":
    case "conflict":
      branch({ id: "said", op: "lexical", query: entity ? `${entity} ${topic}` : topic, limit });
      branch({ id: "meant", op: "dense", query: topic, limit });
      break;
    case "preference":
      branch({ id: "said", op: "lexical", query: topic, limit });
      break;
  }
  if (attempt > 0 && !branches.includes("meant")) branch({ id: "meant", op: "dense", query: request.question, limit });
  if (wantsImage && !branches.includes("seen") && !branches.includes("shown"))
    branch({ id: "seen", op: "image-match", text: seen, limit });
  let last = branches[0] ?? "said";
  if (branches.length > 1) {
    steps.push({ id: "fused", op: "union", inputs: branches });
    last = "fused";
  }
  if (opportunity.kind === "state-update" || opportunity.kind === "conflict") {
    // The best few hits, then the states before and after them through the index's update links.
    steps.push({ id: "found", op: "top-k", input: last, k: 6 });
    steps.push({ id: "states", op: "temporal-walk", input: "found", direction: "both", depth: 2 });
    steps.push({ id: "timeline", op: "union", inputs: ["states", last] });
    last = "timeline";
  }
  if (opportunity.kind === "preference" && opportunity.speaker && attempt === 0) {
    steps.push({ id: "theirs", op: "filter", input: last, speakers: [opportunity.speaker] });
    last = "theirs";
  }
  if (attempt > 1 && (diagnosis === "missing-evidence" || diagnosis === "empty")) {
    steps.push({ id: "around", op: "expand", input: last, window: 1 });
    last = "around";
  }
  steps.push({ id: "best", op: "top-k", input: last, k: Math.min(programLimits.maxFanOut, 2 * firstLimit) });
  last = "best";
  if (wantsImage) {
    steps.push({ id: "pixels", op: "materialise", input: last });
    last = "pixels";
  }
  return { version: 1, steps, output: last };
}
